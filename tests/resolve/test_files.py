"""The analysis reads files through one door: regular files only, never blocking, never the
command's own standard input. Checked on the reader itself and through the verdicts it feeds."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.resolve import files
from tests.conftest import guard_bin


def verdict(cmd: str, cwd: str = "/workspace/app"):
    ctx = Context.from_environ(cwd=cwd, trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    return analyze(cmd, ctx)


# ------------------------------------------------------------------ the reader alone


@pytest.mark.parametrize(
    "path",
    ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0", "/proc/1234/fd/0",
     "/proc/1234/task/1235/fd/0", "//dev/./stdin", "/dev//fd/0"],
)
def test_names_of_standard_input(path: str) -> None:
    assert files.names_stdin(path)
    assert files.names_descriptor(path)
    text, why = files.read_text(path, 1024)
    assert text is None and "descriptor" in why


@pytest.mark.parametrize("path", ["/dev/stdin.sh", "/tmp/dev/stdin", "/dev/fd/0x", "/proc/self/environ", "stdin"])
def test_other_paths_are_not_standard_input(path: str) -> None:
    assert not files.names_stdin(path)


def test_regular_file_is_read_without_nul_bytes(tmp_path: Path) -> None:
    p = tmp_path / "s.sh"
    p.write_bytes(b"echo hi\ngit\0 push\n\xff")
    text, why = files.read_text(str(p), 1024)
    assert why is None
    assert text == "echo hi\ngit push\n\ufffd"


def test_binary_file_is_not_read_as_a_script(tmp_path: Path) -> None:
    """bash's rule: a NUL in the first line (within 80 bytes) makes it binary; later NULs are dropped."""
    assert files.read_text("/bin/ls", 1 << 20) == (None, "a binary file, not read")
    p = tmp_path / "later.sh"
    p.write_bytes(b"#!/bin/sh\necho a\0b\n")
    assert files.read_text(str(p), 1024) == ("#!/bin/sh\necho ab\n", None)


def test_running_a_binary_by_path_is_quick() -> None:
    start = time.monotonic()
    v = verdict("/bin/ls -la; x=$(printf ok) /bin/rm -r /tmp/nothing-here")
    assert time.monotonic() - start < 2 and v.verdict == "allow", v.unresolved


def test_file_over_the_cap_is_not_read(tmp_path: Path) -> None:
    p = tmp_path / "big.sh"
    p.write_bytes(b"x" * 2049)
    assert files.read_text(str(p), 2048) == (None, "larger than 2048 bytes, not read")
    assert files.read_text(str(p), 4096)[0] == "x" * 2049


def test_fifo_without_writer_returns_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    start = time.monotonic()
    text, why = files.read_text(str(fifo), 1024)
    assert time.monotonic() - start < 1
    assert text is None and why == "a FIFO, not read"


def test_fifo_with_waiting_writer_keeps_its_data(tmp_path: Path) -> None:
    """The writer is still blocked after the reader looked: nothing opened its other end."""
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"echo 'echo hi' > {fifo}"])
    try:
        time.sleep(0.2)
        assert files.read_text(str(fifo), 1024) == (None, "a FIFO, not read")
        time.sleep(0.2)
        assert writer.poll() is None  # still waiting for a reader
        with open(fifo, "rb") as fh:  # the real reader gets every byte
            assert fh.read() == b"echo hi\n"
    finally:
        writer.wait(5)


@pytest.mark.parametrize("path,kind", [("/dev/null", "a character device"), ("/dev/zero", "a character device"),
                                       ("/dev/urandom", "a character device"), ("/", "a directory")])
def test_devices_and_directories_are_not_read(path: str, kind: str) -> None:
    assert files.read_text(path, 1024) == (None, f"{kind}, not read")


def test_socket_is_not_read(tmp_path: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(tmp_path / "sock"))
        assert files.read_text(str(tmp_path / "sock"), 1024) == (None, "a socket, not read")
    finally:
        s.close()


def test_missing_unreadable_and_nul_paths(tmp_path: Path) -> None:
    assert files.read_text(str(tmp_path / "none"), 10)[1].startswith("not readable")
    assert files.read_text("/tmp/x\0y", 10) == (None, "path holds a NUL byte, not read")


