"""The analysis server: ``python -I -m guard.serve.server SOCKET KEY`` (started by guard-shell).

Start-up: check that this process is the guard the key names, take the lock beside the socket
(a second server for the same key leaves at once), import and warm every stage of the analysis,
freeze the heap, then listen under a name of its own, fork the workers, and rename the socket to
its path: a caller who finds the socket there is answered by a worker already forked.

Requests are answered by forked workers. ``POOL`` of them wait on the socket at any time; each
has already run one analysis after the fork, so the pages a request touches are its own before
the request arrives, not copy-on-write faults it takes. A worker answers one
connection and exits, and the server forks its replacement, so nothing one request does
(environment, working directory, caches) is seen by the next. The worker runs
``guard.shell.main.guard_command`` on the caller's argv, working directory and environment exactly as
guard-shell would in-process (refusals reach the audit log from there) and replies with the
action and the bytes the analysis wrote on stderr.

Before each request a worker would look at every file it relies on (each file of the guard
package, each rule file of the caller's layering): a stat each, near half a request's
instructions. The server instead watches them (``guard.serve.watch``: inotify, set up before it
checks them), and a worker forked from a quiet watch polls it once instead; after any event the
workers look at the files as before, and the server sets up a new watch and reads the files
afresh.

The server leaves, removing its socket, ``IDLE_SECONDS`` after the last request, on SIGTERM,
or when a file of the guard package changed since it started (an upgrade or an edit): the
worker that notices sends no reply, so that command is analysed in-process, and the next
command starts a fresh server.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable

from guard import warmup
from guard.shell import client, wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.serve.watch import Poll, Watch

IDLE_SECONDS = 600.0
BACKLOG = 128
CHILD_TIMEOUT = 30.0
HOME_VARS = ("HOME", "XDG_CACHE_HOME")
MAX_FAILURES = 8  # workers ending in error one after another: something is wrong, leave
POOL = 2  # workers waiting at once: two requests at the same moment are both answered at once

# An agent host's wrapper (Claude Code's, guard/shell/hostwrap.py), unwrapped once for the children.
WRAPPED = "source /tmp/snapshot.sh && eval 'git status' \\< /dev/null && pwd -P >| /tmp/cwd"


def code_files(package: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out.extend(os.path.join(root, f) for f in files if f.endswith((".py", ".json")))
    return sorted(out)


def code_stamp(files: list[str]) -> tuple[tuple[int, int], ...]:
    stamps = []
    for f in files:
        try:
            st = os.stat(f)
            stamps.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamps.append((-1, -1))
    return tuple(stamps)


def _warm_env() -> dict[str, str]:
    """The server's own HOME and PATH (its starter's), so the files a request reads (the git
    config) are read once here; no GUARD_ variables, so no operator rules are loaded."""
    return {k: os.environ[k] for k in ("HOME", "PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME") if k in os.environ}


def warm_up() -> None:
    """Import every stage and run the warm-up commands, then forget path lookups (the tree may
    change while the server lives) and freeze the heap so forked children share it."""
    try:
        _libc_prctl()  # each worker sets its parent-death signal with it
    except (OSError, AttributeError, ImportError):
        pass

    from guard.audit import log
    from guard.context import Context
    from guard.engine import rules_for
    from guard.shell import (  # noqa: F401 - loaded for the children
        hostwrap,
        precheck,
    )

    ctx = Context.from_environ(cwd="/", env=_warm_env(), trees=("/nonexistent",))
    warmup.run(ctx)
    rs = rules_for(ctx)
    _warmed[id(rs)] = rs
    hostwrap.unwrap(WRAPPED)
    # a refusal's audit record, not written: its redaction patterns compile once, here
    log.build_record("refusal", "curl -u me:pw https://x:y@h -H 'Authorization: Bearer abcdefgh123'",
                     cwd="/", env={}, verdict="refuse", category=None, rule=None, tool=None, via=[])
    _CACHES[:] = _guard_caches()
    forget()
    gc.collect()
    gc.freeze()


_CACHES: list[Callable[[], None]] = []


def _guard_caches() -> list[Callable[[], None]]:
    """``cache_clear`` of every functools cache in guard's modules."""
    found = []
    for name, module in list(sys.modules.items()):
        if name == "guard" or name.startswith("guard."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and getattr(value, "__module__", None) == name:
                    found.append(clear)
    return found


def forget() -> None:
    """Empty guard's per-process caches. Some rest on the filesystem (``paths.real`` and what
    is built on it; the rule set loaded once per process), which a one-shot guard-shell may
    treat as fixed but a worker that waited minutes for its request may not; each request
    starts from empty ones, as a fresh process would."""
    for clear in _CACHES:
        clear()
    from guard.resolve import sourced
    from guard.ruleset import load

    load.forget(keep_unchanged=True)  # the rule files are looked at again, as a fresh process would
    sourced.read_afresh()  # what the next request reads afresh is what it tells the server


def serve_one(conn: socket.socket, current: Callable[[], bool] = lambda: True) -> bool:
    """In the forked child: answer one request as guard-shell would, then the child exits.

    READY goes first, so the caller sends its request while this worker checks that the guard
    package is unchanged (``current``: about 100 stat calls) and empties its caches. False when
    the package changed: no reply, and the caller analyses in-process."""
    conn.settimeout(CHILD_TIMEOUT)
    conn.sendall(wire.READY)
    if not current():
        return False
    forget()
    header = wire.recv_exact(conn, 4)
    payload = wire.recv_exact(conn, wire.frame_length(header))
    if _UTF8_FS:
        argv, cwd, env = wire.decode_request_text(payload)
    else:
        argv_b, cwd_b, env_b = wire.decode_request(payload)
        argv, cwd = [os.fsdecode(a) for a in argv_b], os.fsdecode(cwd_b)
        env = {os.fsdecode(k): os.fsdecode(v) for k, v in env_b.items()}
    # The analysis takes the environment as an argument; only these are read from os.environ
    # (by expanduser and the cache folders), so only these are set, not the whole environment.
    for name in HOME_VARS:
        if name in env:
            os.environ[name] = env[name]
        else:
            os.environ.pop(name, None)
    try:
        os.chdir(cwd)
    except OSError:
        pass
    from guard.shell import main as shell

    parsed = shell.parse_args(argv)
    if parsed.mode != "command":
        return True  # only -c is served; the caller analyses the rest itself
    err = os.memfd_create("guard-stderr", 0)
    os.dup2(err, 2)
    _served[:] = [parsed.operand or ""]  # for _tell_afresh: the host snapshot it sourced
    decision = shell.guard_command(parsed.operand or "", cwd, parsed, env)
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    os.lseek(err, 0, os.SEEK_SET)
    said = b"".join(iter(lambda: os.read(err, 1 << 16), b""))
    if decision.action == "refuse":
        action = b"refuse"
    else:
        action = b"plain" if decision.plain else b"run"
    conn.sendall(wire.encode_reply(action, said))
    return True


# os.fsdecode is UTF-8 with surrogateescape here: a request is decoded in one piece
_UTF8_FS = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()) == ("utf-8", "surrogateescape")
STALE_EXIT = 4  # a worker found the guard package changed


