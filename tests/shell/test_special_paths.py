"""Devices, FIFOs, sockets and directories named as scripts: guard-shell never reads them, never
blocks on them, never takes a byte of the command's stdin or the terminal, and every case ends
the same as under bash (stdout, stderr, exit status; a timeout fails the test).

Each path is tried as a script under ``-c``, as guard-shell's own script operand, in stdin mode
and on a terminal (pexpect), with the analysis server off and on.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import threading
from pathlib import Path

import pexpect
import pytest
import shellkit

pytestmark = pytest.mark.skipif(not shellkit.engine_ready(), reason="the real engine is not ready")

BASH = shellkit.REAL_SHELL
SERVER = pytest.mark.parametrize("server", ["0", "1"], ids=["server-off", "server-on"])
STDIN_PATHS = ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]
OTHER = ["fifo-writer", "fifo-no-writer", "/dev/tty", "directory", "socket"]
TIMEOUT = 60


class Place:
    """A special path made for one test, and a writer for the FIFO that has one."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.sock: socket.socket | None = None
        if kind.startswith("fifo"):
            self.path = str(root / "fifo")
            os.mkfifo(self.path)
        elif kind == "directory":
            self.path = str(root / "a-dir")
            os.mkdir(self.path)
        elif kind == "socket":
            self.path = str(root / "sock")
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(self.path)
        else:
            self.path = kind

    def writer(self, text: bytes) -> threading.Thread | None:
        """For ``fifo-writer``: a thread that opens the FIFO for writing (and waits there until a
        reader comes, as a process writing to it would) and writes ``text``."""
        if self.kind != "fifo-writer":
            return None

        def write() -> None:
            try:
                fd = os.open(self.path, os.O_WRONLY)
                os.write(fd, text)
                os.close(fd)
            except OSError:
                pass

        t = threading.Thread(target=write, daemon=True)
        t.start()
        return t

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        if self.kind == "fifo-writer":  # release a writer nobody read from
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def place(request, tmp_path: Path):
    p = Place(request.param, tmp_path)
    yield p
    p.close()


def env(sandbox, server: str) -> dict[str, str]:
    return shellkit.base_env(sandbox["home"], sandbox["tree"], GUARD_SERVER=server)


def run(argv: list[str], sandbox, server: str, stdin: bytes = b"", place: Place | None = None):
    """Run in a new session (no controlling terminal, so /dev/tty fails the same for both)."""
    w = place.writer(b"echo from-fifo\n") if place else None
    p = subprocess.run(argv, input=stdin, capture_output=True, cwd=sandbox["scratch"], env=env(sandbox, server),
                       timeout=TIMEOUT, start_new_session=True)
    if w is not None:
        place.close()
        w.join(5)
    return p


def compare(args: list[str], sandbox, server: str, stdin: bytes = b"", place: Place | None = None):
    bash = run([BASH, *args], sandbox, server, stdin, place)
    guarded = run([shellkit.real_guard_shell(), *args], sandbox, server, stdin, place)
    # bash names itself by the path it was started with; guard-shell starts /bin/bash
    assert (guarded.stdout, guarded.stderr, guarded.returncode) == (bash.stdout, bash.stderr, bash.returncode)
    return guarded


ALL = pytest.mark.parametrize("place", STDIN_PATHS + OTHER, indirect=True)
REACHABLE = pytest.mark.parametrize("place", STDIN_PATHS + ["fifo-writer", "/dev/tty", "directory", "socket"],
                                    indirect=True)
OPERAND = REACHABLE


@SERVER
@ALL
def test_unreached_script_costs_nothing_and_stdin_arrives_intact(sandbox, place: Place, server: str) -> None:
    data = os.urandom(10 * 1024 * 1024)
    cmd = f"if false; then bash {place.path}; source {place.path}; fi; sha256sum"
    p = compare(["-c", cmd], sandbox, server, data)
    assert p.stdout == hashlib.sha256(data).hexdigest().encode() + b"  -\n"
    assert p.stderr == b""


@SERVER
@REACHABLE
def test_script_under_dash_c_runs_as_under_bash(sandbox, place: Place, server: str) -> None:
    compare(["-c", f"bash {place.path}; echo status=$?"], sandbox, server, b"echo from-stdin\n", place)


@SERVER
@OPERAND
def test_script_operand_runs_as_under_bash(sandbox, place: Place, server: str) -> None:
    compare([place.path], sandbox, server, b"echo from-stdin\nread -r x; echo \"read=$x\"\nnext line\n", place)


