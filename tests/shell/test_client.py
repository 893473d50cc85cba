"""The client's key for a server: which guard a server answers for, computed on every analysed
command without resolving paths or hashing byte by byte in Python."""

from __future__ import annotations

import posix
import sys
from pathlib import Path

import pytest

from guard.shell import client


def test_the_key_names_the_interpreter_binary_without_resolving_its_path(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """python and python3 are one binary, so one server: the key holds the binary's device and
    inode (one stat), not its path resolved a readlink at a time. Another binary, another guard
    package or another Python gets another key."""
    link = tmp_path / "python3"
    link.symlink_to(sys.executable)
    ours = client.identity()

    def no_readlink(*_a: object) -> str:
        raise AssertionError("the key is computed without readlink")

    monkeypatch.setattr(posix, "readlink", no_readlink)
    assert client.identity(str(link)) == client.identity(sys.executable) == ours
    assert client.identity("/bin/sh") != ours
    assert client.identity(package=str(tmp_path)) != ours
    monkeypatch.setattr(sys, "version", sys.version + "+other")
    assert client.identity() != ours


def test_a_checked_guard_has_a_server_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test suite's guards check their records (guard/record.py): they key a server apart from
    one a guard without the check started, and hand the setting, alone of their guard settings,
    to the server they start."""
    import time

    checked = client.identity()
    monkeypatch.delenv("GUARD_CHECK_RECORDS")
    assert client.identity() != checked
    # the socket is named for the environment asked about, as its guards compute it themselves
    assert client.socket_path({"GUARD_CHECK_RECORDS": "1"}) != client.socket_path({}) == client.socket_path({"A": "1"})
    monkeypatch.setenv("GUARD_CHECK_RECORDS", "1")
    monkeypatch.setenv("GUARD_ROLE", "worker")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    sock = client.socket_path({"XDG_RUNTIME_DIR": str(run)})
    assert sock is not None and client.identity() == checked and client.start_server(sock)
    try:
        deadline = time.monotonic() + 30
        while (pid := client.server_pid(sock)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid is not None
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"GUARD_CHECK_RECORDS=1" in environ
        assert not any(v.startswith(b"GUARD_ROLE=") for v in environ)
    finally:
        assert client.stop_server(sock)


def test_short_hash_tells_apart_texts_that_differ_only_at_the_end_or_by_a_swap() -> None:
    texts = ["", "\0", "\0\0", "a", "a\0", "ab", "ba", "x" * 61 + "ab", "x" * 61 + "ba", "é", "e\u0301"]
    names = {client.short_hash(t) for t in texts}
    assert len(names) == len(texts)
    assert all(len(n) == 16 and int(n, 16) >= 0 for n in names)
