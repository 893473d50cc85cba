"""The credential-store hint test, the cheap gate in front of every operand's path checks."""

from __future__ import annotations

import pytest

from guard.policy.facts import CRED_HINTS, _cred_hint


@pytest.mark.parametrize("size", [0, 1, 200, 254, 255, 256, 257, 4000])
def test_the_hint_test_finds_every_hint_at_every_length(size: int) -> None:
    """The spelled-out test agrees with CRED_HINTS, hint by hint, wherever the hint stands."""
    filler = "x" * size
    assert not _cred_hint(filler)
    for hint in CRED_HINTS:
        for text in (hint + filler, filler + hint, filler[: size // 2] + hint + filler[size // 2 :]):
            assert _cred_hint(text), (hint, len(text))
    for text in ("-la", "src/main.py", "status", "--oneline", "/workspace/app"):
        assert not _cred_hint(text + filler) and not _cred_hint(filler + text)
