"""Asking the analysis server, from guard-shell. Imports only C modules (``posix``, ``_socket``):
``guard.shell.launch`` sends an analysed command's request from here before ``os`` or ``guard.shell.main``
is imported, so the worker analyses it while guard-shell loads the rest (``send`` then
``receive``). Starting and stopping a server import ``os`` when they run.

Where it listens: ``$XDG_RUNTIME_DIR/guard-<uid>/<key>.sock`` (else under ``/tmp``), in a folder
that must be a real directory owned by this user and closed to everyone else. ``key`` names the
interpreter and the guard package the caller runs, so a guard from another install or version
never answers for this one.

Whom it trusts: the process listening must run as this user and be the same interpreter binary,
in the same mount namespace and root (``SO_PEERCRED``, ``/proc/<pid>/exe``, ``ns/mnt``, ``root``). That makes the server as trustworthy as this user's
own processes, which is all guard asks of anything: it is guidance, not the security boundary
(docs/behaviour.md §1). Anything short of a well-formed reply returns None, and the caller analyses the
command itself.
"""

# No `from __future__ import annotations` (a module file read on the launcher's path): the
# annotations naming typing-only types are strings.
import posix
import sys

from guard.shell import wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

OFF_VALUES = ("0", "off", "no", "false")
CONNECT_TIMEOUT = 2.0
# A worker says it has taken the connection (wire.READY) before anything is sent. A server that
# cannot do that within this long is waited for again only while it is answering other requests
# (its count of answers grows: busy, not stopped), for at most BUSY_TIMEOUT in all: falling back
# to an in-process analysis then would cost this caller, and a loaded machine, far more.
READY_TIMEOUT = 1.0
BUSY_TIMEOUT = 10.0
# The server's own analysis gives up after 10 s (guard.shell.main.ANALYSIS_TIMEOUT); past this the
# caller stops waiting and analyses in-process.
REPLY_TIMEOUT = 15.0
HASH_PRIME = 0xFFFFFFFFFFFFFFC5  # 2**64 - 59


def enabled(env: "Mapping[str, str]") -> bool:
    return env.get("GUARD_SERVER", "").strip().lower() not in OFF_VALUES


def package_dir() -> str:
    """The guard package this process runs: its folder as imported. Not resolved (lstat calls on
    every command): the server imports guard from the same place, so it computes the same string."""
    return _absolute(__file__).rpartition("/")[0].rpartition("/")[0]


def _absolute(path: str) -> str:
    """``os.path.abspath`` for the paths used here (no ``..`` is folded: none occurs in them)."""
    return path if path.startswith("/") else posix.getcwd() + "/" + path


def identity(executable: str | None = None, package: str | None = None, checked: str | None = None) -> str:
    """A short key for (interpreter binary, guard package, Python version, uid, the record check's
    setting), in hex. The binary is named by its device and inode (python and python3 are one
    binary): one stat, where resolving its path took a readlink per component. The key only keeps servers of different
    guards apart (the peer check is what trusts one), so it needs no hash module (loading
    ``_sha256`` cost 0.6 ms on every command): the text's bytes as one number, modulo a 64-bit
    prime, in C, where a byte-by-byte hash in Python took 40 us of every analysed command."""
    exe = executable or sys.executable
    try:
        st = posix.stat(exe)
        exe = f"{st.st_dev}:{st.st_ino}"
    except (OSError, ValueError):
        pass  # no such binary: its path, as given
    # a test suite's guards, whose records are checked (guard/record.py), get a server of their
    # own: ``checked`` is GUARD_CHECK_RECORDS of the environment the server is for (this one's)
    if checked is None:
        checked = posix.environ.get(b"GUARD_CHECK_RECORDS", b"").decode("latin-1")
    return short_hash("\0".join([exe, package or package_dir(), sys.version, str(posix.getuid()), checked]))


def short_hash(text: str) -> str:
    """16 hex digits from ``text``: its UTF-8 bytes (and a final 1, so trailing NULs count) as a
    little-endian number, modulo the largest 64-bit prime. Not for adversaries: it names files."""
    data = text.encode("utf-8", "surrogateescape") + b"\x01"
    return f"{int.from_bytes(data, 'little') % HASH_PRIME:016x}"


