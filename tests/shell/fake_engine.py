"""A test double for ``guard.engine.analyze`` (tests only; the product never loads it).

Refuses ``git push`` (after alias expansion, or inside a function whose body pushes), any ``git``
run inside a tree, and the word ``FAKE_REFUSE``; raises on ``FAKE_RAISE``. Every call is logged
as one JSON line to ``$FAKE_ENGINE_LOG`` so tests can see the context the shell passed.
"""

from __future__ import annotations

import json
import os
import re

from guard.ir import Verdict


def _in_tree(cwd: str, trees: tuple[str, ...]) -> bool:
    return any(cwd == t or cwd.startswith(t.rstrip("/") + "/") for t in trees)


def fake_analyze(command: str, ctx) -> Verdict:  # noqa: ANN001
    log = os.environ.get("FAKE_ENGINE_LOG")
    if log:
        with open(log, "a") as fh:
            entry = {
                "command": command,
                "cwd": ctx.cwd,
                "aliases": dict(ctx.aliases),
                "functions": sorted(ctx.functions),
                "env_FOO": ctx.env.get("FOO"),
                "trees": list(ctx.trees),
            }
            fh.write(json.dumps(entry) + "\n")
    if "FAKE_RAISE" in command:
        raise RuntimeError("fake engine failure")
    for segment in re.split(r"[;&|\n()`]+", command):
        words = segment.split()
        seen: set[str] = set()
        while words and words[0] in ctx.aliases and words[0] not in seen:
            seen.add(words[0])
            words = ctx.aliases[words[0]].split() + words[1:]
        if not words:
            continue
        refuse = (
            words[:2] == ["git", "push"]
            or (words[0] == "git" and _in_tree(ctx.cwd, ctx.trees))
            or "FAKE_REFUSE" in words
            or (words[0] in ctx.functions and "git push" in ctx.functions[words[0]])
        )
        if refuse:
            return Verdict("refuse", category="publish", message=f"guard-fake: refused {' '.join(words)}")
    return Verdict("allow")


def install() -> None:
    import guard.engine

    guard.engine.analyze = fake_analyze  # type: ignore[assignment]
