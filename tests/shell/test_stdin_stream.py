"""guard-shell in stdin mode (no arguments, ``-s``, a pipe or file on stdin) against real bash:
one complete command at a time, the command's own stdin intact, the session's state kept.

Every case runs the same input through ``/bin/bash`` and through the real guard-shell (with the
server off and on) and compares stdout, stderr and exit status byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import select
import subprocess
import time
from pathlib import Path

import pytest
import shellkit

pytestmark = pytest.mark.skipif(not shellkit.engine_ready(), reason="the real engine is not ready")

BASH = shellkit.REAL_SHELL
SERVER = pytest.mark.parametrize("server", ["0", "1"], ids=["server-off", "server-on"])


def _env(sandbox: dict[str, Path], server: str = "0", **extra: str) -> dict[str, str]:
    return shellkit.base_env(sandbox["home"], sandbox["tree"], GUARD_SERVER=server, **extra)


def _run(argv: list[str], sandbox, stdin: bytes | int = b"", server: str = "0", timeout: float = 60, **extra: str):
    kw: dict = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin}
    return subprocess.run(argv, capture_output=True, cwd=sandbox["scratch"], env=_env(sandbox, server, **extra),
                          timeout=timeout, **kw)


def both(args: list[str], sandbox, stdin: bytes = b"", server: str = "0", **extra: str):
    """(bash, guard-shell) results for the same arguments and stdin, from the same directory."""
    bash = _run([BASH, *args], sandbox, stdin, server, **extra)
    guarded = _run([shellkit.real_guard_shell(), *args], sandbox, stdin, server, **extra)
    return bash, guarded


def same(bash, guarded) -> None:
    assert (guarded.stdout, guarded.stderr, guarded.returncode) == (bash.stdout, bash.stderr, bash.returncode)


# --------------------------------------------------------------------------- the harness pattern


def _readline(stream, timeout: float) -> bytes:
    """One line from ``stream`` within ``timeout`` seconds (a timeout fails the test)."""
    fd = stream.fileno()
    out = b""
    end = time.monotonic() + timeout
    while not out.endswith(b"\n"):
        left = end - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            pytest.fail(f"no answer within {timeout} s (got {out!r})")
        b = os.read(fd, 1)
        if not b:
            break
        out += b
    return out


@SERVER
def test_a_harness_keeping_the_shell_open_gets_each_answer_at_once(sandbox, server: str) -> None:
    p = subprocess.Popen([shellkit.real_guard_shell()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=sandbox["scratch"], env=_env(sandbox, server))
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(b"echo hi\n")
        p.stdin.flush()
        assert _readline(p.stdout, 20) == b"hi\n"
        # state persists between commands, as in one bash session
        for line, want in [
            (b"cd /tmp && export GUARD_T=1 && f() { echo \"f:$1\"; }\n", None),
            (b"echo \"$PWD $GUARD_T\"; f x\n", b"/tmp 1\n"),
            (b"read -r v; echo \"read:$v\"\n", None),
            (b"the line the command reads\n", b"f:x\n"),
        ]:
            p.stdin.write(line)
            p.stdin.flush()
            if want is not None:
                assert _readline(p.stdout, 20) == want
        assert _readline(p.stdout, 20) == b"read:the line the command reads\n"
        p.stdin.write(b"git push origin main\necho status=$?\n")
        p.stdin.flush()
        assert _readline(p.stdout, 20) == b"status=126\n"
        p.stdin.write(b"exit 7\n")
        p.stdin.close()
        assert p.wait(20) == 7
        assert b"git_push" in p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# --------------------------------------------------------------------------- same as bash


SCRIPTS = {
    "state": b"x=5; cd /tmp\necho \"$x $PWD $LINENO\"\nf() {\n  echo \"in f $LINENO\"\n}\nf\n"
             b"shopt -s expand_aliases; alias hi='echo alias-hi'\nhi\nexport Q=1; bash -c 'echo $Q'\n",
    "specials": b"echo \"[$_]\"\nfalse\necho \"$? $_ $LINENO\"\n: a b c\necho \"$_\"\nfoo_not_a_command\necho $?\n",
    "read": b"read -r a\nfirst line\nread -r b\nsecond\necho \"$a|$b\"\nhead -n1\nthird\necho after\n",
    "cat-rest": b"echo start\ncat\necho never run by bash either\nlast\n",
    "heredoc": b"cat <<EOF\nbody $((1+2))\nEOF\ncat <<'Q'\n$not\nQ\necho done\n",
    "multiline": b"for i in 1 2; do\n  echo \"i=$i $LINENO\"\ndone\nif true; then\n echo yes\nfi\necho $LINENO\n",
    "exit": b"echo a\nexit 3\necho b\n",
    "set-e": b"set -e\nfalse && true\necho \"survived $?\"\nfalse\necho not-reached\n",
    "syntax-error": b"echo before\necho )\necho after\n",
    "eof-in-quote": b"echo before\necho \"unterminated\n",
    "eof-in-heredoc": b"cat <<EOF\nno end\n",
    "comments": b"# a comment\n\n   \necho x # trailing\n#last\n",
    "nul-bytes": b"ec\0ho a\0b\necho c\n",
    "invalid-utf8": b"printf '%s\\n' '\xff\xfe'\n",
    "continuation": b"echo a \\\n  b\necho c\n",
    "background": b"(sleep 0.2; echo bg) &\necho fg\nwait\necho waited\n",
    "exec-cat": b"exec cat\nthis is data\n",
    "positional": b"echo \"$0 $# $*\"\n",
    "return-break": b"return 2\necho $?\nbreak\necho $?\n",
}


@SERVER
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_stdin_pipe_as_bash(sandbox, name: str, server: str) -> None:
    same(*both([], sandbox, SCRIPTS[name], server))


@pytest.mark.parametrize("name", ["state", "read", "cat-rest", "positional", "exit"])
def test_dash_s_with_arguments_as_bash(sandbox, name: str) -> None:
    same(*both(["-s", "one", "two"], sandbox, SCRIPTS[name]))


@pytest.mark.parametrize("name", ["read", "cat-rest", "state", "heredoc", "exec-cat"])
def test_stdin_file_as_bash(sandbox, name: str) -> None:
    # a regular file on stdin: bash reads ahead and seeks back; the command reads on from there
    script = sandbox["scratch"] / "in.sh"
    script.write_bytes(SCRIPTS[name])
    outs = []
    for shell in (BASH, shellkit.real_guard_shell()):
        with script.open("rb") as fh:
            outs.append(_run([shell], sandbox, fh.fileno()))
    same(*outs)


def test_refused_command_runs_nothing_and_the_stream_goes_on(sandbox) -> None:
    stdin = b"touch one\ngit push origin main\necho after=$?\ntouch two; git push\necho end\n"
    p = _run([shellkit.real_guard_shell()], sandbox, stdin)
    assert p.stdout == b"after=126\nend\n"
    assert p.stderr.count(b"Refused: git push") == 2 and p.returncode == 0
    assert (sandbox["scratch"] / "one").exists() and not (sandbox["scratch"] / "two").exists()


def test_refusal_under_set_e_ends_the_shell_with_126(sandbox) -> None:
    p = _run([shellkit.real_guard_shell()], sandbox, b"set -e\ngit push\necho not-reached\n")
    assert (p.stdout, p.returncode) == (b"", 126)


@SERVER
def test_ten_megabytes_of_random_stdin_reach_the_command_intact(sandbox, server: str) -> None:
    data = os.urandom(10 * 1024 * 1024)
    stdin = b"read -r first\nline one\nsha256sum; echo \"first=$first\"\n" + data
    want = hashlib.sha256(data).hexdigest().encode() + b"  -\n"
    bash, guarded = both([], sandbox, stdin, server)
    same(bash, guarded)
    assert guarded.stdout == want + b"first=line one\n"


def test_lines_typed_slowly_are_run_as_they_complete(sandbox) -> None:
    # a command split across writes runs once its last line has come, not before
    p = subprocess.Popen([shellkit.real_guard_shell()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         cwd=sandbox["scratch"], env=_env(sandbox))
    try:
        assert p.stdin is not None and p.stdout is not None
        for part in (b"for i in 1 2", b"; do echo $i\n", b"done\n"):
            p.stdin.write(part)
            p.stdin.flush()
            time.sleep(0.2)
        assert _readline(p.stdout, 20) == b"1\n"
        assert _readline(p.stdout, 20) == b"2\n"
        p.stdin.close()
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
