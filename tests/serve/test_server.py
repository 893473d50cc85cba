"""The resident analysis server, with real server processes on a private socket folder.

The central property: a served decision is the in-process decision (same action, same stderr,
same audit records) on every labelled fixture. Around it: guard-shell starts and uses the server,
never trusts a listener that is not the same interpreter, refuses a folder others can enter,
falls back when the server drops a request, and the server leaves when idle or when the
package changed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from guard.ruleset import load as rload
from guard.shell import client
from guard.shell import main as shell
from tests.conftest import REPO, guard_bin

PROJECTS = str(REPO / "fixtures" / "projects")


def wait_for(pred: Callable[[], object], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return bool(pred())


@pytest.fixture
def sock(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The socket path of this guard's server in a fresh private runtime folder (short: the
    socket path must fit in 108 bytes)."""
    folder = tempfile.mkdtemp(prefix="gs-", dir="/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    path = client.socket_path(os.environ)
    assert path is not None and path.startswith(folder + "/")
    yield path
    client.stop_server(path)
    shutil.rmtree(folder, ignore_errors=True)


def start_server(path: str, patch: str = "") -> subprocess.Popen[bytes]:
    """Run the server in the background (``patch``: Python run first, to shorten its timers)."""
    code = f"import sys\nfrom guard.serve import server\n{patch}\nsys.exit(server.main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-I", "-c", code, path, client.identity()], cwd=REPO,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert wait_for(lambda: os.path.exists(path) or proc.poll() is not None), "server did not start"
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
    return proc


def ask(command: str, cwd: str = "/", env: dict[str, str] | None = None) -> tuple[bytes, bytes] | None:
    envb = {os.fsencode(k): os.fsencode(v) for k, v in (env if env is not None else os.environ).items()}
    return client.ask([b"-c", os.fsencode(command)], cwd, envb, start=False)


def in_process(command: str, cwd: str, env: dict[str, str]) -> tuple[bytes, bytes]:
    """guard_command as guard-shell runs it without a server: (action, what it wrote on stderr).
    Each call starts like a fresh guard-shell process: no rule set kept from an earlier call."""

    rload.forget()
    with tempfile.TemporaryFile() as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            decision = shell.guard_command(command, cwd, shell.parse_args(["-c", command]), env)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        said = err.read()
    action = b"refuse" if decision.action == "refuse" else (b"plain" if decision.plain else b"run")
    return action, said


def _rows() -> list[dict]:
    rows = []
    for path in sorted((REPO / "fixtures" / "commands").glob("*.jsonl")):
        rows += [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    return rows


def _audit(path: Path) -> list[tuple]:
    if not path.exists():
        return []
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    return [(r.get("command"), r.get("cwd"), r.get("category"), r.get("rule"), r.get("message")) for r in recs]


# --------------------------------------------------------------------------- equivalence


def test_served_decision_is_the_in_process_decision_on_every_labelled_fixture(sock: str, tmp_path: Path) -> None:
    start_server(sock)
    rows = _rows()
    assert len(rows) > 1000
    fill = lambda s: s.replace("{projects}", PROJECTS)  # noqa: E731
    logs = {"served": tmp_path / "served.jsonl", "local": tmp_path / "local.jsonl"}
    differ = []
    volatile: set[str] = set()
    actions = {b"run": 0, b"plain": 0, b"refuse": 0}
    for row in rows:
        base = {"HOME": "/root", "PATH": "/usr/bin:/bin", "GUARD_TREE": fill(row.get("tree", "/workspace")),
                **{k: fill(v) for k, v in row.get("env", {}).items()}}
        cwd, command = fill(row.get("cwd", "/workspace/app")), fill(row["command"])
        local = in_process(command, cwd, {**base, "GUARD_AUDIT_LOG": str(logs["local"])})
        served = ask(command, cwd, {**base, "GUARD_AUDIT_LOG": str(logs["served"])})
        if served != local and local[0] == b"refuse" and served is not None and served[0] == b"refuse":
            # a glob over a live folder (strings /proc/*/environ) names what exists at that moment:
            # a process that ended in between changes the message. The same answer as an
            # in-process decision taken just after is the same decision.
            again = in_process(command, cwd, {**base, "GUARD_AUDIT_LOG": str(tmp_path / "again.jsonl")})
            if again == served:
                local = again
                volatile.add(command)  # its two audit records differ in the message alone
        if served != local:
            differ.append(f"{row['id']}: served {served!r} local {local!r}")
        actions[local[0]] += 1
    assert not differ, "\n".join(differ[:20])
    assert actions[b"refuse"] > 400 and actions[b"run"] > 200 and actions[b"plain"] > 20, actions
    def stable(recs: list[tuple]) -> list[tuple]:
        return [r[:4] if r[0] in volatile else r for r in recs]

    assert stable(_audit(logs["served"])) == stable(_audit(logs["local"]))
    assert len(_audit(logs["local"])) == actions[b"refuse"]


# --------------------------------------------------------------------------- guard-shell end to end


def _server_children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry))
    return out