_SIGNALS = {signal.SIGTERM, signal.SIGCHLD}  # blocked in the server, waited for with sigwaitinfo
PR_SET_PDEATHSIG = 1


def _worker(listener: socket.socket, lock_fd: int, parent: int, files: list[str],
            stamp: tuple[tuple[int, int], ...], vouched: Vouched | None = None, later: bool = False) -> int:
    """A forked worker: touch the heap once (so the request does not pay for copy-on-write
    faults), wait for one connection, answer it, and report how it ended. A replacement
    (``later``) first lets the command it replaces run (``_after_the_command``)."""
    os.close(lock_fd)  # the lock is the server's alone: it ends when the server does
    _die_with(parent)
    current = _package_check(files, stamp, vouched)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)  # a SIGTERM already sent lands here
    if not (later and _after_the_command(listener)):
        _pre_touch(listener)
    while True:  # the server, not the worker, decides when the wait has been too long
        try:
            conn, _ = listener.accept()
            break
        except InterruptedError:
            continue
    # A request once taken is finished: a stop now would leave the caller to decide again,
    # perhaps after this worker had logged the refusal. The SIGTERM waits until the exit.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    with conn:
        if not serve_one(conn, current):
            return STALE_EXIT  # no reply: the caller analyses in-process
    _tell_afresh()
    return 0


