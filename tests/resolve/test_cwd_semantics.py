"""Where a program runs, as guard resolves it, checked against where real bash runs it.

Each command runs under real bash in a scratch "tree" with a stand-in ``git`` first on PATH
that logs the folder it was started in; guard's resolved cwd for that git must be the same.
These are the ways a cwd was mis-followed: ``$PWD`` taken from the caller instead of the
command's folder, and ``builtin cd`` / ``command cd`` (how a function named cd reaches the
real one) not changing the folder.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze

CASES = [
    'git -C "$PWD" status',
    'cd() { builtin cd /tmp; }; cd "$HOME"; git status',
    "cd() { echo not moving; }; cd /tmp; git status",
    "command cd /tmp; git status",
    "builtin cd /tmp && git status",
    'cd /tmp; git -C "$OLDPWD" log',
]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    work = tmp_path / "ws" / "app"
    work.mkdir(parents=True)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "git.log"
    stand_in = bin_ / "git"
    # logs where it runs (after -C) and nothing else
    stand_in.write_text('#!/bin/sh\nif [ "$1" = -C ]; then cd "$2"; fi\npwd -P >> "$GIT_LOG"\n')
    stand_in.chmod(0o755)
    return work, bin_, log


@pytest.mark.parametrize("command", CASES)
def test_git_runs_where_bash_runs_it(command: str, tree: tuple[Path, Path, Path]) -> None:
    work, bin_, log = tree
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(work.parent), "GIT_LOG": str(log), "PWD": "/"}
    subprocess.run(["bash", "-c", command], cwd=work, env=env, check=False, capture_output=True, timeout=30)
    (ran_in,) = log.read_text().splitlines()
    ctx = Context(cwd=str(work), trees=(str(work.parent),), env={**env, "PWD": "/"})
    v = analyze(command, ctx)
    gits = [i for i in v.invocations if i.program == "git"]
    assert len(gits) == 1, v.invocations
    resolved = gits[0].cwd
    if "-C" in gits[0].argv:
        resolved = gits[0].argv[gits[0].argv.index("-C") + 1]
    assert os.path.realpath(resolved) == ran_in, (command, resolved, ran_in)
    assert (v.verdict == "refuse") == ran_in.startswith(str(work.parent.resolve())), command


# A cd whose folder is missing fails and leaves the shell where it was; one through a symlink
# made earlier in the command lands where the link points (git's cwd is the physical one). guard
# analyses before bash runs, so a link or folder the command makes is not yet on disk.
FAILING_AND_LINKED = [
    "cd /no/such/dir 2>/dev/null; git status",
    "cd missing/deeper 2>/dev/null; git status",
    "cd /no/such/dir 2>/dev/null || git status",
    "mkdir -p made/sub; cd made/sub; git status",
    "ln -s {outside} lnk && cd lnk && git status",
    "ln -sfn {outside} {scratch}/lnk; cd {scratch}/lnk/sub; git status",
    "ln -s {outside}/sub lnk && cd lnk && cd .. && git status",  # cd -L climbs back out of the link
    "ln -s {outside}/sub lnk && cd -P lnk && cd .. && git status",  # cd -P does not
    'ln -s {outside} lnk; cd lnk; git -C "$PWD/sub" status',
    "pushd /no/such/dir 2>/dev/null; git status",
    "ln -s {outside} lnk; pushd lnk >/dev/null && git status",
]


@pytest.mark.parametrize("template", FAILING_AND_LINKED)
def test_failed_and_linked_cd_as_bash_runs_it(
    template: str, tree: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    work, bin_, log = tree
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = template.format(outside=outside, scratch=scratch)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(work.parent), "GIT_LOG": str(log), "PWD": "/"}
    v = analyze(command, Context(cwd=str(work), trees=(str(work.parent),), env={**env, "PWD": "/"}))
    subprocess.run(["bash", "-c", command], cwd=work, env=env, check=False, capture_output=True, timeout=30)
    (ran_in,) = log.read_text().splitlines()
    gits = [i for i in v.invocations if i.program == "git"]
    assert len(gits) == 1, v.invocations
    resolved = gits[0].cwd
    if "-C" in gits[0].argv:
        resolved = gits[0].argv[gits[0].argv.index("-C") + 1]
    assert os.path.realpath(resolved) == ran_in, (command, resolved, ran_in)
    assert (v.verdict == "refuse") == ran_in.startswith(str(work.parent.resolve())), command


def test_git_dir_through_a_link_made_earlier(tree: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """``--git-dir=LINK/.git --work-tree=LINK`` with LINK made by ``ln -s`` in the same command
    names the folder the link points to, as the kernel follows it when git opens it."""
    work, _bin, _log = tree
    link = tmp_path / "scratch-link"
    command = f"ln -sfn {work} {link}; git --git-dir={link}/.git --work-tree={link} status"
    v = analyze(command, Context(cwd=str(tmp_path), trees=(str(work.parent),), env={"HOME": str(tmp_path)}))
    subprocess.run(["bash", "-c", command.split(";")[0]], check=True, timeout=30)
    (git,) = [i for i in v.invocations if i.program == "git"]
    work_tree = next(a.split("=", 1)[1] for a in git.argv if a.startswith("--work-tree="))
    assert work_tree == os.path.realpath(link)
    assert v.verdict == "refuse" and v.category == "read-probe"


@pytest.mark.parametrize(
    "command",
    [
        "cd /no/such/dir 2>/dev/null || exit 1; git status",
        "cd ../../elsewhere 2>/dev/null || { echo no; exit 1; }\ngit status",
        "set -euo pipefail\ncd /no/such/dir 2>/dev/null\ngit status",  # errexit: the failed cd ends it
        "if cd /no/such/dir 2>/dev/null; then git status; fi",  # a condition guards it, as && does
        "if ! cd /no/such/dir 2>/dev/null; then exit 1; fi; git status",
    ],
)
def test_a_failed_cd_that_exits_stops_what_follows(command: str, tree: tuple[Path, Path, Path]) -> None:
    """``cd DIR || exit`` (or ``set -e``): bash runs nothing after a failed cd, so the rest is
    read as running in DIR, as ``cd DIR && …`` is (every invocation counts, reachable or not)."""
    work, bin_, log = tree
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(work.parent), "GIT_LOG": str(log)}
    v = analyze(command, Context(cwd=str(work), trees=(str(work.parent),), env=env))
    subprocess.run(["bash", "-c", command], cwd=work, env=env, check=False, capture_output=True, timeout=30)
    assert not log.exists()  # bash ran no git
    (git,) = [i for i in v.invocations if i.program == "git"]
    assert not git.cwd.startswith(str(work)), git.cwd
    assert v.verdict == "allow", v.message