# ------------------------------------------------------------------ a script read from stdin


@pytest.mark.parametrize(
    "cmd",
    [
        "bash /dev/stdin <<'EOF'\necho hi\ngit push origin main\nEOF",
        ". /dev/stdin <<< \"git push\"",
        "source /dev/fd/0 <<< 'git push origin HEAD'",
        "echo 'git push' | sh /dev/fd/0",
        "printf 'git push\\n' | bash /proc/self/fd/0",
        "python3 /dev/stdin <<'EOF'\nimport subprocess\nsubprocess.run(['git', 'push'])\nEOF",
        "if false; then bash /dev/stdin <<< 'git push'; fi",
    ],
)
def test_script_on_stdin_is_what_the_command_feeds_it(cmd: str) -> None:
    v = verdict(cmd)
    assert v.verdict == "refuse" and v.category == "publish", (cmd, v.unresolved)


def test_script_on_unknown_stdin_is_unresolved_not_read() -> None:
    v = verdict("bash /dev/stdin")
    assert v.verdict == "allow"
    assert any("standard input" in u for u in v.unresolved), v.unresolved


def test_script_that_is_a_fifo_is_unresolved(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    start = time.monotonic()
    v = verdict(f"if false; then bash {fifo}; fi; source {fifo}")
    assert time.monotonic() - start < 5
    assert v.verdict == "allow"
    assert any("a FIFO, not read" in u for u in v.unresolved), v.unresolved


# ------------------------------------------------------------------ NUL bytes


@pytest.mark.parametrize("cmd", ["printf 'git\\0 push origin main\\n' | sh", "gi\0t push", "source x\0y.sh; git push"])
def test_nul_bytes_are_removed_as_bash_removes_them(cmd: str) -> None:
    v = verdict(cmd)
    assert v.verdict == "refuse" and v.category == "publish", (cmd, v.unresolved)


# ------------------------------------------------------------------ through guard check --jsonl


def test_jsonl_line_naming_stdin_does_not_consume_the_stream() -> None:
    lines = [{"id": i, "command": "ls"} for i in range(200)]
    lines[3] = {"id": 3, "command": ". /dev/stdin <<< \"git push\""}
    lines[50] = {"id": 50, "command": "bash /dev/stdin"}
    lines[90] = {"id": 90, "command": "cat /dev/fd/0 | sh /dev/stdin"}
    stream = "".join(json.dumps(x) + "\n" for x in lines)
    out = subprocess.run([guard_bin(), "check", "--jsonl", "--cwd", "/workspace/app", "--tree", "/workspace"],
                         input=stream, capture_output=True, text=True, timeout=120)
    answers = [json.loads(x) for x in out.stdout.splitlines()]
    assert [a["id"] for a in answers] == list(range(200))
    assert answers[3]["verdict"] == "refuse"
    assert all(a["verdict"] == "allow" for i, a in enumerate(answers) if i != 3)


def test_guard_shell_leaves_piped_stdin_to_the_command() -> None:
    """``bash /dev/stdin`` reads the script from the pipe guard-shell was given: guard took none."""
    env = {**os.environ, "GUARD_SERVER": "0", "GUARD_TREE": "/nonexistent-tree"}
    out = subprocess.run([guard_bin("guard-shell"), "-c", "if false; then bash /dev/stdin; fi; bash /dev/stdin"],
                         input=b"echo hi\n", capture_output=True, env=env, timeout=60)
    assert out.stdout == b"hi\n", out.stderr


def test_guard_shell_does_not_take_a_fifo_writers_data(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    env = {**os.environ, "GUARD_SERVER": "0", "GUARD_TREE": "/nonexistent-tree"}
    t = threading.Thread(target=lambda: fifo.write_bytes(b"echo hi\n"), daemon=True)
    t.start()
    out = subprocess.run([guard_bin("guard-shell"), "-c", f"bash {fifo}"], capture_output=True, env=env, timeout=60)
    assert out.stdout == b"hi\n" and out.returncode == 0, out.stderr
