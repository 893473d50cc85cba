"""git's aliases are looked up the way git itself does: after its built-in commands."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from guard.context import Context
from guard.parse import parse
from guard.resolve import resolve
from guard.resolve.gitalias import BUILTINS, ShellEnv, lookup


def programs(cmd: str, env: dict | None = None) -> list[tuple[str, ...]]:
    ctx = Context.from_environ(cwd="/tmp/x", trees=("/workspace",), env={"HOME": "/nonexistent", **(env or {})})
    return [i.argv for i in resolve(parse(cmd), ctx).invocations]


def test_an_alias_named_after_a_builtin_is_not_what_runs() -> None:
    """git runs its own ``status``, so the alias's ``!touch`` is not an invocation."""
    assert programs("git -c alias.status='!touch /workspace/f' status") == [
        ("git", "-c", "alias.status=!touch /workspace/f", "status")]
    assert ("touch", "/workspace/f") in programs("git -c alias.st='!touch /workspace/f' st")


@pytest.mark.parametrize("define", ["-c alias.{n}='{v}' {n}", "config alias.{n} '{v}'; git {n}"])
def test_every_way_of_defining_an_alias_skips_builtins(define: str) -> None:
    cmd = "git " + define.format(n="log", v="!touch /workspace/f")
    assert all(argv[0] == "git" for argv in programs(cmd))
    cmd = "git " + define.format(n="lg", v="!touch /workspace/f")
    assert ("touch", "/workspace/f") in programs(cmd)


def test_the_environment_view_reads_prefix_assignments_over_string_variables() -> None:
    view = ShellEnv({"A": "1", "N": None}, {"A": "0", "B": "2", "ARR": ["x"]})
    assert (view.get("A"), view.get("B"), view.get("N"), view.get("ARR"), view.get("Z", "d")) == ("1", "2", None, None, "d")
    env = ShellEnv({}, {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.p", "GIT_CONFIG_VALUE_0": "push"})
    assert lookup(("git", "p"), env, {}) == ("p", "push", 1)
    assert lookup(("git", "push"), env, {"push": "status"}) is None


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_real_git_ignores_an_alias_that_hides_a_builtin(tmp_path) -> None:
    """The rule modelled above, checked on the git at hand: ``git -c alias.version=…`` still
    prints git's version, while an alias of a new name runs."""
    env = {**os.environ, "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    out = subprocess.run(["git", "-c", "alias.version=!echo hidden", "version"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=30)
    assert out.stdout.startswith("git version"), out
    out = subprocess.run(["git", "-c", "alias.vv=!echo shown", "vv"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=30)
    assert out.stdout.strip() == "shown", out
    listed = subprocess.run(["git", "--list-cmds=builtins"], capture_output=True, text=True, env=env, timeout=30)
    if listed.returncode == 0:  # every name guard treats as built-in is one in this git, or newer than it
        assert len(set(listed.stdout.split()) & BUILTINS) >= 0.9 * len(BUILTINS)
