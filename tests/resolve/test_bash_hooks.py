"""Ways bash runs code that are not a command's own words, and what mktemp reads, checked
against real bash: each command runs under bash with a stand-in ``git`` first on PATH that
logs its argv and folder; guard must find exactly the git bash ran, where bash ran it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze

CASES = [
    "mapfile -C 'git push #' -c 1 arr < /etc/hostname",   # the callback runs per line read
    "readarray -t arr < /etc/hostname; git --version",      # no callback: only the git after it
    "echo git; $_ push",                                    # $_ is the last word of the command before
    "true; $_ push",                                        # ...which runs `true push`: no git
    'TMPDIR="$TREE/t"; mkdir -p "$TMPDIR"; cd "$(mktemp -d)" && git init -q',  # not exported: mktemp ignores it
    'export TMPDIR="$TREE/t"; mkdir -p "$TMPDIR"; cd "$(mktemp -d)" && git init -q',
    # make: a makefile fed on stdin, one written earlier in the command, $(shell …), make -C
    "printf 'all:\\n\\tgit status\\n' | make -s -f -",
    "make -s -f - <<'EOF'\nX := $(shell git rev-parse HEAD)\nall: ; @echo $(X)\nEOF",
    "cat > Makefile <<'EOF'\nrelease:\n\tgit tag v1.0\nEOF\nmake -s release",
    "mkdir -p ../elsewhere && printf 'all:\\n\\tgit status\\n' > ../m.mk && make -s -C ../elsewhere -f ../m.mk",
    # tee writes the script that runs next
    "tee s.sh <<< 'git log -3' >/dev/null; sh s.sh",
    # a nested shell's stdin and other descriptors holding text the command gives
    "bash -c 'source /dev/stdin' <<< 'git tag v1'",
    "bash -c '. /dev/fd/0' <<< 'git log -1'",
    "exec 3<<<'git diff'; bash <&3",
    "source /dev/fd/3 3<<<'git log -1'",
    "exec 4<<'EOF'\ngit status\nEOF\nbash /dev/fd/4",
    "bash 3<<<'git push' </dev/null",                       # bash reads fd 0, not 3: nothing runs
    "exec 3<<<'git push'; exec 3<&-; bash <&3 2>/dev/null",  # closed before bash reads it
    "exec 5<<<'git fetch'; bash 0<&5",
]


@pytest.mark.parametrize("command", CASES)
def test_guard_finds_the_git_bash_runs(command: str, tmp_path: Path) -> None:
    tree = tmp_path / "ws"
    work = tree / "app"
    work.mkdir(parents=True)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "git.log"
    stand_in = bin_ / "git"
    stand_in.write_text('#!/bin/sh\necho "$(pwd -P)|$*" >> "$GIT_LOG"\n')
    stand_in.chmod(0o755)
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(tmp_path), "GIT_LOG": str(log), "TREE": str(tree)}
    subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, timeout=30, check=False)
    ran = [line.split("|", 1) for line in log.read_text().splitlines()] if log.exists() else []
    v = analyze(command, Context(cwd=str(work), trees=(str(tree),), env=env))
    found = [i for i in v.invocations if i.program == "git"]
    assert [" ".join(i.argv[1:]) for i in found] == [args for _, args in ran], (command, v.invocations)
    for inv, (where, _) in zip(found, ran, strict=True):
        in_tree = where.startswith(str(tree.resolve()))
        assert inv.cwd.startswith(str(tree)) == in_tree, (command, inv.cwd, where)


@pytest.mark.parametrize("code", ["print(len(os.environ))", "print(bool(os.environ))"])
def test_a_count_of_the_environment_is_not_a_dump(code: str) -> None:
    v = analyze(f"python3 -c 'import os; {code}'", Context(cwd="/workspace/app", env={"HOME": "/root"}))
    assert v.verdict == "allow", v.message
    dumped = analyze("python3 -c 'import os; print(os.environ)'", Context(cwd="/workspace/app", env={"HOME": "/root"}))
    assert dumped.category == "token-search"
