"""Fixtures shared by the rule-loading tests."""

from __future__ import annotations

import pytest

from guard.ruleset import load as loader


@pytest.fixture
def isolated_rules(tmp_path, monkeypatch):
    """A private rule cache and no rule-related environment: each test compiles what it writes."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("GUARD_RULES", "GUARD_CONFIG", "GUARD_TREE", "GUARD_ROLE", "GUARD_ROUTE"):
        monkeypatch.delenv(name, raising=False)
    loader._said.clear()
    monkeypatch.setattr(loader, "_memo", {})
    monkeypatch.setattr(loader, "_warned", False)
    monkeypatch.setattr(loader, "_loaded", {})
    monkeypatch.setattr(loader, "_stamped", {})
    monkeypatch.setattr(loader, "_reused", set())
