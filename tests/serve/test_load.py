"""Many shells at once against one server (bounded; bench/load_bench.py is the full run): every
command ends as it would under bash (or is refused), every analysed command is answered by the
server, none falls back to in-process analysis because the server was busy, and the server is
the same one from start to end."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard.shell import client
from tests.conftest import BIN, REPO

sys.path.insert(0, str(REPO / "bench"))

import load_bench  # noqa: E402


@pytest.fixture
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="gl-", dir="/tmp"))  # short: the socket path fits in 108 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_twelve_shells_at_once_all_answered_none_failing(root: Path) -> None:
    shell = BIN / "guard-shell"
    if not shell.exists():
        pytest.skip("guard-shell is not installed next to this Python")
    env = load_bench._setup(root)
    env["XDG_RUNTIME_DIR"] = str(root)
    r = load_bench.run_load(str(shell), 12, 12 * 6, root, env)
    assert r["failures"] == []
    assert r["analysed"] > 12
    assert r["answered"] == r["analysed"], "some analysed commands were not answered by the server"
    assert r["same_server"] and r["server"]
    assert client.server_pid(client.socket_path(env) or "") is None  # stopped afterwards