def runtime_dir(env: "Mapping[str, str]") -> str | None:
    """This user's private folder for server sockets, created if missing; None when the folder
    is not a directory of ours that nobody else can enter (then no server is used)."""
    base = env.get("XDG_RUNTIME_DIR") or ""
    if not base.startswith("/") or not _is_dir(base):
        base = "/tmp"
    path = f"{base.rstrip('/')}/guard-{posix.getuid()}"
    if private_dir(path):
        return path
    try:
        posix.mkdir(path, 0o700)
    except OSError:
        return None
    return path if private_dir(path) else None


def _is_dir(path: str) -> bool:
    try:
        return posix.stat(path).st_mode & 0o170000 == 0o040000  # stat.S_ISDIR without stat
    except (OSError, ValueError):
        return False


def private_dir(path: str) -> bool:
    try:
        st = posix.lstat(path)
    except (OSError, ValueError):
        return False
    is_dir = st.st_mode & 0o170000 == 0o040000
    return is_dir and st.st_uid == posix.getuid() and not st.st_mode & 0o077


def socket_path(env: "Mapping[str, str]", key: str | None = None) -> str | None:
    folder = runtime_dir(env)
    if folder is None:
        return None
    path = f"{folder}/{key or identity(checked=env.get('GUARD_CHECK_RECORDS', ''))}.sock"
    return path if len(path.encode()) < 100 else None  # sun_path holds 108 bytes


class Pending:
    """A request sent to a worker that has taken it (``send``): its reply is read by ``receive``."""

    __slots__ = ("sock",)

    def __init__(self, sock: object) -> None:
        self.sock = sock

    def close(self) -> None:
        self.sock.close()  # type: ignore[attr-defined]


def ask(argv: list[bytes], cwd: str, env: dict[bytes, bytes], *, start: bool = True) -> tuple[bytes, bytes] | None:
    """The server's (action, stderr) for a guard-shell started with ``argv`` in ``cwd`` with
    ``env``; None when there is no trustworthy answer (after starting a server for next time,
    when ``start`` and none is listening)."""
    import os  # a test or a host may have changed os.environ since the start

    return receive(send(argv, cwd, env, os.environ, start=start))


def send(argv: list[bytes], cwd: str, env: dict[bytes, bytes], where: "Mapping[str, str]", *,
         start: bool = True) -> Pending | None:
    """Connect, check the listener, wait for a worker to take the connection, and send the
    request; None when no trustworthy worker took it (nothing was sent then, so no worker acts on
    this command). ``where`` is this process's own environment, as text: where its server listens."""
    import _socket

    path = socket_path(where)
    if path is None:
        return None
    try:
        request = wire.encode_request(argv, cwd.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()), env)
    except wire.WireError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            if start:
                start_server(path)
            sock.close()
            return None
        if not trusted_peer(sock) or not _ready(sock, path):
            sock.close()
            return None
        sock.settimeout(REPLY_TIMEOUT)
        sock.sendall(request)
    except (OSError, wire.WireError):
        sock.close()
        return None
    return Pending(sock)


def receive(pending: Pending | None) -> tuple[bytes, bytes] | None:
    """The reply to a request ``send`` sent, or None; the connection is closed either way."""
    if pending is None:
        return None
    sock = pending.sock
    try:
        header = wire.recv_exact(sock, 4)
        payload = wire.recv_exact(sock, wire.frame_length(header))
        return wire.decode_reply(payload)
    except (OSError, wire.WireError):
        return None
    finally:
        pending.close()


def text_env(env: "Mapping[bytes, bytes]") -> dict[str, str]:
    """The variables of a bytes environment (``posix.environ``) that say whether, where and for
    which setting of the record check a server listens, as text."""
    return {name: env[key].decode("utf-8", "surrogateescape")
            for name, key in (("XDG_RUNTIME_DIR", b"XDG_RUNTIME_DIR"), ("GUARD_SERVER", b"GUARD_SERVER"),
                              ("GUARD_CHECK_RECORDS", b"GUARD_CHECK_RECORDS"))
            if key in env}


def _ready(sock: object, path: str) -> bool:
    """Wait for a worker's READY: READY_TIMEOUT at a time, again while the server's count of
    answers moves (it is busy), up to BUSY_TIMEOUT."""
    waited = 0.0
    seen = answered(path)
    while True:
        sock.settimeout(READY_TIMEOUT)  # type: ignore[attr-defined]
        try:
            return sock.recv(1) == wire.READY  # type: ignore[attr-defined]
        except TimeoutError:
            waited += READY_TIMEOUT
            now = answered(path)
            if waited >= BUSY_TIMEOUT or now is None or now == seen:
                return False  # stopped or stuck: decide in-process
            seen = now


