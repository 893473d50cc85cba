"""Append-only refused-command log (SPEC §8). Placeholder signatures; the audit work fills them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def append_record(record: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Append one audit record (already built) to the log named by ``env``. Never raises."""
    return None
