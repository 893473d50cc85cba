"""Helpers for the parse-stage tests: walk the IR and find shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guard.ir import (
    AndOr,
    CmdSub,
    FunctionDef,
    Group,
    Param,
    Pipeline,
    ProcSub,
    Script,
    Sequence,
    Simple,
    Subshell,
    Word,
)


def shared_dir() -> Path | None:
    env = os.environ.get("GUARD_SHARED")
    path = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared"
    return path if path.is_dir() else None


@pytest.fixture
def shared() -> Path:
    path = shared_dir()
    if path is None:
        pytest.skip("shared data not available (set GUARD_SHARED)")
    return path


def word_scripts(word: Word):
    for p in word.parts:
        if isinstance(p, CmdSub | ProcSub):
            yield p.script
        elif isinstance(p, Param) and p.arg is not None:
            yield from word_scripts(p.arg)


def node_words(node):
    if isinstance(node, Simple):
        yield from node.words
        for a in node.assigns:
            if a.value is not None:
                yield a.value
            yield from a.array or ()
        for r in node.redirects:
            if r.target is not None:
                yield r.target
            if r.body is not None:
                yield r.body
    elif isinstance(node, Group):
        yield from node.words


def simples(node) -> list[Simple]:
    """Every Simple command in ``node``, including those inside substitutions, in source order."""
    out: list[Simple] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        if isinstance(n, Script):
            stack.append(n.body)
            continue
        kids: list = []
        if isinstance(n, Simple):
            out.append(n)
        elif isinstance(n, Pipeline):
            kids = list(n.commands)
        elif isinstance(n, AndOr | Sequence):
            kids = list(n.items)
        elif isinstance(n, Subshell | FunctionDef):
            kids = [n.body]
        elif isinstance(n, Group):
            kids = list(n.body)
        for w in node_words(n):
            kids.extend(word_scripts(w))
        stack.extend(reversed(kids))
    return out


def argvs(script: Script) -> list[list[str | None]]:
    """The literal words of every Simple (None for a non-literal word)."""
    return [[w.literal for w in s.words] for s in simples(script)]
