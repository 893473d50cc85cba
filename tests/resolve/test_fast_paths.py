"""The resolver's shortcuts for common commands give exactly what the full dispatch gives."""

from __future__ import annotations

import json

import pytest

import guard.resolve.programs as programs
from guard import parse, resolve
from guard.context import Context
from guard.resolve.wrappers import SHELLS, WRAPPERS
from tests.conftest import REPO
from tests.resolve.inline.catalogue import interpreters, with_catalogue

CTX = with_catalogue(Context.from_environ(cwd="/workspace/app", trees=("/workspace",),
                                          env={"HOME": "/root", "PATH": "/usr/bin:/bin"}))


def _fixture_commands() -> list[str]:
    out = []
    for path in sorted((REPO / "fixtures" / "commands").glob("*.jsonl")):
        out += [json.loads(line)["command"] for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    return out


ACTED_ON = sorted({*WRAPPERS, *SHELLS, *interpreters(), "eval", "trap", "curl", "source", ".", "git", "gh", "npm",
                   "yarn", "pnpm", "make", "gmake", "sed", "sort", "tar", "rsync", "rg", "vim", "ed", "at", "scalar",
                   "git-push", "python3.12", "perl5.36", "node22", "git.exe", "bash.exe", "xargs", "find", "sudo"})


@pytest.mark.parametrize("name", ACTED_ON)
def test_programs_run_acts_on_are_never_plain(name: str) -> None:
    assert not programs.plain_name(name, CTX)


@pytest.mark.parametrize("name", ["ls", "cat", "grep", "pytest", "head", "mkdir", "docker", "make-ish"])
def test_ordinary_programs_are_plain(name: str) -> None:
    assert programs.plain_name(name, CTX)


def _resolutions(commands: list[str], state: Context = CTX) -> list:
    return [resolve.resolve(parse.parse(c), state, parse.parse) for c in commands]


def test_the_shortcut_changes_no_resolution(monkeypatch: pytest.MonkeyPatch, shared) -> None:
    """Every fixture command and every fifth corpus command resolve to equal invocations (argv,
    cwd, env, via, stdin, pipes, writes, reads, facts…) with the shortcut and without it. (Globs
    over /proc are left out: the processes they match come and go between the two runs.)"""
    corpus = [json.loads(line)["command"] for line in (shared / "corpus" / "agent-commands.jsonl").open()][::5]
    commands = [c for c in _fixture_commands() + corpus if "/proc/*" not in c]
    fast = _resolutions(commands)
    monkeypatch.setattr(programs, "_plain_name", lambda name: False)
    full = _resolutions(commands)
    differ = [c[:100] for c, a, b in zip(commands, fast, full, strict=True) if a != b]
    assert not differ, differ[:5]
    assert sum(len(r.invocations) for r in fast) > len(commands)  # the comparison compared something


def test_a_program_copied_or_hashed_earlier_takes_the_full_dispatch() -> None:
    """``ls`` is plain, but not after ``hash -p /usr/bin/git ls`` or a copy of git named ls."""
    for cmd in ("hash -p /usr/bin/git ls; ls push", "cp /usr/bin/git /tmp/b/ls && PATH=/tmp/b ls push"):
        res = resolve.resolve(parse.parse(cmd), CTX, parse.parse)
        assert [i.program for i in res.invocations][-1] == "git", cmd


def test_leaving_out_a_dropped_pipeline_output_changes_no_resolution(monkeypatch: pytest.MonkeyPatch, shared) -> None:
    """A pipeline run as a command does not work out its last stage's output (nothing reads
    it): every fixture command and every fifth corpus command resolve as when it is worked out."""
    import guard.resolve.walk as walk

    corpus = [json.loads(line)["command"] for line in (shared / "corpus" / "agent-commands.jsonl").open()][::5]
    commands = [c for c in _fixture_commands() + corpus if "/proc/*" not in c]
    fast = _resolutions(commands)
    whole = walk.Walker.pipeline
    monkeypatch.setattr(walk.Walker, "pipeline",
                        lambda self, n, st, fr, stdin, output=True: whole(self, n, st, fr, stdin, True))
    full = _resolutions(commands)
    differ = [c[:100] for c, a, b in zip(commands, fast, full, strict=True) if a != b]
    assert not differ, differ[:5]


def test_a_substituted_pipeline_still_gives_its_output() -> None:
    res = resolve.resolve(parse.parse("g=$(printf git | head -c 3); $g push"), CTX, parse.parse)
    assert [i.argv for i in res.invocations if i.program == "git"] == [("git", "push")]


def test_the_start_state_follows_an_environment_changed_in_place() -> None:
    """The state a command starts with is kept for the next command in the same context; a
    caller that changes its environment dict in place between commands is still seen."""
    env = {"HOME": "/root", "PATH": "/usr/bin:/bin", "G": "git"}
    ctx = Context(cwd="/workspace/app", trees=("/workspace",), env=env)
    first = resolve.resolve(parse.parse("$G push"), ctx, parse.parse)
    env["G"] = "echo"
    second = resolve.resolve(parse.parse("$G push"), ctx, parse.parse)
    assert [i.program for i in first.invocations] == ["git"]
    assert [i.program for i in second.invocations] == ["echo"]
    other = resolve.resolve(parse.parse("pwd"), Context(cwd="/tmp/x", trees=("/workspace",), env=env), parse.parse)
    assert other.invocations[0].cwd == "/tmp/x"