# A datagram socket pair from the workers to the server, one JSON datagram per thing a request
# had to read afresh: a rule layering (GUARD_RULES, GUARD_CONFIG), ``["rules", paths, config]``,
# or the definitions of a sourced file (a host's shell snapshot), ``["sourced", digest, cache
# file]``. The server loads it (LEARN_MAX layerings at most; the sourced definitions are bounded
# by their own memo), so the workers forked after that reuse it instead of reading it again.
_learn: list[socket.socket] = []
LEARN_MAX = 16
RETRY_SECONDS = 5.0  # a layering whose files were too fresh to keep is tried again after this
TRIED_MAX = 256  # sourced files that could not be adopted, not asked again for RETRY_SECONDS
_sourced_retry: dict[tuple, float] = {}


_served: list[str] = []  # in a worker: the command it was asked about


def _tell_afresh(command: str | None = None) -> None:
    """In a worker, after the reply: name the layerings and sourced files this request had to
    read afresh, and the host snapshot its command sourced when it is not the one the server's
    workers prepare with (``command``: the one this worker served)."""
    if not _learn:
        return
    import json

    from guard.resolve import sourced
    from guard.ruleset import load
    from guard.shell import hostwrap

    said = [["rules", list(paths), config] for paths, config in load.read_afresh()]
    said += [["sourced", key, path] for key, path in sourced.read_afresh()]
    command = command if command is not None else (_served[0] if _served else "")
    snapshot = hostwrap.sourced_first(command)
    if snapshot and snapshot.startswith("/") and snapshot != _prep_snapshot[0]:
        said.append(["snapshot", snapshot])
    for message in said:
        try:
            _learn[1].send(json.dumps(message).encode("utf-8", "surrogateescape"))
        except OSError:  # full (the server is behind) or too long: it learns from a later request
            return


def _learn_afresh(tried: dict[tuple, float]) -> bool:
    """In the server: load each layering the workers named, unless it was tried lately (a file
    written just now is not kept on its stamp, so it is tried again later), and keep in memory
    the definitions of each sourced file they named. True when a layering was kept: a new watch
    can vouch for it."""
    import json

    from guard.engine import rule_examples
    from guard.resolve import sourced
    from guard.ruleset import load

    learned = settled = False
    while True:
        try:
            message = _learn[0].recv(1 << 16)
        except OSError:  # BlockingIOError: nothing more
            break
        try:
            kind, *rest = json.loads(message)
            if kind == "snapshot":  # the host snapshot callers source: replacements prepare with it
                _prep_snapshot[0] = str(rest[0])
                continue
            if kind == "sourced":
                key = ("sourced", str(rest[0]), str(rest[1]))
            else:
                paths, config = rest
                key = (tuple(str(p) for p in paths), None if config is None else str(config))
        except (ValueError, TypeError):
            continue
        now = time.monotonic()
        if key[0] == "sourced":
            if _sourced_retry.get(key, 0.0) > now:
                continue
            try:
                kept = sourced.adopt(key[1], key[2])
            except Exception:  # noqa: BLE001 - only speed is at stake
                kept = False
            learned = learned or kept
            if not kept:
                if len(_sourced_retry) >= TRIED_MAX:
                    _sourced_retry.clear()  # only when to retry is forgotten
                _sourced_retry[key] = now + RETRY_SECONDS
            continue
        if tried.get(key, 0.0) > now or (key not in tried and len(tried) >= LEARN_MAX):
            continue
        try:
            kept = load.settle(*key, rule_examples)
            learned = True
            if kept:
                _warm_layering(key)
        except Exception:  # noqa: BLE001 - only speed is at stake
            kept = False
        settled = settled or kept
        tried[key] = float("inf") if kept else now + RETRY_SECONDS
    if learned:
        forget()
        gc.freeze()  # what was learned is shared with the workers, not walked by their collector
    return settled


_warmed: dict[int, object] = {}  # id -> rule set: the sets the warm-up commands ran with
WARMED_MAX = 16


def _warm_layering(key: tuple) -> None:
    """Run the warm-up commands once with the rule set now in effect for this layering (a
    learned one, or one read afresh that changed), so what the stages build from a set on
    first use (each program's candidate rules, their compiled conditions, the program specs)
    is built here, once for every worker, rather than in each request."""
    from guard.context import Context
    from guard.engine import rules_for

    rule_paths, config_path = key
    env = {**_warm_env(), **({"GUARD_CONFIG": config_path} if config_path else {})}
    ctx = Context.from_environ(cwd="/", env=env, trees=("/nonexistent",), rule_paths=rule_paths)
    rs = rules_for(ctx)
    if _warmed.get(id(rs)) is rs:
        return
    warmup.run(ctx)
    if len(_warmed) >= WARMED_MAX:
        _warmed.clear()
    _warmed[id(rs)] = rs