@SERVER
@REACHABLE
def test_script_in_stdin_mode_runs_as_under_bash(sandbox, place: Place, server: str) -> None:
    stdin = f"bash {place.path}\necho after=$?\n".encode() + b"echo inner\n"
    compare([], sandbox, server, stdin, place)


@SERVER
@ALL
def test_unreached_script_in_stdin_mode(sandbox, place: Place, server: str) -> None:
    stdin = f"if false; then bash {place.path}; fi; head -c 5; echo\necho after\n".encode() + b"abcdefgh\n"
    compare([], sandbox, server, stdin)


def test_fifo_without_writer_as_operand_waits_like_bash(sandbox, tmp_path: Path) -> None:
    # bash blocks in open(2) until a writer comes; so does guard-shell, and then it runs it
    place = Place("fifo-writer", tmp_path)
    proc = subprocess.Popen([shellkit.real_guard_shell(), place.path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=sandbox["scratch"], env=env(sandbox, "0"))
    try:
        import time

        time.sleep(0.5)
        assert proc.poll() is None
        t = place.writer(b"echo late-writer\n")
        out, err = proc.communicate(timeout=TIMEOUT)
        assert (out, err, proc.returncode) == (b"late-writer\n", b"", 0)
        assert t is not None
        t.join(5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_over_the_cap_script_operand_gets_only_bashs_message(sandbox, tmp_path: Path) -> None:
    big = tmp_path / "big.sh"
    with big.open("wb") as fh:
        fh.truncate(2 * 1024 * 1024 * 1024)  # sparse: 2 GB of NULs
    bash = run([BASH, str(big)], sandbox, "0")
    guarded = run([shellkit.real_guard_shell(), str(big)], sandbox, "0")
    assert (guarded.stdout, guarded.stderr, guarded.returncode) == (bash.stdout, bash.stderr, bash.returncode)


def test_special_operand_fails_closed_on_request(sandbox, tmp_path: Path) -> None:
    place = Place("fifo-no-writer", tmp_path)
    e = env(sandbox, "0")
    e["GUARD_FAIL"] = "closed"
    p = subprocess.run([shellkit.real_guard_shell(), place.path], capture_output=True, env=e, timeout=TIMEOUT,
                       cwd=sandbox["scratch"])
    assert p.returncode == 126
    assert p.stderr == f"guard: cannot check the script: {place.path} is a FIFO; refusing it (GUARD_FAIL=closed)\n".encode()


def test_deleted_working_directory_gives_no_traceback(sandbox, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    code = f"cd {gone} && rmdir {gone} && "
    gs = shellkit.real_guard_shell()
    guard = str(Path(gs).with_name("guard"))
    for inner in (f"{gs} -c 'echo ok'", f"echo 'echo ok' | {gs}", f"{guard} check -- ls"):
        p = subprocess.run([BASH, "-c", code + inner], capture_output=True, env=env(sandbox, "0"), timeout=TIMEOUT)
        gone.mkdir(exist_ok=True)
        assert b"Traceback" not in p.stderr, (inner, p.stderr)
        assert p.returncode == 0, (inner, p.stderr)
        assert p.stdout in (b"ok\n", b"allow\n")


# --------------------------------------------------------------------------- on a terminal

PROMPT = "PS1>> "


@SERVER
@pytest.mark.parametrize("path", STDIN_PATHS + ["/dev/tty", "fifo-no-writer"])
def test_interactive_line_naming_a_special_path_steals_no_input(sandbox, tmp_path: Path, path: str,
                                                                 server: str) -> None:
    target = Place(path, tmp_path).path if path.startswith("fifo") else path
    e = shellkit.base_env(sandbox["home"], sandbox["tree"], TERM="xterm", PS1=PROMPT, GUARD_SERVER=server)
    child = pexpect.spawn(shellkit.real_guard_shell(), ["--norc"], env=e, cwd=str(sandbox["scratch"]),
                          encoding="utf-8", timeout=20, dimensions=(40, 120))
    try:
        child.expect_exact(PROMPT)
        child.sendline(f"if false; then source {target}; bash {target}; fi; echo first-$((6*7))")
        child.expect_exact("first-42")
        child.expect_exact(PROMPT)
        child.sendline("echo typed-$((6*8))")
        child.expect_exact("typed-48")
        child.expect_exact(PROMPT)
        child.sendline("exit 4")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 4
    finally:
        if child.isalive():
            child.terminate(force=True)
