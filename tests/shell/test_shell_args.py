"""Unit tests: bash argv forms, the decision (fail-open / fail-closed), pure session helpers."""

from __future__ import annotations

import subprocess
import time

import pytest

import guard.engine
from guard.ir import Verdict
from guard.shell import decide as shell_decide
from guard.shell.args import parse_args
from guard.shell.interactive import _shell_args, init_script, is_complete
from guard.shell.session import ends_with_continuation, parse_state


@pytest.mark.parametrize(
    ("argv", "mode", "operand", "rest"),
    [
        (["-c", "echo hi", "name", "a"], "command", "echo hi", ("name", "a")),
        (["-lc", "git status"], "command", "git status", ()),
        (["-ec", "x"], "command", "x", ()),
        (["-xc", "x", "n"], "command", "x", ("n",)),
        (["-euo", "pipefail", "-c", "x"], "command", "x", ()),
        (["-o", "pipefail", "-c", "x"], "command", "x", ()),
        (["+o", "braceexpand", "-c", "x"], "command", "x", ()),
        (["-O", "extglob", "-c", "x"], "command", "x", ()),
        (["--login", "--norc", "--noprofile", "-c", "x"], "command", "x", ()),
        (["--rcfile", "rc", "-c", "x"], "command", "x", ()),
        (["-c", "-e", "x"], "command", "x", ()),
        (["-ic", "x"], "command", "x", ()),
        (["-c"], "passthrough", None, ()),
        (["--version"], "passthrough", None, ()),
        (["-s", "a", "b"], "stdin", None, ("a", "b")),
        ([], "stdin", None, ()),
        (["-i"], "stdin", None, ()),
        (["--login"], "stdin", None, ()),
        (["script.sh", "x", "-c"], "script", "script.sh", ("x", "-c")),
        (["-e", "script.sh"], "script", "script.sh", ()),
        (["--", "-c"], "script", "-c", ()),
        (["-o", "pipefail", "s.sh"], "script", "s.sh", ()),
    ],
)
def test_parse_args(argv: list[str], mode: str, operand: str | None, rest: tuple) -> None:
    got = parse_args(argv)
    assert (got.mode, got.operand, got.rest) == (mode, operand, rest)


def test_analysis_text_replaces_undecodable_bytes() -> None:
    raw = (b"git push \xff").decode("utf-8", "surrogateescape")
    assert shell_decide.analysis_text(raw) == "git push \ufffd"
    assert shell_decide.analysis_text("echo ok") == "echo ok"


def _patch(monkeypatch: pytest.MonkeyPatch, fn) -> None:  # noqa: ANN001
    monkeypatch.setattr(guard.engine, "analyze", fn)


def test_decide_allow_and_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, lambda c, ctx: Verdict("refuse", message="no") if "push" in c else Verdict("allow"))
    assert shell_decide.decide("git status", cwd="/").action == "run"
    d = shell_decide.decide("git push", cwd="/")
    assert (d.action, d.message) == ("refuse", "no")


def test_decide_passes_session_state(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def analyze(command, ctx):  # noqa: ANN001
        seen.update(cwd=ctx.cwd, aliases=dict(ctx.aliases), functions=dict(ctx.functions), x=ctx.env.get("X"))
        return Verdict("allow")

    _patch(monkeypatch, analyze)
    shell_decide.decide("g push", cwd="/tmp/x", aliases={"g": "git"}, functions={"f": "f () { :; }"}, env={"X": "1"})
    assert seen == {"cwd": "/tmp/x", "aliases": {"g": "git"}, "functions": {"f": "f () { :; }"}, "x": "1"}


def test_engine_failure_fails_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(c, ctx):  # noqa: ANN001
        raise ValueError("rules.yaml:3: bad")

    _patch(monkeypatch, boom)
    monkeypatch.delenv("GUARD_FAIL", raising=False)
    d = shell_decide.decide("git push")
    assert d.action == "run"
    assert d.message == "guard: internal error, running the command unchecked: ValueError: rules.yaml:3: bad"


def test_engine_failure_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, lambda c, ctx: 1 / 0)
    monkeypatch.setenv("GUARD_FAIL", "closed")
    d = shell_decide.decide("ls | wc -l")
    assert d.action == "refuse"
    assert d.message.startswith("guard: internal error, refusing the command (GUARD_FAIL=closed): ZeroDivisionError")