_prctl: Callable[..., int] | None = None


def _libc_prctl() -> Callable[..., int]:
    """libc's ``prctl``, looked up once, in the server: a worker that opened libc through ctypes
    itself paid for the lookup and its copy-on-write faults on every request."""
    global _prctl
    if _prctl is None:
        import ctypes

        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    return _prctl


def _die_with(parent: int) -> None:
    """SIGTERM this worker when the server dies (even of SIGKILL), so no worker outlives it."""
    try:
        (_prctl or _libc_prctl())(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass
    if os.getppid() != parent:
        os._exit(1)


# A replacement is forked when the worker it replaces exits, just after that worker's reply:
# while guard-shell runs the command the reply let through. Its pre-touch would compete for the
# CPUs with that command (and, when commands follow closely, with the next request and
# guard-shell's imports), and lowering its priority instead was worse and cannot be undone
# without CAP_SYS_NICE. So a replacement waits PREP_DELAY first; a caller that comes meanwhile
# is served at once, without the pre-touch. The measurements: bench/results/design-measurements.md.
PREP_DELAY = 0.03
TAKEN_WAIT = 0.001  # a worker waiting in accept takes a new connection within this


def _after_the_command(listener: socket.socket) -> bool:
    """Wait up to PREP_DELAY; True when a caller is waiting that no other worker took (serve
    it now, without the pre-touch). A connection the waiting worker takes wakes this poll too:
    it is looked at again TAKEN_WAIT later, so that one does not cost this worker its pre-touch."""
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    deadline = time.monotonic() + PREP_DELAY
    while (left := deadline - time.monotonic()) > 0:
        try:
            if not poller.poll(left * 1000):
                return False
            time.sleep(TAKEN_WAIT)
            if poller.poll(0):
                return True
        except InterruptedError:
            continue
    return False


# The host snapshot the callers' commands source (Claude Code's wrapper sources one before
# every command): the last one a worker named, which the pre-touch sources too, so the pages
# its definitions and code are on are already the worker's own when a request walks them.
# Each worker reads the file afresh as a request does, so an edit is seen; only the path is
# kept, and the next worker to serve another snapshot replaces it.
_prep_snapshot: list[str | None] = [None]


def _pre_touch(listener: socket.socket) -> None:
    """Run the common path once, so a request finds those pages already copied: the path a
    request takes after forget() (rules looked at again, caches rebuilt), for one command. Only
    while no caller waits: a pending connection ends it at the next step. One command is enough:
    more leave a request's CPU where it is and take CPU from the agents under load."""
    from guard.shell import hostwrap
    from guard.shell import main as shell
    command = warmup.COMMANDS[0]
    if _prep_snapshot[0]:
        command = f"source {hostwrap.quote(_prep_snapshot[0])}\n{command}"
    steps = [forget, lambda: shell.decide(command, cwd="/", env=_warm_env())]
    null = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    os.dup2(null, 2)
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    try:
        for step in steps:
            if poller.poll(0):
                break  # a caller is waiting: serve it now
            step()
    except Exception:  # noqa: BLE001 - only speed is at stake
        pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _spawn_worker(listener: socket.socket, lock_fd: int, files: list[str],
                  stamp: tuple[tuple[int, int], ...], vouched: Vouched | None = None,
                  later: bool = False) -> int:
    parent = os.getpid()
    try:
        mine = vouched.watch.for_worker() if vouched is not None else None
    except OSError:  # no descriptor left: this worker looks at the files itself
        mine = None
    try:
        pid = os.fork()
    finally:
        if mine is not None and os.getpid() == parent:
            os.close(mine[1])  # the worker's own mounts descriptor: the worker keeps its copy
    if pid == 0:
        code = 1
        try:
            code = _worker(listener, lock_fd, parent, files, stamp,
                           vouched.for_worker(mine[0]) if vouched is not None and mine is not None else None,
                           later)
        except BaseException:  # noqa: BLE001 - no reply: the caller analyses in-process
            pass
        finally:
            os._exit(code)
    return pid


# --------------------------------------------------------------------------- the watch


class Vouched:
    """What a watch set up before the last check vouches for while it stays quiet: the guard
    package (``package``) and the rule layerings ``layerings`` kept on their stamps. In a worker,
    ``quiet`` is its own poll (``guard.serve.watch``)."""

    __slots__ = ("watch", "package", "layerings", "quiet")

    def __init__(self, watch: Watch, package: bool, layerings: frozenset[tuple]) -> None:
        self.watch, self.package, self.layerings = watch, package, layerings
        self.quiet: Callable[[], bool] = watch.quiet

    def for_worker(self, poll: Poll) -> Vouched:
        mine = Vouched(self.watch, self.package, self.layerings)
        mine.quiet = poll.quiet
        return mine


REWATCH_SECONDS = 1.0  # a watch that keeps firing (a busy folder) is renewed at most this often


def _rewatch(files: list[str], stamp: tuple[tuple[int, int], ...]) -> Vouched | None:
    """A new watch over the package's files and the files of every rule layering kept on its
    stamp, set up before they are all checked again (the package against ``stamp``, each
    layering read afresh): what it vouches for, or None where inotify is not available."""
    from guard.serve import watch as watching

    w = watching.start()
    if w is None:
        return None
    try:
        return _vouch(w, files, stamp)
    except Exception:  # noqa: BLE001 - the workers look at the files themselves, as without a watch
        w.close()
        return None


def _vouch(w: Watch, files: list[str], stamp: tuple[tuple[int, int], ...]) -> Vouched:
    from guard.engine import rule_examples
    from guard.ruleset import load

    package = w.cover(files) and code_stamp(files) == stamp
    wanted = load.stamped_paths()
    covered = [key for key, paths in wanted.items() if w.cover(paths)]
    load.forget(keep_unchanged=True)
    kept = []
    for key in covered:
        try:
            if load.settle(*key, rule_examples, afresh=True):  # read, not taken on its stamp: an edit may keep it
                kept.append(key)
                _warm_layering(key)
        except Exception:  # noqa: BLE001 - not vouched for: its workers stamp it themselves
            pass
    now = load.stamped_paths()
    layerings = frozenset(k for k in kept if k in now and set(now[k]) <= set(wanted[k]))
    forget()
    gc.freeze()  # a set loaded afresh is shared with the workers, not walked by their collector
    return Vouched(w, package, layerings)


def _package_check(files: list[str], stamp: tuple[tuple[int, int], ...],
                   vouched: Vouched | None) -> Callable[[], bool]:
    """In a worker: the check that the guard package is the one imported (a stat of each file,
    unless the watch vouches for them and is quiet), and the rule layerings the watch vouches
    for handed to the loader."""
    if vouched is None:
        return lambda: code_stamp(files) == stamp
    from guard.ruleset import load

    quiet = vouched.quiet
    load.trust(vouched.layerings, quiet)
    if not vouched.package:
        return lambda: code_stamp(files) == stamp
    return lambda: quiet() or code_stamp(files) == stamp


def serve(sock_path: str, lock_fd: int, files: list[str]) -> None:
    """Listen, keep ``POOL`` workers waiting on the socket, replace each one that ended, and
    leave ``IDLE_SECONDS`` after the last request, when a worker reports a changed package, after
    ``MAX_FAILURES`` workers in a row failed (no fork loop), or on SIGTERM.

    SIGTERM and SIGCHLD stay blocked here and are taken with ``sigwaitinfo``: a handler that
    raised could land between a fork and the bookkeeping of its pid, leaving a worker nobody
    stops."""
    stamp = code_stamp(files)
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    vouched = _rewatch(files, stamp)
    rewatched = time.monotonic()
    stats = _open_stats(sock_path)  # before the socket is found: a caller reads this server's count
    try:
        _learn[:] = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for end in _learn:
            end.setblocking(False)
    except OSError:
        _learn[:] = []
    # Bound and listening under a name of its own, and renamed to its path once the first workers
    # are forked: a caller who finds the socket finds it listening (not refused, as between a bind
    # and a listen at the path) with workers on their way to accept (not left waiting for READY
    # while a loaded machine has yet to run the fork). The rename also replaces a stale socket
    # in one step, so the path is never missing while a server starts.
    _remove_unpublished(sock_path)
    fresh = _unpublished_name(sock_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(fresh)
    finally:
        os.umask(old_umask)
    where = fresh  # the socket's name now: the one removed when the server leaves
    listener.listen(BACKLOG)
    mine = os.stat(fresh).st_ino
    workers: set[int] = set()
    last_request = time.monotonic()
    failures = 0
    answered = 0
    replacing = False  # the first POOL workers are prepared at once; a replacement after its command
    tried: dict[tuple, float] = {}
    try:
        while True:
            if vouched is not None and not vouched.quiet() and time.monotonic() - rewatched >= REWATCH_SECONDS:
                vouched.watch.close()  # the workers forked before keep their copy, and its events
                vouched = _rewatch(files, stamp)
                rewatched = time.monotonic()
            while len(workers) < POOL:
                try:
                    workers.add(_spawn_worker(listener, lock_fd, files, stamp, vouched, replacing))
                except OSError:
                    break
            replacing = True
            if not workers:
                return
            if where != sock_path:
                os.rename(fresh, sock_path)
                where = sock_path
            left = IDLE_SECONDS - (time.monotonic() - last_request)
            info = signal.sigtimedwait(_SIGNALS, max(left, 0.0)) if left > 0 else None
            if info is None:
                return  # IDLE_SECONDS since the last request
            if info.si_signo == signal.SIGTERM:
                return
            served, failed, leave = _reap(workers)
            if served and _learn and _learn_afresh(tried) and vouched is not None:
                vouched.watch.close()
                vouched = _rewatch(files, stamp)  # and it vouches for the layering just learned
                rewatched = time.monotonic()
            if served:
                last_request = time.monotonic()
                answered += served
                _write_stats(stats, answered)
            failures = 0 if served else failures + failed
            if leave or failures >= MAX_FAILURES:
                return
    finally:
        try:
            if os.stat(where).st_ino == mine:
                os.unlink(where)
        except OSError:
            pass
        listener.close()
        if vouched is not None:
            vouched.watch.close()
        if stats >= 0:
            os.close(stats)
        for end in _learn:
            end.close()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass


def _unpublished_name(sock_path: str) -> str:
    """Where the socket is bound before it is renamed to ``sock_path``: beside it (a rename stays
    in the folder), named by this server's pid (sun_path holds 108 bytes: the client keeps
    ``sock_path`` under 100, and a pid has at most 7 digits)."""
    return f"{sock_path}.{os.getpid()}"


def _remove_unpublished(sock_path: str) -> None:
    """Remove the unpublished sockets of servers for this key that died before their rename.
    Only the holder of the lock binds one, so every such name left is dead."""
    folder, _, name = sock_path.rpartition("/")
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for entry in names:
        if entry.startswith(name + ".") and entry[len(name) + 1:].isdigit():
            try:
                os.unlink(f"{folder}/{entry}")
            except OSError:
                pass


def _open_stats(sock_path: str) -> int:
    """The file beside the socket that says how many requests were answered (``guard server
    status``; the load bench checks that no command fell back), or -1."""
    try:
        fd = os.open(client.stats_path(sock_path), os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    except OSError:
        return -1
    _write_stats(fd, 0)
    return fd


def _write_stats(fd: int, answered: int) -> None:
    if fd >= 0:
        try:
            os.pwrite(fd, f"{answered:<20d}\n".encode(), 0)
        except OSError:
            pass


def _reap(workers: set[int]) -> tuple[int, int, bool]:
    """Collect every worker that ended: (how many took a request, how many failed, one says the
    server should leave)."""
    served = 0
    leave = False
    failed = 0
    while workers:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            workers.clear()
            break
        if pid == 0:
            break
        workers.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        served += code == 0
        leave = leave or code == STALE_EXIT
        failed += code not in (0, STALE_EXIT)
    return served, failed, leave


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -I -m guard.serve.server SOCKET KEY", file=sys.stderr)
        return 2
    sock_path, key = args
    for sig in (signal.SIGCHLD, signal.SIGTERM):  # whatever the starter had: the defaults
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    if client.identity() != key or not client.private_dir(os.path.dirname(sock_path)):
        return 2  # not the guard the caller runs, or not a private folder: serve nothing
    import fcntl

    lock_fd = os.open(client.lock_path(sock_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server for this key is up or starting
    os.ftruncate(lock_fd, 0)  # the pid at once: `guard server stop` must never signal an old one
    os.write(lock_fd, f"{os.getpid()}\n".encode())
    os.chdir("/")
    files = code_files(client.package_dir())
    warm_up()
    serve(sock_path, lock_fd, files)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
