"""Shared test helpers: where the repository and the shared data live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GUARD_SHARED") or REPO.parent / "shared")
BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "corpus").is_dir():
        pytest.skip("shared corpus not available beside the checkout")
    return SHARED


def guard_bin(name: str = "guard") -> str:
    cand = BIN / name
    return str(cand) if cand.exists() else name