def test_engine_without_verdict_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, lambda c, ctx: None)
    monkeypatch.delenv("GUARD_FAIL", raising=False)
    d = shell_decide.decide("ls | wc -l")
    assert d.action == "run" and "no verdict" in (d.message or "")


def test_slow_analysis_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(c, ctx):  # noqa: ANN001
        for _ in range(100):
            time.sleep(0.05)
        return Verdict("allow")

    _patch(monkeypatch, slow)
    monkeypatch.setattr(shell_decide, "ANALYSIS_TIMEOUT", 0.2)
    monkeypatch.delenv("GUARD_FAIL", raising=False)
    t = time.monotonic()
    d = shell_decide.decide("ls | wc -l")
    assert time.monotonic() - t < 2
    assert d.message == "guard: internal error, running the command unchecked: analysis took longer than 0.2s"


def test_recursion_error_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def deep(c, ctx):  # noqa: ANN001
        return deep(c, ctx)

    _patch(monkeypatch, deep)
    monkeypatch.delenv("GUARD_FAIL", raising=False)
    assert shell_decide.decide("x | y").message.startswith("guard: internal error, running the command unchecked: RecursionError")


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("echo hi\n", True),
        ("cat <<EOF\nfoo\n", False),
        ("cat <<EOF\nfoo\nEOF\n", True),
        ("echo 'abc\n", False),
        ('echo "abc\n', False),
        ("if true; then\n", False),
        ("if true; then\n echo x\nfi\n", True),
        ("a &&\n", False),
        ("a |\n", False),
        ("x=$(\n", False),
        ("f() {\n", False),
        ("echo a \\\n", False),
        ("echo a \\\\\n", True),
        ("fi\n", True),
        ("ls !(x)\n", True),
        ("\n", True),
    ],
)
def test_is_complete(text: str, complete: bool) -> None:
    assert is_complete(text) is complete


def test_continuation() -> None:
    assert ends_with_continuation("echo \\")
    assert not ends_with_continuation("echo \\\\")
    assert not ends_with_continuation("echo")


def test_parse_state() -> None:
    raw = (
        b"S\x003\x00D\x00/tmp/x\x00V\x00FOO\x00bar\x00V\x00__guard_dir\x00/t\x00E\x00FOO\x00"
        b"A\x00g\x00git\x00F\x00f\x00f () \n{ \n    git push\n}\n\x00F\x00__guard_hook\x00x\x00"
        b"P\x00$ \x00Q\x00> \x00"
    )
    st = parse_state(raw)
    assert (st.status, st.cwd, st.ps1, st.ps2) == (3, "/tmp/x", "$ ", "> ")
    assert st.variables == {"FOO": "bar"} and st.exported == {"FOO"}
    assert st.aliases == {"g": "git"}
    assert st.functions == {"f": "f () \n{ \n    git push\n}"}


def test_init_script_is_valid_bash() -> None:
    p = subprocess.run(["bash", "-n"], input=init_script("abc123", "/tmp/it's"), text=True, capture_output=True)
    assert p.returncode == 0, p.stderr


def test_session_shell_args() -> None:
    assert _shell_args(parse_args(["--norc", "-o", "vi", "-i"])) == ["--norc", "--noediting", "-i"]
    assert _shell_args(parse_args(["--login", "-e"])) == ["--login", "--noediting", "-e", "-i"]
    assert _shell_args(parse_args(["-o", "pipefail"])) == ["--noediting", "-o", "pipefail", "-i"]


def test_partial_marker_len() -> None:
    from guard.shell.interactive import partial_marker_len

    m = (b"\x1b]777;guard-sync;ab\x07", b"\x1b]777;guard-ready;ab\x07")
    assert partial_marker_len(b"started\r\n", m) == 0
    assert partial_marker_len(b"out\x1b]777;gua", m) == len(b"\x1b]777;gua")
    assert partial_marker_len(b"out\x1b", m) == 1
    assert partial_marker_len(b"red \x1b[31m", m) == 0


def test_plain_commands_skip_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run(c, ctx):  # noqa: ANN001
        raise AssertionError("analysed")

    _patch(monkeypatch, must_not_run)
    monkeypatch.delenv("GUARD_FAIL", raising=False)
    assert shell_decide.decide("ls -la src") == shell_decide.Decision("run", plain=True)
    # an alias or function of the same name makes the plain name mean more: analysed
    assert shell_decide.decide("ls -la", aliases={"ls": "git push"}).error is not None
    assert shell_decide.decide("ls -la", functions={"ls": "ls () { git push; }"}).error is not None
