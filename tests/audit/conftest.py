"""Fixtures for the audit tests."""

from __future__ import annotations

import pytest

from guard.audit import log


@pytest.fixture
def fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process warning afresh."""
    monkeypatch.setattr(log, "_warned", False)
