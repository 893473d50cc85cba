"""The fast lane's list of slow test files names files that exist, so a move cannot quietly put
a slow file back into the fast lane, or leave a stale name behind."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SLOW_FILES

ROOT = Path(__file__).resolve().parent.parent


def test_every_slow_file_exists() -> None:
    missing = sorted(f for f in SLOW_FILES if not (ROOT / f).is_file())
    assert not missing, f"SLOW_FILES names files that are gone: {missing}"


def test_the_fast_lane_keeps_most_test_files() -> None:
    files = list((ROOT / "tests").rglob("test_*.py"))
    assert 0 < len(SLOW_FILES) < len(files) / 2
