"""The client suite's runs start side by side: every selected case's conversation (and each
baseline without guard) is submitted to a small pool when the first test needs one, and each
test then waits for its own. GUARD_CLIENTS_JOBS sets the pool's size (default 2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SELECTED: list[tuple[str, str, str]] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    SELECTED.clear()
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is not None and item.module.__name__.endswith("test_conformance") and "case" in spec.params:
            SELECTED.append((spec.params["name"], spec.params["placement"], spec.params["case"]))


def jobs() -> int:
    try:
        return max(1, int(os.environ.get("GUARD_CLIENTS_JOBS", "2")))
    except ValueError:
        return 2


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every run: the clients unpack themselves and fetch their provider packages
    there once, not once per run."""
    return tmp_path_factory.mktemp("client-cache")
