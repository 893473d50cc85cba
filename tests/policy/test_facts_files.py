"""Repositories landing in the tree by copy or link (docs/behaviour.md §9.9), judged on a real file system."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze


@pytest.fixture
def world(tmp_path: Path):
    tree = tmp_path / "tree"
    (tree / "app").mkdir(parents=True)
    (tmp_path / "x" / ".git").mkdir(parents=True)
    (tmp_path / "y" / "sub" / ".git").mkdir(parents=True)
    (tmp_path / "plain" / "src").mkdir(parents=True)
    ctx = Context.from_environ(cwd=str(tree / "app"), trees=(str(tree),), env={"HOME": "/root"})
    return tmp_path, ctx


@pytest.mark.parametrize(
    "cmd,verdict",
    [
        ("cp -r {t}/x .", "refuse"),
        ("cp -r {t}/y .", "refuse"),  # the .git is one level down
        ("cp -t . -r {t}/x", "refuse"),
        ("cp --target-directory=. -r {t}/x", "refuse"),
        ("mv {t}/x vendor/x", "refuse"),
        ("ln -s {t}/x/.git", "refuse"),  # links ./.git
        ("ln -s {t}/x x-link", "allow"),  # a link to a repository is not a copy of it
        ("ln -sfn {t}/y vendor", "allow"),
        ("ln -s {t}/x/.git .git", "refuse"),  # a link named .git
        ("rm -rf {t}/x/.git && cp -r {t}/x .", "allow"),  # §9.9: .git removed first
        ("rsync -a --exclude .git {t}/x/ vendor/x/", "allow"),
        ("cp -r {t}/plain .", "allow"),
        ("cp -r {t}/x {t}/elsewhere", "allow"),  # not into the tree
    ],
)
def test_copies_and_links(world, cmd: str, verdict: str) -> None:
    tmp, ctx = world
    v = analyze(cmd.format(t=tmp), ctx)
    assert v.verdict == verdict, (cmd, v.rule, v.message)
    if verdict == "refuse":
        assert v.category == "create"
