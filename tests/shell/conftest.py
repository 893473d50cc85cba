from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import shellkit  # noqa: E402


@pytest.fixture(scope="session")
def fake_shell(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Path of a guard-shell wired to the test double engine."""
    return shellkit.write_fake_guard_shell(tmp_path_factory.mktemp("fakebin"))


@pytest.fixture(scope="session")
def checked_shell(fake_shell: str) -> str:
    """The real guard-shell once the engine works, the test-double one until then."""
    return shellkit.real_guard_shell() if shellkit.engine_ready() else fake_shell


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    """A scratch dir (where commands run), a separate tree root and a HOME, all empty."""
    dirs = {name: tmp_path / name for name in ("scratch", "tree", "home")}
    for d in dirs.values():
        d.mkdir()
    return dirs
