"""``paths.normalise`` answers a path that is already normal as it is, and folds the rest."""

from __future__ import annotations

import itertools

from guard.ir import UNKNOWN
from guard.resolve import paths


def test_every_short_path_normalises_as_the_component_fold_does() -> None:
    pieces = ["", "/", "a", ".", "..", ".git", "b.", "..x", UNKNOWN, "~"]
    seen = 0
    for n in range(1, 6):
        for combo in itertools.product(pieces, repeat=n):
            path = "".join(combo)
            assert paths.normalise(path) == paths.fold(path), repr(path)
            seen += 1
    assert seen > 10_000
    assert paths.normalise("/workspace/app/src") == "/workspace/app/src"
    assert paths.normalise("/workspace/./app//src/../x/") == "/workspace/app/x"
