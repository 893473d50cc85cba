"""Fixtures for the audit tests."""

from __future__ import annotations

import pytest

from guard.audit import log
from guard.audit.reports import report


@pytest.fixture
def fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process warning afresh."""
    monkeypatch.setattr(log, "_warned", False)


@pytest.fixture(autouse=True)
def no_shipped_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports in these tests do not depend on the rule set shipped today; the lazy lookup in
    guard.policy is tested on its own."""
    monkeypatch.setattr(report, "policy_rule_ids", lambda: None)
