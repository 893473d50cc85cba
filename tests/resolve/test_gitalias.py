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
    # every name guard skips is one this git runs before any alias: a built-in, or a git-NAME program
    listed = subprocess.run(["git", "--list-cmds=builtins"], capture_output=True, text=True, env=env, timeout=30)
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, env=env, timeout=30).stdout.strip()
    assert listed.returncode == 0
    missing = [n for n in BUILTINS if n not in listed.stdout.split() and not os.path.exists(os.path.join(exec_path, "git-" + n))]
    assert not missing, missing


@pytest.mark.parametrize("cmd", [
    "git -c alias.pu='!touch /workspace/f' PU",  # git reads alias.pu for PU
    "git -c alias.PU='!touch /workspace/f' pu",
    "git -c alias.status='!touch /workspace/f' STATUS",  # STATUS is no built-in: git looks for an alias
    "git config alias.Pu '!touch /workspace/f'; git pU",
    "git -c alias.bisect--helper='!touch /workspace/f' bisect--helper",  # gone from git 2.40's built-ins
])
def test_alias_names_are_matched_as_git_matches_them(cmd: str) -> None:
    assert ("touch", "/workspace/f") in programs(cmd), programs(cmd)


def test_the_last_of_two_spellings_of_one_alias_wins() -> None:
    argv = programs("git -c alias.Vv='!touch /workspace/one' -c alias.vV='!touch /workspace/two' vv")
    assert ("touch", "/workspace/two") in argv and ("touch", "/workspace/one") not in argv


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_real_git_matches_alias_names_regardless_of_case(tmp_path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}

    def run(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30).stdout.strip()

    assert run("-c", "alias.vv=!echo shown", "VV") == "shown"
    assert run("-c", "alias.status=!echo aliased", "STATUS") == "aliased"
    assert run("-c", "alias.Vv=!echo one", "-c", "alias.vV=!echo two", "vv") == "two"
