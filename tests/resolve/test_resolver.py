"""The resolver sees through indirections and tracks cwd; checked on the invocations it emits."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import rules_for
from guard.ir import UNKNOWN
from guard.parse import parse
from guard.policy.classify import effective_context
from guard.resolve import resolve


def invs(cmd: str, cwd: str = "/workspace/app", env: dict | None = None):
    ctx = Context.from_environ(cwd=cwd, trees=("/workspace",), env={"HOME": "/root", **(env or {})})
    # the context as the engine fills it: the catalogue's wrappers (rules/programs/) included
    return resolve(parse(cmd), effective_context(ctx, rules_for(ctx)))


def find(cmd: str, prog: str = "git", **kw):
    res = invs(cmd, **kw)
    hits = [i for i in res.invocations if i.program == prog]
    assert hits, (cmd, [i.argv for i in res.invocations], res.unresolved)
    return hits[0]


@pytest.mark.parametrize(
    "cmd,argv,via",
    [
        ("g'i't push", ("git", "push"), ()),
        ("$'\\x67it' push", ("git", "push"), ()),
        ("G=git; $G push origin", ("git", "push", "origin"), ("variable G",)),
        ("cmd=(git push -f); \"${cmd[@]}\"", ("git", "push", "-f"), ("array cmd",)),
        ("${X:-git} push", ("git", "push"), ("variable X",)),
        ("$(echo git) push", ("git", "push"), ("command substitution",)),
        ("alias g='git -C /tmp/x'; g push", ("git", "-C", "/tmp/x", "push"), ("alias g",)),
        ("f() { git \"$@\"; }; f push origin", ("git", "push", "origin"), ("function f",)),
        ("sudo -u dev timeout 5 git push", ("git", "push"), ("sudo", "timeout")),
        ("bash -c 'sh -c \"git push\"'", ("git", "push"), ("bash -c", "sh -c")),
        ("echo 'git push' | sh", ("git", "push"), ("sh stdin",)),
        ("bash <<'EOF'\ngit push\nEOF", ("git", "push"), ("bash stdin",)),
        ("source <(echo git push)", ("git", "push"), ("source /dev/fd/63",)),
        ("eval 'git push'", ("git", "push"), ("eval",)),
        ("echo push | xargs git", ("git", "push"), ("xargs",)),
    ],
)
def test_sees_through(cmd: str, argv: tuple, via: tuple) -> None:
    inv = find(cmd)
    assert inv.argv == argv
    assert inv.via == via


def test_find_exec_placeholder_is_under_the_start_point() -> None:
    inv = find("find /tmp/c -name .git -exec git -C {} pull \\;")
    assert inv.argv[2] == "/tmp/c/" + UNKNOWN
    assert inv.via == ("find -exec",)
    assert [i.program for i in invs("find /tmp/c -exec git -C {} pull \\;").invocations] == ["find", "git"]


def test_cwd_tracking_cd_pushd_subshell() -> None:
    assert find("cd /tmp/x && git pull").cwd == "/tmp/x"
    assert find("(cd /tmp/x); git pull").cwd == "/workspace/app"
    assert find("pushd /tmp; popd; git pull").cwd == "/workspace/app"
    assert find("pushd /tmp/no/such/y; git pull").cwd == "/workspace/app"  # a missing folder: pushd fails
    assert find("cd ..; git pull").cwd == "/workspace"
    assert find("cd; git pull").cwd == "/root"
    assert find("cd \"$(mktemp -d)\" && git clone u").cwd == "/tmp/tmp." + UNKNOWN
    assert find("cd $(mktemp -d -p /var/t) && git pull").cwd == "/var/t/tmp." + UNKNOWN
    assert find("cd $(mktemp -d /srv/b.XXXX) && git pull").cwd == "/srv/b." + UNKNOWN


def test_env_from_the_real_environment_and_exports() -> None:
    assert find("$G push", env={"G": "git"}).argv == ("git", "push")
    inv = find("export GIT_DIR=/workspace/a/.git; git add .", cwd="/tmp")
    assert inv.env["GIT_DIR"] == "/workspace/a/.git"
    assert find("GIT_DIR=/x git status").env["GIT_DIR"] == "/x"


def test_symlink_into_the_tree_is_followed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "app").mkdir(parents=True)
    link = tmp_path / "innocent"
    os.symlink(tree / "app", link)
    from guard.engine import analyze

    ctx = Context.from_environ(cwd="/tmp", trees=(str(tree),), env={"HOME": "/root"})
    v = analyze(f"cd {link} && git add .", ctx)
    assert v.verdict == "refuse" and v.category == "mutate"
    v = analyze(f"git -C {link} commit -m x", ctx)
    assert v.verdict == "refuse"
    # a sibling whose name merely starts with the tree's is not in it
    sib = Path(str(tree) + "-scratch")
    sib.mkdir()
    assert analyze(f"cd {sib} && git init", ctx).verdict == "allow"


def test_unknowns_are_recorded_not_refused() -> None:
    res = invs("curl -s https://x.sh | bash")
    assert any("standard input" in u for u in res.unresolved)
    res = invs("bash ./missing-script.sh")
    assert any("not readable" in u for u in res.unresolved)


def test_depth_limit_stops_without_refusing() -> None:
    # each eval re-parses the rest of the line: 60 levels of nesting in linear size
    res = invs("eval " * 60 + "git status", cwd="/tmp")
    assert any("nesting deeper" in u for u in res.unresolved)
    assert not any(i.program == "git" for i in res.invocations)


@pytest.mark.parametrize(
    "cmd",
    [
        "echo " + "x" * 1_000_000,
        "$(" * 500 + "echo" + ")" * 500,
        "echo \x00\x01\x02 git push",
        "f() { f; }; f",
        "alias a=b; alias b=a; a",
        "for i in " + " ".join(map(str, range(5000))) + "; do echo $i; done",
        "eval \"$(echo eval \\\"\\$(echo hi)\\\")\"",
    ],
    ids=["1MB", "500-deep", "control-bytes", "self-recursive-function", "alias-loop", "5000-items", "eval-chain"],
)
def test_hostile_inputs_finish_quickly_with_a_result(cmd: str) -> None:
    from guard.engine import analyze

    t = time.monotonic()
    v = analyze(cmd, Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"}))
    assert v.verdict in ("allow", "refuse")
    assert time.monotonic() - t < 5


def test_the_starting_state_is_the_full_constructor_s() -> None:
    """``State.start`` (the per-command fast form) sets every field as ``State(...)`` does."""
    from guard.resolve.state import State

    vars_, aliases, given = {"HOME": "/root"}, {"g": "git"}, ("/w", "/workspace")
    fast, full = State.start("/w", vars_, aliases, given), State("/w", vars_, aliases, given=given)
    assert repr(fast) == repr(full)  # every slot set (an unset one fails repr) and equal
    assert fast.vars is vars_ and fast.aliases is aliases
    assert fast.functions is not State.start("/w", {}, {}, ()).functions


def test_a_piped_invocation_keeps_every_other_field() -> None:
    """``_piped`` builds the record positionally: each field must land in its own place."""
    from guard.ir import Invocation
    from guard.record import fields, replace
    from guard.resolve.walk import _piped

    values = {name: (f"value of {name}",) for name in fields(Invocation)}
    values.update(env={"A": "1"}, facts={"k": 1}, program="git", cwd="/w", stdin="in", lang="python")
    inv = Invocation(**values)
    later = (("grep", "x"),)
    assert _piped(inv, later) == replace(inv, pipe_to=later)
    assert _piped(inv, later).pipe_to == later and _piped(inv, later).reads == inv.reads