def test_guard_shell_starts_the_server_then_is_answered_by_it(sock: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "app").mkdir(parents=True)
    env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")}
    env.pop("GUARD_SERVER", None)
    gs = guard_bin("guard-shell")
    first = subprocess.run([gs, "-c", "git --version >/dev/null && echo first"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert (first.returncode, first.stdout) == (0, "first\n"), first.stderr
    assert wait_for(lambda: client.server_pid(sock) is not None and os.path.exists(sock))
    pid = client.server_pid(sock)
    assert pid is not None
    # answered once (the workers have warmed up, even on a loaded machine), then a full pool
    assert wait_for(lambda: ask("git status", str(tmp_path), env) is not None)
    assert wait_for(lambda: len(_server_children(pid)) == 2)
    time.sleep(0.5)
    before = _server_children(pid)
    refused = subprocess.run([gs, "-c", "git push origin HEAD"], env=env, cwd=tree / "app",
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == shell.REFUSED_STATUS
    assert refused.stderr.startswith("Refused: git push.")
    assert wait_for(lambda: _server_children(pid) - before), "no worker of the server answered"
    records = _audit(tmp_path / "audit.jsonl")
    assert [r[0] for r in records] == ["git push origin HEAD"]  # written once, by the server's worker
    ran = subprocess.run([gs, "-c", "echo $((6*7)) >&2; exit 3"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stderr) == (3, "42\n")


def test_guard_server_off_starts_nothing_and_still_refuses(sock: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "GUARD_SERVER": "0", "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    p = subprocess.run([guard_bin("guard-shell"), "-c", "git commit -am x"], env=env, cwd=tree,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == shell.REFUSED_STATUS
    time.sleep(0.5)
    assert not os.path.exists(sock) and client.server_pid(sock) is None


def test_guard_server_status_and_stop(sock: str) -> None:
    env = dict(os.environ)
    out = subprocess.run([guard_bin(), "server", "status"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and f"socket: {sock}\n" in out.stdout and "not running" in out.stdout
    start_server(sock)
    out = subprocess.run([guard_bin(), "server", "status"], env=env, capture_output=True, text=True)
    assert f"running, pid {client.server_pid(sock)}" in out.stdout
    out = subprocess.run([guard_bin(), "server", "stop"], env=env, capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "guard: server: stopped\n")
    assert not os.path.exists(sock)
    bad = subprocess.run([guard_bin(), "server", "restart"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr == "guard: usage: guard server status|stop\n"


# --------------------------------------------------------------------------- trust and failure


FAKE_SERVER = r"""
import os, socket, sys
sys.path.insert(0, sys.argv[2])
from guard.shell import wire
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(8)
while True:
    c, _ = s.accept()
    c.recv(1 << 20)
    c.sendall(wire.encode_reply(b"run", b""))  # "allowed", whatever was asked
    c.close()
"""


def test_a_listener_running_another_interpreter_binary_is_not_trusted(sock: str, tmp_path: Path) -> None:
    copy = tmp_path / "python-copy"
    shutil.copy2(os.path.realpath(sys.executable), copy)
    fake = subprocess.Popen([str(copy), "-I", "-c", FAKE_SERVER, sock, str(REPO)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: os.path.exists(sock) or fake.poll() is not None)
        if fake.poll() is not None:
            pytest.skip(f"a copied interpreter does not run here: {fake.stderr.read()[:200]!r}")  # type: ignore[union-attr]
        assert ask("git push") is None
        tree = tmp_path / "tree"
        tree.mkdir()
        env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
        p = subprocess.run([guard_bin("guard-shell"), "-c", "git push"], env=env, cwd=tree,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == shell.REFUSED_STATUS, p.stderr
    finally:
        fake.kill()
        fake.wait()
        os.unlink(sock)


def test_a_socket_folder_others_can_enter_is_not_used(sock: str) -> None:
    folder = os.path.dirname(sock)
    os.chmod(folder, 0o755)
    try:
        assert client.socket_path(os.environ) is None
        assert ask("git status") is None
    finally:
        os.chmod(folder, 0o700)
    os.rmdir(folder)
    os.symlink("/tmp", folder)  # a symlink in its place is not a private folder either
    try:
        assert client.socket_path(os.environ) is None
    finally:
        os.unlink(folder)


def test_a_dropped_request_falls_back_to_the_caller(sock: str) -> None:
    start_server(sock, patch="server.serve_one = lambda conn, *_: True")
    assert ask("git status") is None
    assert wait_for(lambda: len(_server_children(client.server_pid(sock) or -1)) == 2)
    assert ask("ls") is None


# The server taken off the CPU at each step of its start, as a loaded machine does: right after
# it binds (os.umask restores the caller's mask between bind and listen) and before it forks its
# workers. A server that put its socket at its path before it listened refused the first caller
# (ECONNREFUSED: about 3 starts in 100 at load 20, with the tests' 20 ms look for the socket),
# and one that published it before its workers existed left that caller waiting for READY.
SLOW_START = ("import time\n_umask = server.os.umask\n"
              "def slow_umask(mask):\n    old = _umask(mask)\n    time.sleep(0.3)\n    return old\n"
              "server.os.umask = slow_umask\n_spawn = server._spawn_worker\n"
              "def slow_spawn(*a, **k):\n    time.sleep(client.READY_TIMEOUT + 0.5)\n    return _spawn(*a, **k)\n"
              "server._spawn_worker = slow_spawn\nfrom guard.shell import client\n")


@pytest.mark.parametrize("stale", [False, True])
def test_the_first_caller_to_find_the_socket_is_answered_however_slow_the_start(sock: str, stale: bool) -> None:
    """The socket appears at its path only once it listens and its workers are forked (it is
    bound under a temporary name and renamed into place, over a stale socket too), so the first
    caller who finds it is answered, not refused or left to time out. Nothing else is left in
    the folder: no temporary name, and none a server killed before its rename left."""
    old = dead = None
    if stale:  # a socket left by a server that was killed: the path exists, nobody listens
        import socket as _s

        dead = _s.socket(_s.AF_UNIX, _s.SOCK_STREAM)
        dead.bind(sock)  # kept open to the end, so its inode number is not reused for the new one
        old = os.stat(sock).st_ino
        left = _s.socket(_s.AF_UNIX, _s.SOCK_STREAM)
        left.bind(f"{sock}.4194303")  # and the unpublished socket of one killed before its rename
        left.close()
    proc = subprocess.Popen([sys.executable, "-I", "-c", "import sys\nfrom guard.serve import server\n"
                             f"{SLOW_START}\nsys.exit(server.main(sys.argv[1:]))", sock, client.identity()],
                            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = set()

    def published() -> bool:
        try:
            st = os.lstat(sock)
        except FileNotFoundError:
            seen.add("missing")
            return proc.poll() is not None
        return st.st_ino != old or proc.poll() is not None

    assert wait_for(published, timeout=60)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
    t = time.monotonic()
    assert ask("git status", "/", {"PATH": "/usr/bin:/bin", "HOME": "/root"}) == (b"run", b"")
    assert time.monotonic() - t < client.READY_TIMEOUT
    assert not (stale and seen), "the stale socket was removed before the new one was in place"
    if dead is not None:
        dead.close()
    assert sorted(os.listdir(os.path.dirname(sock))) == sorted(
        os.path.basename(sock)[: -len(".sock")] + ext for ext in (".sock", ".lock", ".stats"))


def test_a_second_server_for_the_same_socket_leaves_at_once(sock: str) -> None:
    first = start_server(sock)
    second = subprocess.run([sys.executable, "-I", "-m", "guard.serve.server", sock, client.identity()],
                            cwd=REPO, capture_output=True, timeout=60)
    assert second.returncode == 0
    assert first.poll() is None
    assert ask("git status", "/", {"PATH": "/usr/bin:/bin", "HOME": "/root"}) == (b"run", b"")


def test_a_server_for_another_guard_refuses_to_start(sock: str) -> None:
    p = subprocess.run([sys.executable, "-I", "-m", "guard.serve.server", sock, "0" * 16], cwd=REPO,
                       capture_output=True, timeout=60)
    assert p.returncode == 2 and not os.path.exists(sock)


def test_the_server_leaves_when_idle(sock: str) -> None:
    proc = start_server(sock, patch="server.IDLE_SECONDS = 0.5")
    assert proc.wait(timeout=30) == 0
    assert not os.path.exists(sock) and client.server_pid(sock) is None


def test_the_server_leaves_when_its_code_changes(sock: str, tmp_path: Path) -> None:
    marker = tmp_path / "module.py"
    marker.write_text("x = 1\n")
    proc = start_server(sock, patch=f"server.code_files = lambda package: [{str(marker)!r}]")
    assert ask("git status", "/", {"PATH": "/usr/bin:/bin"}) == (b"run", b"")
    marker.write_text("x = 22\n")
    assert ask("git status", "/", {"PATH": "/usr/bin:/bin"}) is None  # not answered by old code
    assert proc.wait(timeout=30) == 0
    assert not os.path.exists(sock)


def test_requests_from_many_callers_at_once_are_all_answered(sock: str) -> None:
    start_server(sock)
    from concurrent.futures import ThreadPoolExecutor

    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "GUARD_TREE": "/workspace"}
    commands = [("git push", "/workspace/app", b"refuse"), ("git status --short | head", "/tmp", b"run")] * 10
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda c: ask(c[0], c[1], env), commands))
    assert [g[0] if g else None for g in got] == [c[2] for c in commands]



def test_a_symlink_repointed_between_requests_is_followed_afresh(sock: str, tmp_path: Path) -> None:
    start_server(sock)
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "app").mkdir(parents=True)
    outside.mkdir()
    link = tmp_path / "link"
    link.symlink_to(outside)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GUARD_TREE": str(tree)}
    assert ask("cd link && git init", str(tmp_path), env) == (b"run", b"")
    link.unlink()
    link.symlink_to(tree / "app")
    action, said = ask("cd link && git init", str(tmp_path), env) or (b"", b"")
    assert action == b"refuse" and said.startswith(b"Refused: git init would create a repository")


def test_forget_empties_the_caches_that_rest_on_the_filesystem() -> None:
    from guard.policy import facts
    from guard.resolve import paths
    from guard.serve import server

    server._CACHES[:] = server._guard_caches()
    paths.real("/tmp")
    facts._where_in("/tmp", ("/workspace",))
    assert paths.real.cache_info().currsize and facts._where_in.cache_info().currsize
    server.forget()
    assert paths.real.cache_info().currsize == 0 and facts._where_in.cache_info().currsize == 0


def _processes_naming(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in cmdline:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("how", ["stop", "kill", "busy-stop"])
def test_no_worker_outlives_the_server(sock: str, how: str) -> None:
    proc = start_server(sock, patch="server.serve_one = lambda conn, *_: True" if how == "busy-stop" else "")
    assert wait_for(lambda: len(_processes_naming(sock)) == 3)
    if how == "busy-stop":  # workers being replaced while the stop arrives
        for _ in range(20):
            ask("true")
    if how == "kill":
        proc.kill()
    else:
        assert client.stop_server(sock)
    proc.wait(timeout=30)
    assert wait_for(lambda: not _processes_naming(sock), timeout=10), _processes_naming(sock)
    assert client.server_pid(sock) is None  # and the lock is free for the next server


def test_a_worker_sets_its_parent_death_signal_without_opening_libc_after_the_fork() -> None:
    """The server looks up libc's prctl before it forks (opening it in each worker cost 0.3 ms
    of its CPU): a worker in which ctypes can open nothing still dies with the server."""
    import ctypes

    from guard.serve import server

    server._libc_prctl()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            def refuse(*_a: object, **_k: object) -> None:
                raise OSError("no library may be opened here")

            ctypes.CDLL = refuse  # type: ignore[assignment, misc]
            server._die_with(parent)
            got = ctypes.c_int(0)
            server._prctl(2, ctypes.byref(got), 0, 0, 0)  # PR_GET_PDEATHSIG
            code = got.value
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == signal.SIGTERM


def test_an_edited_rule_file_is_read_afresh_by_the_next_request(sock: str, tmp_path: Path) -> None:
    start_server(sock)
    mine = tmp_path / "mine.yaml"
    rule = ("rules:\n  - id: no-frob\n    category: publish\n"
            "    message: \"Refused: {what}. It publishes; use the tools.\"\n"
            "    match: {program: %s}\n")
    mine.write_text(rule % "frob")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GUARD_TREE": str(tmp_path / "tree"),
           "GUARD_RULES": str(mine), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = ask("frob x", "/tmp", env)
    assert first == in_process("frob x", "/tmp", env) and first is not None and first[0] == b"refuse"
    mine.write_text(rule % "frab")  # the same file, edited: frob is allowed now, frab refused
    assert ask("frob x", "/tmp", env) == (b"run", b"") == in_process("frob x", "/tmp", env)
    assert (ask("frab x", "/tmp", env) or (b"",))[0] == b"refuse"


FROB_RULE = ("rules:\n  - id: no-frob\n    category: publish\n"
             "    message: \"Refused: {what}. It publishes; use the tools.\"\n"
             "    match: {program: %s}\n")


def _settled_rule_file(tmp_path: Path) -> tuple[Path, str, int, dict[str, str]]:
    """GUARD_RULES naming a rule on ``frob`` in a file untouched for an hour: (file, rule
    template, its mtime, the caller's environment)."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(FROB_RULE % "frob")
    old = mine.stat().st_mtime_ns - 3600 * 10**9
    os.utime(mine, ns=(old, old))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GUARD_TREE": str(tmp_path / "tree"),
           "GUARD_RULES": str(mine), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return mine, FROB_RULE, old, env


def test_a_rule_file_unchanged_for_long_is_reused_and_its_edit_still_seen(sock: str, tmp_path: Path) -> None:
    """Workers reuse the server's rule set while the files' stamps hold (no re-read per request);
    an edit of a file that had been settled for an hour is seen by the next request."""
    mine, rule, old, env = _settled_rule_file(tmp_path)
    start_server(sock)
    for _ in range(3):
        assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    mine.write_text(rule % "frobnicate")
    assert ask("frob x", "/tmp", env) == (b"run", b"")
    assert (ask("frobnicate x", "/tmp", env) or (b"",))[0] == b"refuse"


def test_the_server_learns_a_callers_rule_layering_and_later_workers_reuse_it(sock: str, tmp_path: Path) -> None:
    """A worker names the layering (GUARD_RULES) it had to read; the server loads it, and workers
    forked after that reuse it. Shown by an edit that keeps the file's stamp (same size, mtime put
    back): only a worker that reads the file sees it, and the fresh in-process guard does. Without
    the watch (inotify may be missing): with it, the server reads the files afresh after the edit,
    before or after the next worker is forked, as the machine's load has it."""
    mine, rule, old, env = _settled_rule_file(tmp_path)
    # one waiting worker: the next is forked after learning
    start_server(sock, patch="server.POOL = 1\nserver._rewatch = lambda files, stamp: None")
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    mine.write_text(rule % "frab")
    os.utime(mine, ns=(old, old))
    assert in_process("frob x", "/tmp", env) == (b"run", b"")  # a fresh process reads the edit
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"  # the learned set, not re-read
    mine.write_text(rule % "frab")  # an edit that changes the stamp is seen at once
    assert ask("frob x", "/tmp", env) == (b"run", b"")
    assert (ask("frab x", "/tmp", env) or (b"",))[0] == b"refuse"


def _snapshot(path: Path, body: str) -> None:
    """A shell snapshot of the kind an agent host sources before each command, larger than the
    size the sourced definitions are cached on disk from, whose ``deploy`` function runs ``body``."""
    helpers = [f"_helper_{i} () \n{{ \n    echo {i}\n}}" for i in range(400)]
    path.write_text("\n".join(["# Snapshot file", "unalias -a 2>/dev/null || true", *helpers,
                               f"deploy () \n{{ \n    {body}\n}}", "shopt -s expand_aliases", ""]))


def test_the_server_learns_a_sourced_snapshot_and_its_edit_is_seen_by_the_next_request(sock: str, tmp_path: Path) -> None:
    """A worker names the snapshot definitions it read from the disk cache; the server keeps them,
    so workers forked after that find them in memory. Shown by a disk cache entry changed after
    the server learned it: only a worker that reads the disk would see it. The definitions are
    keyed by the snapshot's content, so an edit that keeps its size and mtime is seen at once."""
    (tmp_path / "tree").mkdir()
    here = str(tmp_path)  # outside the tree: git runs there, but never pushes
    snap = tmp_path / "snapshot-bash-1.sh"
    _snapshot(snap, "git show origin/HEAD")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GUARD_TREE": str(tmp_path / "tree"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")}
    command = f"source {snap} && deploy"
    proc = start_server(sock, patch="server.POOL = 1")  # one waiting worker: the next is forked after learning
    first = _server_children(proc.pid)
    assert ask(command, here, env) == (b"run", b"") == in_process(command, here, env)
    assert wait_for(lambda: _server_children(proc.pid) - first)  # the next worker: forked after learning
    cached = list((tmp_path / "cache" / "guard" / "sourced").glob("*.json"))
    assert len(cached) == 1
    cached[0].write_text(json.dumps([["function", "deploy", "deploy () { git push origin HEAD; }"]]))
    assert ask(command, here, env) == (b"run", b"")  # the learned definitions, not the disk's
    old = snap.stat().st_mtime_ns
    _snapshot(snap, "git push origin HEAD")  # the same size
    os.utime(snap, ns=(old, old))
    action, said = ask(command, here, env) or (b"", b"")
    assert (action, said) == in_process(command, here, env)
    assert action == b"refuse" and said.startswith(b"Refused: git push")


def test_workers_prepare_with_the_snapshot_callers_source_and_still_see_its_edit(sock: str, tmp_path: Path) -> None:
    """A worker names the host snapshot its command sourced, and the workers forked after that
    source it in their pre-touch (the request then finds those pages its own). They read it as
    any request does: an edit that keeps its size and mtime is seen by the next request, and a
    caller sourcing another snapshot makes the later workers prepare with that one."""
    (tmp_path / "tree").mkdir()
    here = str(tmp_path)
    log = tmp_path / "prepared"
    snap, other = tmp_path / "snapshot-bash-1.sh", tmp_path / "snapshot-bash-2.sh"
    _snapshot(snap, "git show origin/HEAD")
    _snapshot(other, "git log -1")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GUARD_TREE": str(tmp_path / "tree"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")}
    patch = (f"server.POOL = 1\nserver.PREP_DELAY = 0.0\n_touch = server._pre_touch\n"
             f"def touch(listener):\n"
             f"    with open({str(log)!r}, 'a') as fh:\n"
             f"        fh.write(f'{{server._prep_snapshot[0]}}\\n')\n"
             f"    return _touch(listener)\n"
             f"server._pre_touch = touch\n")
    start_server(sock, patch=patch)

    def prepared() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    wrapped = f"source {snap} && eval 'deploy' \\< /dev/null && pwd -P >| {tmp_path}/cwd"  # Claude Code's
    assert ask(wrapped, here, env) == (b"run", b"") == in_process(wrapped, here, env)
    assert wait_for(lambda: prepared()[-1:] == [str(snap)])  # the next worker prepared with it
    old = snap.stat().st_mtime_ns
    _snapshot(snap, "git push origin HEAD")  # the same size
    os.utime(snap, ns=(old, old))
    action, said = ask(wrapped, here, env) or (b"", b"")
    assert (action, said) == in_process(wrapped, here, env)
    assert action == b"refuse" and b"git push" in said
    command = f"source {other} && deploy"
    assert ask(command, here, env) == (b"run", b"") == in_process(command, here, env)
    assert wait_for(lambda: prepared()[-1:] == [str(other)])
    assert ask("git status", here, env) == (b"run", b"")  # a command sourcing none: as before
    assert prepared()[-1] == str(other)


def _recording(log: Path) -> str:
    """A server patch: one waiting worker, and each worker writes on ``log`` the rule layerings
    the server's watch vouches for to it (or None)."""
    return (f"server.POOL = 1\nserver.REWATCH_SECONDS = 0.0\n_check = server._package_check\n"
            f"def _logged(files, stamp, vouched):\n"
            f"    with open({str(log)!r}, 'a') as fh:\n"
            f"        fh.write(repr(None if vouched is None else sorted(vouched.layerings)) + '\\n')\n"
            f"    return _check(files, stamp, vouched)\n"
            f"server._package_check = _logged\n")


def test_a_rule_file_the_watch_vouches_for_edited_between_two_requests_is_seen_by_the_next(sock: str, tmp_path: Path) -> None:
    """After a worker names its layering, the server watches its files and vouches for it: the
    workers forked after that do not look at the files. An edit is still seen by the next request,
    whether or not it changes the file's stamp (the watch fires; the server reads the files
    afresh)."""
    mine, rule, old, env = _settled_rule_file(tmp_path)
    log = tmp_path / "vouched.log"
    start_server(sock, patch=_recording(log))
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    assert wait_for(lambda: log.exists() and len(log.read_text().splitlines()) == 2)
    assert str(mine) in log.read_text().splitlines()[1]  # the worker forked after learning
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    mine.write_text(rule % "frab")  # a new stamp
    assert ask("frob x", "/tmp", env) == (b"run", b"") == in_process("frob x", "/tmp", env)
    assert ask("frab x", "/tmp", env) == in_process("frab x", "/tmp", env)
    assert (ask("frab x", "/tmp", env) or (b"",))[0] == b"refuse"
    mine.write_text(rule % "frub")  # the same size, its mtime put back: only a read sees it
    os.utime(mine, ns=(old, old))
    ask("frub x", "/tmp", env)  # the worker forked before the edit stamps the files: it may not
    assert ask("frub x", "/tmp", env) == in_process("frub x", "/tmp", env)  # but the server read them
    assert (ask("frub x", "/tmp", env) or (b"",))[0] == b"refuse"


def _descriptors(pid: int) -> list[str]:
    return sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))


def test_the_servers_descriptors_stay_flat_over_many_edits_and_watches(sock: str, tmp_path: Path) -> None:
    """Each edit makes the server set up a new watch and each worker gets a mounts descriptor of
    its own: none of them is left open in the server."""
    mine, rule, old, env = _settled_rule_file(tmp_path)
    log = tmp_path / "vouched.log"
    proc = start_server(sock, patch=_recording(log))
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    assert wait_for(lambda: log.exists() and len(log.read_text().splitlines()) == 2)
    before = _descriptors(proc.pid)
    for i in range(12):
        name = ("frab", "frub")[i % 2]
        mine.write_text(rule % name)
        ask("true", "/tmp", env)  # the worker forked before the edit
        assert (ask(f"{name} x", "/tmp", env) or (b"",))[0] == b"refuse"
    assert wait_for(lambda: _descriptors(proc.pid) == before), (before, _descriptors(proc.pid))
    assert sum(str(mine) in line for line in log.read_text().splitlines()) > 12  # vouched workers


def test_a_mount_over_the_rule_folder_between_requests_is_seen_by_the_next(sock: str, tmp_path: Path) -> None:
    """A mount changes what a rule path names without any event on the watched files (they are
    still there, under it): the workers' mount poll sees it."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting needs root")
    folder = tmp_path / "rules"
    folder.mkdir()
    mine, rule, old, env = _settled_rule_file(folder)
    log = tmp_path / "vouched.log"
    start_server(sock, patch=_recording(log))
    assert (ask("frob x", "/tmp", env) or (b"",))[0] == b"refuse"
    assert wait_for(lambda: log.exists() and len(log.read_text().splitlines()) == 2)
    assert str(mine) in log.read_text().splitlines()[1]
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(folder)], capture_output=True).returncode:
        pytest.skip("mount not permitted here")
    try:
        mine.write_text(rule % "frab")  # on the mounted filesystem
        assert ask("frob x", "/tmp", env) == (b"run", b"") == in_process("frob x", "/tmp", env)
        assert (ask("frab x", "/tmp", env) or (b"",))[0] == b"refuse"
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_caller_in_another_mount_namespace_is_not_answered(sock: str) -> None:
    start_server(sock)
    code = ("import os, sys\nfrom guard.shell import client\n"
            "print(client.ask([b'-c', b'git status'], '/', {b'PATH': b'/usr/bin'}, start=False))\n")
    p = subprocess.run(["unshare", "-m", sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot make a mount namespace here: {p.stderr.strip()[:200]}")
    assert p.stdout.strip() == "None"
    assert ask("git status", "/", {"PATH": "/usr/bin:/bin"}) == (b"run", b"")  # same namespace: answered


def test_a_stopped_server_is_not_waited_for(sock: str, tmp_path: Path) -> None:
    proc = start_server(sock)
    assert wait_for(lambda: len(_server_children(proc.pid)) == 2)
    frozen = [proc.pid, *_server_children(proc.pid)]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        t = time.monotonic()
        assert ask("git status") is None
        assert time.monotonic() - t < client.READY_TIMEOUT + 1.0
        tree = tmp_path / "tree"
        tree.mkdir()
        env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
        t = time.monotonic()
        p = subprocess.run([guard_bin("guard-shell"), "-c", "git push"], env=env, cwd=tree,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == shell.REFUSED_STATUS and time.monotonic() - t < client.READY_TIMEOUT + 5.0
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
    assert len(_audit(tmp_path / "a.jsonl")) == 1  # decided once, in-process: the worker never got it


def test_a_busy_server_is_waited_for_while_it_answers_others(sock: str) -> None:
    """One worker at a time, each slow to take its connection: callers queue for longer than
    READY_TIMEOUT, but the server's count of answers moves, so each is answered rather than
    falling back to an in-process analysis."""
    patch = ("server.POOL = 1\nimport time\n_serve = server.serve_one\n"
             "def slow(conn, *a):\n    time.sleep(0.4)\n    return _serve(conn, *a)\n"
             "server.serve_one = slow\n")
    start_server(sock, patch=patch)
    ask("true")  # the first worker is up
    from concurrent.futures import ThreadPoolExecutor

    t = time.monotonic()
    with ThreadPoolExecutor(5) as pool:
        replies = list(pool.map(lambda _: ask("git status"), range(5)))
    assert time.monotonic() - t > client.READY_TIMEOUT  # some did wait past the first timeout
    assert all(r is not None for r in replies), replies


def _timeline(log: Path, delay: float, pool: int = 1) -> str:
    """A server patch: ``pool`` waiting workers, PREP_DELAY of ``delay``, and each worker writes
    on ``log`` when it was forked, when it began its pre-touch, and when it sent a reply."""
    return (f"server.POOL = {pool}\nserver.PREP_DELAY = {delay}\nimport os, time\n"
            f"def _note(what):\n"
            f"    with open({str(log)!r}, 'a') as fh:\n"
            f"        fh.write(f'{{os.getpid()}} {{what}} {{time.monotonic()}}\\n')\n"
            f"_worker, _touch, _serve = server._worker, server._pre_touch, server.serve_one\n"
            f"def worker(*a, **k):\n    _note('forked')\n    return _worker(*a, **k)\n"
            f"def touch(listener):\n    _note('pre-touch')\n    return _touch(listener)\n"
            f"def serve(conn, *a):\n    done = _serve(conn, *a)\n    _note('replied')\n    return done\n"
            f"server._worker, server._pre_touch, server.serve_one = worker, touch, serve\n")


def _events(log: Path) -> list[tuple[int, str, float]]:
    return [(int(p), w, float(t)) for p, w, t in (ln.split() for ln in log.read_text().splitlines())]


def test_a_replacement_worker_prepares_only_after_the_command_it_follows_has_had_its_cpu(sock: str, tmp_path: Path) -> None:
    """The first worker pre-touches at once; the one forked to replace it after its reply waits
    PREP_DELAY first (the command the reply let through runs meanwhile, without it on the CPU),
    then pre-touches, and serves the next caller as any worker does."""
    log = tmp_path / "events"
    start_server(sock, patch=_timeline(log, 0.5))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    assert ask("git status", "/", env) == (b"run", b"")
    assert wait_for(lambda: sum(w == "pre-touch" for _, w, _ in _events(log)) == 2)
    ev = _events(log)
    first, second = sorted({p for p, _, _ in ev}, key=lambda p: [t for q, _, t in ev if q == p][0])
    when = {(p, w): t for p, w, t in ev}
    assert when[(first, "pre-touch")] - when[(first, "forked")] < 0.5  # the first: at once
    assert when[(second, "forked")] >= when[(first, "replied")]  # forked after the reply ...
    assert when[(second, "pre-touch")] - when[(first, "replied")] >= 0.5  # ... prepared PREP_DELAY later
    assert ask("git push origin HEAD", "/", env) is not None  # and it serves
    assert wait_for(lambda: (second, "replied") in {(p, w) for p, w, _ in _events(log)})


def test_a_caller_who_comes_while_the_replacement_waits_is_served_at_once(sock: str, tmp_path: Path) -> None:
    """The only worker is a replacement still waiting out its PREP_DELAY: the caller is answered
    without waiting for it to end, and that worker skips its pre-touch."""
    log = tmp_path / "events"
    start_server(sock, patch=_timeline(log, 30.0))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    assert ask("git status", "/", env) == (b"run", b"")
    assert wait_for(lambda: len({p for p, _, _ in _events(log)}) == 2)  # the replacement is forked
    t = time.monotonic()
    assert ask("git status", "/", env) == (b"run", b"")
    assert time.monotonic() - t < 10.0  # not the 30 s delay
    second = [p for p, w, _ in _events(log) if w == "forked"][1]
    assert wait_for(lambda: [w for p, w, _ in _events(log) if p == second] == ["forked", "replied"])  # no pre-touch


def test_a_caller_the_other_waiting_worker_takes_does_not_cost_the_replacement_its_pre_touch(sock: str, tmp_path: Path) -> None:
    """Two waiting workers: while the replacement of the first one waits out its PREP_DELAY,
    the next caller is taken by the other, and the replacement still pre-touches when its delay
    ends (a connection wakes every worker that polls the socket, not only the one that takes it)."""
    log = tmp_path / "events"
    start_server(sock, patch=_timeline(log, 2.0, pool=2))
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    assert wait_for(lambda: sum(w == "pre-touch" for _, w, _ in _events(log)) == 2)
    assert ask("git status", "/", env) == (b"run", b"")
    assert wait_for(lambda: len({p for p, _, _ in _events(log)}) == 3)  # the replacement is forked
    assert ask("git log -1", "/", env) == (b"run", b"")  # during its delay: the other worker's
    third = [p for p, w, _ in _events(log) if w == "forked"][2]
    assert wait_for(lambda: [w for p, w, _ in _events(log) if p == third] == ["forked", "pre-touch"])
    when = {(p, w): t for p, w, t in _events(log)}
    assert when[(third, "pre-touch")] - when[(third, "forked")] >= 2.0


def test_the_idle_clock_starts_at_the_last_request_not_at_a_workers_birth(sock: str) -> None:
    proc = start_server(sock, patch="server.IDLE_SECONDS = 3.0")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    for _ in range(4):  # a request every 2 s keeps it alive past 3 s since any worker started
        time.sleep(2.0)
        assert proc.poll() is None
        assert ask("git status", "/", env) == (b"run", b"")
    assert proc.wait(timeout=30) == 0  # and then it leaves, 3 s after the last one
    assert not os.path.exists(sock)


def test_the_daemon_keeps_no_descriptor_or_ignored_signal_of_its_starter(tmp_path: Path, sock: str) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    gs = guard_bin("guard-shell")
    # fd 3 is the pipe to `cat`; SIGCHLD and SIGTERM are ignored, as a careless caller may leave them
    script = (f"trap '' TERM CHLD; {gs} -c 'git status --short; true' 3>&1 2>/dev/null | cat; echo done")
    t = time.monotonic()
    p = subprocess.run(["bash", "-c", script], env=env, cwd=tree, capture_output=True, text=True, timeout=60)
    assert p.stdout.endswith("done\n") and time.monotonic() - t < 20
    assert wait_for(lambda: client.server_pid(sock) is not None and os.path.exists(sock))
    pid = client.server_pid(sock)
    fds = {os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
    assert not any(f.startswith("pipe:") for f in fds), fds
    status = Path(f"/proc/{pid}/status").read_text()
    ignored = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGCHLD - 1)) and not ignored & (1 << (signal.SIGTERM - 1))
    for _ in range(4):  # workers are replaced: each request is answered (a server that did not
        assert ask("git status") is not None  # replace them would leave it unanswered: None)


def test_workers_that_keep_failing_make_the_server_leave_instead_of_forking_forever(sock: str) -> None:
    code = ("import sys\nfrom guard.serve import server\n"
            "def broken():\n    raise OSError('EMFILE')\n"
            "server._pre_touch = broken\nsys.exit(server.main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-I", "-c", code, sock, client.identity()], cwd=REPO,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not os.path.exists(sock) and client.server_pid(sock) is None


WORKER_PROBE = r'''
import json, os, re._compiler, sys
from guard.serve import server
server.warm_up()
from guard.shell import main as shell
from guard.policy import classify as classifier
compiled = []
real = re._compiler.compile
re._compiler.compile = lambda p, flags=0: compiled.append(str(p)[:60]) or real(p, flags)
conditions = []  # the rules' match blocks compiled for a program name met for the first time
real_cond = classifier.compile_cond
classifier.compile_cond = lambda cond: conditions.append(str(cond)[:60]) or real_cond(cond)
before = set(sys.modules)
env = {"HOME": "/root", "PATH": "/usr/bin:/bin", "GUARD_TREE": "/workspace", "GUARD_AUDIT_LOG": sys.argv[1]}
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
for command in json.loads(sys.argv[2]):
    server.forget()
    shell.guard_command(command, "/workspace/app", shell.parse_args(["-c", command]), env)
print(json.dumps({"modules": sorted(set(sys.modules) - before), "compiled": compiled, "conditions": conditions}))
'''


def test_a_request_imports_no_module_and_compiles_no_pattern_the_warm_up_could_have(tmp_path: Path) -> None:
    """Whatever a request needs is loaded before the fork, refusals (their audit record and its
    redaction) and agent hosts' wrappers included: a worker that imports or compiles pays it on
    every request."""
    commands = [
        "git push origin HEAD",  # refused in the tree: the audit record is built and written
        "git status", "python3 -c 'import os; print(os.getcwd())'",
        'x=$(echo hi); for i in 1 2; do sh -c "echo $x $i" | cat >/dev/null; done; eval "true"',
        "source /tmp/snap.sh && eval 'git commit -m x' \\< /dev/null && pwd -P >| /tmp/cwd",  # Claude Code's
        "curl -H 'Authorization: token ghp_abcdefghijklmnop' https://api.github.com/repos/o/r/pulls -X POST",
        "sed -i 's/a/b/g;3d' f.txt && head -n 5 f.txt | cut -d: -f2 && echo \"x\\\"y\" | base64 -d",
        "expect -c 'spawn git push'; perl -e 'print \"@ARGV\"' a",
    ]
    out = subprocess.run([sys.executable, "-I", "-c", WORKER_PROBE, str(tmp_path / "audit.jsonl"), json.dumps(commands)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["modules"], got["compiled"]) == ([], [])
    assert len((tmp_path / "audit.jsonl").read_text().splitlines()) >= 3  # the refusals were logged


def test_a_request_of_the_programs_agents_run_and_their_hosts_snapshot_builds_no_rule_list(tmp_path: Path) -> None:
    """The rules an invocation of a program can meet are worked out once per program name; the
    warm-up does it for the programs agents run most and for the builtins a host's shell snapshot
    runs around every command, so a request of them does it no more (each new name cost a
    request about 250,000 instructions)."""
    commands = [
        "unalias -a 2>/dev/null || true; alias -- ll='ls -alF'; export PATH=/usr/bin; pwd -P",
        "if ! command -v rg >/dev/null 2>&1; then alias rg='grep -r'; fi",
        "ssh host 'cd /srv && ls -la'", "tail -n 50 log.txt | nl | wc -l", "pip install -e . && pytest -q tests/",
        "nl -ba src/app.py | sed -n '10,40p'", "rsync -a src/ /tmp/x/ && sort f | uniq -c | head",
    ]
    out = subprocess.run([sys.executable, "-I", "-c", WORKER_PROBE, str(tmp_path / "audit.jsonl"), json.dumps(commands)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["conditions"] == []


# --------------------------------------------------------------------------- the launcher's early request


def _run_launcher(args: list[str], env: dict[str, str], cwd: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """bin/guard-shell as its -IS start runs it (guard found on sys.path without `site`)."""
    return subprocess.run([sys.executable, "-I", "-S", *flags, "-c", _launcher_code(), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def _launcher_code() -> str:
    return (f"import sys\nsys.path.insert(0, {str(REPO)!r})\nsys.argv = [{str(REPO / 'bin' / 'guard-shell')!r}, "
            f"*sys.argv[1:]]\nexec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'))")


# What the analysed path of guard-shell must not load (guard.system.sysenv says why): os with what it pulls
# in, __future__ (a file), and the shared libraries only a busy relay or a terminal needs.
NOT_ON_THE_ANALYSED_PATH = ("os", "_collections_abc", "posixpath", "stat", "__future__", "errno", "fcntl", "termios")


def test_the_launcher_asks_once_without_os_and_guard_shell_uses_its_reply(sock: str, tmp_path: Path) -> None:
    start_server(sock)
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    assert ask("true") is not None  # the workers are up
    assert wait_for(lambda: client.answered(sock) == 1)  # counted when the worker is reaped
    before = 1
    ran = _run_launcher(["-c", "x=$(echo hi); echo $x; git --version >/dev/null"], env, tmp_path, "-X", "importtime")
    assert ran.returncode == 0 and ran.stdout == "hi\n", ran.stderr
    imports = [ln.rsplit("|", 1)[1].strip() for ln in ran.stderr.splitlines() if ln.startswith("import time:")]
    assert "_socket" in imports and "guard.act.relay" in imports, imports  # asked, then run under the relay
    assert not set(NOT_ON_THE_ANALYSED_PATH) & set(imports), imports
    assert "guard.engine" not in imports  # answered by the server, not analysed here
    # run on the reply by guard.shell.decide: guard.shell.main's other modes are not loaded
    assert not {"guard.shell.main", "guard.shell.args"} & set(imports), imports
    refused = _run_launcher(["-c", "git push origin HEAD"], env, tree, "-X", "importtime")
    imports = [ln.rsplit("|", 1)[1].strip() for ln in refused.stderr.splitlines() if ln.startswith("import time:")]
    assert not set(NOT_ON_THE_ANALYSED_PATH) & set(imports), imports
    assert not {"guard.shell.main", "guard.shell.args"} & set(imports), imports
    refused.stderr = "".join(ln + "\n" for ln in refused.stderr.splitlines() if not ln.startswith("import time:"))
    assert refused.returncode == shell.REFUSED_STATUS and refused.stderr.startswith("Refused: git push."), refused
    assert [r[0] for r in _audit(tmp_path / "a.jsonl")] == ["git push origin HEAD"]  # logged once
    # one request per command: the launcher's; guard.shell.main did not ask again
    assert wait_for(lambda: client.answered(sock) == before + 2), (client.answered(sock), before)
    time.sleep(0.3)
    assert client.answered(sock) == before + 2


def test_a_served_command_that_fills_its_stderr_pipe_still_gets_the_large_pipe(sock: str, tmp_path: Path) -> None:
    """The relay's pipe starts at the kernel's default and is enlarged once the command fills
    it: bulk output still moves in large rounds, every byte in order."""
    start_server(sock)
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    script = "x=$(echo 1); head -c 4194304 /dev/zero >&2; echo done >&2"
    r, w = os.pipe()
    p = subprocess.Popen([sys.executable, "-I", "-S", "-c", _launcher_code(), "-c", script], env=env, cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=w)
    os.close(w)
    chunks, largest = [], 0
    while True:
        b = os.read(r, 1 << 21)
        if not b:
            break
        chunks.append(b)
        largest = max(largest, len(b))
    os.close(r)
    assert p.wait(timeout=60) == 0
    assert b"".join(chunks) == bytes(4 << 20) + b"done\n"
    assert largest > 1 << 16  # some round carried more than a default pipe holds


def test_without_a_server_the_launcher_starts_one_and_the_command_is_decided_here_once(sock: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    env.pop("GUARD_SERVER", None)
    t = time.monotonic()
    refused = _run_launcher(["-c", "git push origin HEAD"], env, tree)
    assert refused.returncode == shell.REFUSED_STATUS and refused.stderr.startswith("Refused: git push.")
    assert time.monotonic() - t < client.READY_TIMEOUT + 20  # not left waiting for the new server
    assert [r[0] for r in _audit(tmp_path / "a.jsonl")] == ["git push origin HEAD"]
    assert wait_for(lambda: client.server_pid(sock) is not None)
    off = _run_launcher(["-c", "git push origin HEAD"], {**env, "GUARD_SERVER": "0"}, tree)
    assert off.returncode == shell.REFUSED_STATUS
    assert len(_audit(tmp_path / "a.jsonl")) == 2


def test_a_ctrl_c_while_the_launcher_waits_for_a_busy_server_ends_it_like_bash(sock: str, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    start_server(sock, patch="import time\n_serve = server.serve_one\n"
                             f"def slow(conn, *a):\n    open({str(taken)!r}, 'w').close()\n    time.sleep(30)\n"
                             "    return _serve(conn, *a)\nserver.serve_one = slow\n")
    # the launcher as guard-shell's -IS start runs it, told to wait long for READY (a busy server)
    code = (f"import sys\nsys.path.insert(0, {str(REPO)!r})\nimport guard.shell.client as c\nc.READY_TIMEOUT = 60\n"
            f"sys.argv = [{str(REPO / 'bin' / 'guard-shell')!r}, *sys.argv[1:]]\n"
            "exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'))")
    env = {**os.environ, "GUARD_TREE": str(tmp_path), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", code, "-c", "git status"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_for(taken.exists), "no worker took the launcher's connection"
    time.sleep(0.2)
    assert proc.poll() is None  # still waiting for the worker
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT and b"Traceback" not in err, err
    assert not (tmp_path / "a.jsonl").exists()  # nothing was decided