def trusted_peer(sock: object) -> bool:
    """The listener runs as this user, is the interpreter this process runs, and sees the same
    filesystem."""
    import _socket

    try:
        cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # type: ignore[attr-defined]
        pid = int.from_bytes(cred[0:4], sys.byteorder)
        uid = int.from_bytes(cred[4:8], sys.byteorder)
        if uid != posix.getuid() or pid <= 0:
            return False
        # the same interpreter binary, seeing the same filesystem (mount namespace and root):
        # a server in another sandbox would read other scripts, symlinks and rules
        for theirs, ours in ((f"/proc/{pid}/exe", sys.executable), (f"/proc/{pid}/ns/mnt", "/proc/self/ns/mnt"),
                             (f"/proc/{pid}/root", "/proc/self/root")):
            a, b = posix.stat(theirs), posix.stat(ours)
            if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                return False
    except (OSError, ValueError):
        return False
    return True


def lock_path(sock_path: str) -> str:
    return sock_path[: -len(".sock")] + ".lock"


def stats_path(sock_path: str) -> str:
    return sock_path[: -len(".sock")] + ".stats"


def answered(sock_path: str) -> int | None:
    """How many requests the running server has answered since it started, or None."""
    return _read_number(stats_path(sock_path))


def _read_number(path: str) -> int | None:
    """The number a small file of the server's starts with (its pid, its count), or None."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(32).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def server_running(sock_path: str) -> bool:
    """Whether a server holds the lock for this socket (it does for as long as it lives)."""
    import fcntl
    import os

    try:
        fd = os.open(lock_path(sock_path), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def start_server(sock_path: str) -> bool:
    """Start a detached server for ``sock_path`` unless one is already starting. Never raises;
    the caller does not wait for it (this command is analysed in-process)."""
    import os

    try:
        if server_running(sock_path):
            return False
        argv = [sys.executable, "-I", "-m", "guard.serve.server", sock_path, identity()]
        # the caller's guard settings are its own, not the server's; the record check goes along
        env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_") or k == "GUARD_CHECK_RECORDS"}
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked child
            try:
                os.setsid()
                if os.fork():
                    os._exit(0)
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                # Nothing of the starting command may live on in the daemon: an inherited pipe
                # end would keep its reader waiting for EOF for the server's whole life, and an
                # inherited ignored SIGCHLD or SIGTERM would break the server's own bookkeeping.
                os.closerange(3, 1 << 20)
                _default_signals()
                os.chdir("/")
                os.execve(sys.executable, argv, env)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        return True
    except OSError:
        return False


def _default_signals() -> None:
    """Every signal back to its default action and none blocked (both survive execve)."""
    import _signal

    for sig in _signal.valid_signals():
        if sig in (_signal.SIGKILL, _signal.SIGSTOP):
            continue
        try:
            _signal.signal(sig, _signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    _signal.pthread_sigmask(_signal.SIG_SETMASK, set())


def server_pid(sock_path: str) -> int | None:
    """The pid of the server holding this socket's lock, or None when none is running."""
    if not server_running(sock_path):
        return None
    return _read_number(lock_path(sock_path))


def stop_server(sock_path: str, wait: float = 5.0) -> bool:
    """Ask the server for ``sock_path`` to leave (SIGTERM) and wait for it; True if none is left."""
    import os
    import time

    pid = server_pid(sock_path)
    if pid is None:
        return True
    try:
        os.kill(pid, 15)
    except OSError:
        return not server_running(sock_path)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not server_running(sock_path):
            return True
        time.sleep(0.02)
    return False


def main(argv: list[str]) -> int:
    """``guard server status|stop``: where this guard's server listens, and whether it runs."""
    import os

    if argv not in (["status"], ["stop"]):
        print("guard: usage: guard server status|stop", file=sys.stderr)
        return 2
    path = socket_path(os.environ)
    if path is None:
        print("guard: server: no private runtime folder (XDG_RUNTIME_DIR or /tmp/guard-<uid>)", file=sys.stderr)
        return 1
    if argv == ["stop"]:
        if stop_server(path):
            print("guard: server: stopped")
            return 0
        print("guard: server: still running after 5 s", file=sys.stderr)
        return 1
    pid = server_pid(path)
    state = f"running, pid {pid}, {answered(path) or 0} requests answered" if pid else (
        "not running (the next analysed command starts it)")
    if not enabled(os.environ):
        state += "; GUARD_SERVER is off, so guard-shell does not use it"
    print(f"socket: {path}\nserver: {state}")
    return 0
