"""Run a program with its stderr relayed through the guard (docs/behaviour.md §5).

Every byte the program writes to stderr reaches the guard's own stderr unchanged and in order,
and is shown to a *sink* (the annotator) that looks at line tails only. stdin and stdout are the
program's own: the child inherits them. How the bytes travel depends on what stderr is:

- a pipe, a socket, or a file that is also stdout: the child writes to a pipe and the guard
  copies each read (one ``os.read`` of up to 1 MiB, one ``os.write``) as soon as it arrives;
- a terminal: the same through a pty, so the command still sees a terminal;
- a regular file of its own, not opened for appending: the child writes to the file itself, at
  full speed, and a second thread reads back what it wrote (from the offset its first byte
  lands at) for the sink; an appended file may have other writers, so it is relayed as a pipe;
- /dev/null (or closed): nothing can be read there, annotations included, so the child simply
  inherits it and nothing is relayed.

Public entry points
-------------------
``run(argv, env=None, *, cwd=None, cwd_in_tree=None, annotate=True, command=None,
programs=None, mirror_signal=False, verdict=None) -> int``
    Run ``argv`` (PATH looked up in ``env``) in the current directory with ``env`` (default
    ``os.environ``). Returns the status a shell would report: the exit code, or 128+N when the
    program died of signal N (127 not found, 126 not executable). With ``mirror_signal=True`` a
    death by signal is mirrored: after the annotations are written the guard kills itself with
    the same signal (core dumps disabled first), so its parent sees what it would have seen
    without the guard; ``run`` returns only if that signal did not end the process.

Nesting: the relay that annotates sets ``GUARD_ANNOTATING=1`` in the child's environment. A
``run`` whose ``env`` already holds it (a guard inside a guard) does not relay at all: the child
inherits stderr and the outermost relay, which sees every byte anyway, is the one that
annotates. As a second guard (for an environment scrubbed in between), an annotation line that
already passed through the stream is not appended again.

Signals: SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM and SIGWINCH sent to the
guard with kill(2) are forwarded to the child. Signals the terminal generates (^C, ^\\, hangup,
resize) already reach the child, which stays in the guard's process group, so they are not sent
twice. Stop/continue signals keep their default action, so ^Z stops the guard and the child
together.

After the child exits the relay drains what is left. If a background process the command
started still holds stderr open 0.2 s later, a small forked copier keeps relaying its bytes until
it closes them, so the guard returns at once and that process never gets SIGPIPE.
"""

# No `from __future__ import annotations`: that import reads a file on every analysed command;
# annotations that name typing-only types are strings instead.
import _thread
import posix
import select
import sys

from guard.system import sysenv

try:  # built from guard/_spawn.c; imported with this module, while the analysis server works
    from guard import _spawn
except ImportError:  # no C compiler at install: setpriv starts the child instead
    _spawn = None  # type: ignore[assignment]

try:  # the C module: `signal` imports enum (~3-4 ms), and this runs on every analysed command
    import _signal as signal
except ImportError:  # pragma: no cover - other Pythons
    import signal  # type: ignore[no-redef]

ENOEXEC = 8  # errno's, without importing errno

TYPE_CHECKING = False  # typing itself costs ~2 ms to import; the checkers set this True

if TYPE_CHECKING:  # the hot path does not pay for typing's runtime pieces
    from collections.abc import Callable, Collection, Mapping
    from typing import Any, Protocol

MARKER = "GUARD_ANNOTATING"
READ_SIZE = 1 << 20
PIPE_SIZE = 1 << 20
PIPE_DEFAULT = 1 << 16  # a new pipe's capacity on Linux
DRAIN_GRACE = 0.2
# A read this large means the command writes in bulk: from then on a pipe to a pipe is spliced.
BULK_MIN = 256 << 10
SPLICE_F_NONBLOCK = 2
# In bulk mode the guard waits between rounds for about BULK_FILL bytes to gather, judging by
# how fast the last round's came, so it wakes once per few hundred KiB rather than per write;
# never longer than BULK_PAUSE (a line is at most that much later), and not at all when the
# wait would be shorter than BULK_PAUSE_MIN. The command's pipe holds PIPE_SIZE: waiting until
# it is full would stop the command (a fixed 1 ms wait held a 4 GB/s writer to about 1 GB/s).
BULK_FILL = 256 << 10
BULK_PAUSE = 0.001
BULK_PAUSE_MIN = 0.00002

_FORWARDED = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTERM,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGWINCH,
)
_STOP = signal.SIGRTMAX  # private: tells the forwarding thread to end
_SI_KERNEL = 0x80


if TYPE_CHECKING:

    class Sink(Protocol):
        def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
            """Look at ``data[:n]`` (the relay reuses its buffer: copy what must be kept)."""

        def finish(self, status: int) -> bytes: ...


# --------------------------------------------------------------------------- public API


def run(
    argv: list[str],
    env: "Mapping[str, str] | None" = None,
    *,
    cwd: str | None = None,
    cwd_in_tree: bool | None = None,
    annotate: bool = True,
    command: str | None = None,
    programs: "Collection[str] | None" = None,
    mirror_signal: bool = False,
    verdict: object | None = None,
    exec_path: str | None = None,
) -> int:
    """Run ``argv`` under the stderr relay; see the module docstring. ``verdict`` is the
    analysis's verdict on ``command`` when the caller has it: the annotator takes the programs,
    their argv and whether the command works in the tree from it instead of analysing again.
    ``exec_path``: the program ``argv[0]`` names, found already by the real shell's own search
    (``guard.shell.simple_exec``); it dies with the guard, as the real shell would."""
    env_map = dict(sysenv.environ() if env is None else env)
    sink_factory: Callable[[], Sink] | None = None
    child_env = env_map
    target = stderr_target()
    if annotate and annotates(env_map.get(MARKER) == "1", target):
        child_env = dict(env_map)
        child_env[MARKER] = "1"
        here = cwd or _getcwd(env_map)

        def sink_factory() -> "Sink":
            from guard.act.prefilter import sink_for_run

            return sink_for_run(  # type: ignore[no-any-return]
                argv,
                env_map,
                cwd=here,
                cwd_in_tree=cwd_in_tree,
                command=command,
                programs=programs,
                verdict=verdict,
            )

    status, sig = _run(argv, child_env, sink_factory, target, exec_path)
    if mirror_signal and sig:
        die_like(sig)
    return status


def annotates(nested: bool, target: str | None = None) -> bool:
    """Whether ``run`` relays and annotates stderr: not under a guard that already does
    (``nested``: the marker is set) nor when stderr is /dev/null or closed (``target``, default
    this process's stderr). When it does not, the child simply inherits stderr, and exec'ing it
    instead is the same run, one process fewer."""
    return not nested and (target or stderr_target()) not in ("null", "closed")


def die_like(sig: int) -> None:
    """End this process with signal ``sig`` (as the child did); return if it does not end it."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, ValueError, OSError):
        pass
    try:
        sys.stdout.flush()
    except Exception:
        pass
    if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be caught or reset
        try:
            signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        except (OSError, ValueError):
            return
    try:
        posix.kill(posix.getpid(), sig)
    except OSError:
        return


# --------------------------------------------------------------------------- machinery


def _getcwd(env: "Mapping[str, str]") -> str:
    try:
        return posix.getcwd()
    except OSError:
        return env.get("PWD") or "/"


def _resolve(program: str, env: "Mapping[str, str]") -> str | None:
    if "/" in program:
        return program
    import os  # not on guard-shell's path: the real shell is named by its path

    path = env.get("PATH", os.defpath)
    for d in path.split(os.pathsep):
        cand = os.path.join(d or ".", program)
        if os.path.isfile(cand) and posix.access(cand, posix.X_OK):
            return cand
    return None


def _err(msg: str) -> None:
    try:
        posix.write(2, ("guard: " + msg + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def _status(wstatus: int) -> tuple[int, int]:
    if posix.WIFSIGNALED(wstatus):
        sig = posix.WTERMSIG(wstatus)
        return 128 + sig, sig
    if posix.WIFEXITED(wstatus):
        return posix.WEXITSTATUS(wstatus), 0
    return 1, 0


def _stderr_usable() -> bool:
    try:
        posix.fstat(2)
        return True
    except OSError:
        return False


def _native_spawn() -> "Callable[..., int] | None":
    """``guard._spawn.spawn`` (a child that dies with the guard, started in one step), or None
    where the extension was not built."""
    return None if _spawn is None else _spawn.spawn


def _pdeathsig_wrapper() -> str | None:
    """util-linux's setpriv, when the machine has it and ``guard._spawn`` was not built (Python
    has no prctl of its own)."""
    for cand in ("/usr/bin/setpriv", "/bin/setpriv"):
        if posix.access(cand, posix.X_OK):
            return cand
    return None


def stderr_target() -> str:
    """What this process's stderr is: ``"tty"``, ``"null"`` (/dev/null), ``"file"`` (a regular
    file that is not also stdout), ``"stream"`` (a pipe, a socket, a file shared with stdout …)
    or ``"closed"``."""
    try:
        st = posix.fstat(2)
    except OSError:
        return "closed"
    kind = st.st_mode & 0o170000  # stat.S_IFMT without importing stat
    if kind == 0o020000:
        if st.st_rdev == posix.makedev(1, 3):
            return "null"
        return "tty" if posix.isatty(2) else "stream"
    if kind == 0o100000:
        try:
            out = posix.fstat(1)
        except OSError:
            return "file"
        if (out.st_dev, out.st_ino) != (st.st_dev, st.st_ino):
            return "file"
    return "stream"


def _open_follow() -> tuple[int, int] | None:
    """A read descriptor on the file stderr writes to and the offset its next byte lands at, or
    None when the file cannot be read back, is opened for appending (other processes append to
    such logs too: ``2>>shared.log``) or holds bytes past that offset: what the follower would
    read there is not this command's."""
    try:
        import fcntl

        if fcntl.fcntl(2, fcntl.F_GETFL) & posix.O_APPEND:
            return None
        start = posix.lseek(2, 0, 1)  # SEEK_CUR
        if posix.fstat(2).st_size != start:
            return None  # old bytes lie past the offset (``2<>file``): they are not this command's
        rfd = posix.open("/proc/self/fd/2", posix.O_RDONLY | posix.O_CLOEXEC)
    except (OSError, ImportError):
        return None
    try:
        a, b = posix.fstat(rfd), posix.fstat(2)
    except OSError:
        posix.close(rfd)
        return None
    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
        posix.close(rfd)
        return None
    return rfd, start


def _run(
    argv: list[str],
    env: "Mapping[str, str]",
    sink_factory: "Callable[[], Sink] | None",
    target: str = "stream",
    exec_path: str | None = None,
) -> tuple[int, int]:
    if not argv:
        _err("annotate: no program given")
        return 2, 0
    path = exec_path or _resolve(argv[0], env)
    if path is None:
        _err(f"{argv[0]}: command not found")
        return 127, 0
    spawn_path, spawn_argv = path, argv
    # The program dies with the guard, as it would if the guard had exec'd it: a SIGKILL to the
    # guard must not leave the real shell running on. guard._spawn asks for that itself
    native = _native_spawn()
    reaper = None if native else _pdeathsig_wrapper()
    if reaper and (argv[0] == path or exec_path):
        # (setpriv sets PR_SET_PDEATHSIG, which survives its exec of the program; the program's
        # argv is unchanged: setpriv's PATH search finds the ``exec_path`` the real shell's
        # search found).
        spawn_path, spawn_argv = reaper, [reaper, "--pdeathsig", "KILL", "--", *argv]
    relay = sink_factory is not None and _stderr_usable()
    tty = relay and posix.isatty(2)
    rfd = wfd = -1
    follow = _open_follow() if relay and target == "file" else None
    if follow is not None:
        relay = False  # the program writes to the file itself; a follower reads what it wrote
    if relay:
        if tty:
            rfd, wfd = _open_pty()
        else:
            rfd, wfd = posix.pipe()  # enlarged to PIPE_SIZE once the command fills it (_relay)
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        # inherited ignored, it would have the kernel reap the child unseen: its status lost
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    fwd = _Forwarder(tty_fd=rfd if tty else -1)
    fwd.block()
    try:
        # bash unblocks SIGCHLD before it execs a program, so a program run in its place gets
        # it unblocked
        mask = fwd.original_mask - {signal.SIGCHLD} if exec_path else fwd.original_mask
        try:
            if native is not None:
                pid = _start_native(native, path, argv, env, wfd if relay else -1, mask,
                                    via_sh=argv[0] == path or bool(exec_path))
            else:
                pid = posix.posix_spawn(
                    spawn_path,
                    spawn_argv,
                    env,
                    file_actions=[(posix.POSIX_SPAWN_DUP2, wfd, 2)] if relay else [],
                    setsigmask=mask,
                    setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                )
        except OSError as e:
            _err(f"{argv[0]}: {e.strerror or e}")
            return (127 if isinstance(e, FileNotFoundError) else 126), 0
        finally:
            if wfd >= 0:
                posix.close(wfd)
                wfd = -1
        fwd.start(pid)
        follower = None
        try:
            if follow is not None:
                assert sink_factory is not None
                follower = _Follower(follow[0], follow[1], _LazySink(sink_factory))
                follow = None  # the follower owns the descriptor
            if relay:
                assert sink_factory is not None
                tail = _relay(rfd, pid, _LazySink(sink_factory))
                rfd = -1  # _relay owns and closes it
            else:
                tail = None
            wstatus = _wait(pid)
            if follower is not None:
                tail = follower.finish()
                follower = None
        except BaseException:
            _kill_quietly(pid)
            if follower is not None:
                follower.finish()
            raise
        status, sig = _status(wstatus)
        if tail is not None:
            extra = tail.finish(status)
            if extra:
                _write_all(2, extra, None)
        return status, sig
    finally:
        if rfd >= 0:
            posix.close(rfd)
        if wfd >= 0:
            posix.close(wfd)
        if follow is not None:
            posix.close(follow[0])
        fwd.stop()


def _start_native(native: "Callable[..., int]", path: str, argv: list[str], env: "Mapping[str, str]", fd: int,
                  mask: "Collection[int]", via_sh: bool) -> int:
    """Start ``path`` with ``guard._spawn``: ``fd`` (unless -1) as its stderr, ``mask`` blocked,
    SIGPIPE and SIGXFSZ at their defaults, killed when the guard dies. A file with no ``#!``
    line (ENOEXEC) runs with /bin/sh when ``via_sh``, as setpriv's execvp, which this replaces,
    ran it (and bash runs it)."""
    enc = sysenv.fsencode
    exe, args = enc(path), [enc(a) for a in argv]
    envp = [enc(k) + b"=" + enc(v) for k, v in env.items()]
    rest = (fd, sorted(mask), (signal.SIGPIPE, signal.SIGXFSZ), signal.SIGKILL)
    try:
        return native(exe, args, envp, *rest)
    except OSError as e:
        if e.errno != ENOEXEC or not via_sh:
            raise
    return native(b"/bin/sh", [b"/bin/sh", exe, *args[1:]], envp, *rest)


def _wait(pid: int) -> int:
    while True:
        try:
            _, wstatus = posix.waitpid(pid, 0)
            return wstatus
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue


def _kill_quietly(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            posix.kill(pid, sig)
        except OSError:
            return
        try:
            if posix.waitpid(pid, posix.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        import time

        time.sleep(0.1)
    try:
        posix.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _open_pty() -> tuple[int, int]:
    import fcntl
    import termios

    master, slave = posix.openpty()
    try:
        attrs = termios.tcgetattr(2)
        attrs[1] &= ~termios.OPOST  # the outer terminal does output processing, once
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    except termios.error:
        pass
    try:
        size = fcntl.ioctl(2, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    except OSError:
        pass
    return master, slave


def _copy_winsize(dst: int) -> None:
    try:
        import fcntl
        import termios

        size = fcntl.ioctl(2, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(dst, termios.TIOCSWINSZ, size)
    except OSError:
        pass


class _LazySink:
    """Builds the real sink on the first bytes, so a silent command never loads the rules."""

    def __init__(self, factory: "Callable[[], Sink]") -> None:
        self._factory = factory
        self._sink: Sink | None = None
        self.written = 0
        self.last = b"\n"
        self.dead = False

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        if self.dead:
            return
        if self._sink is None:
            try:
                self._sink = self._factory()
            except Exception as e:  # never let the annotator break the command
                self.dead = True
                _err(f"annotations disabled: {e}")
                return
        try:
            self._sink.feed(data, n)
        except Exception as e:
            self.dead = True
            _err(f"annotations disabled: {e}")

    def finish(self, status: int) -> bytes:
        if self._sink is None or self.dead:
            return b""
        try:
            out = self._sink.finish(status)
        except Exception as e:
            _err(f"annotations disabled: {e}")
            return b""
        if out and self.written and self.last != b"\n":
            out = b"\n" + out
        return out


def _write_all(fd: int, data: bytes | memoryview, state: list[bool] | None) -> None:
    """Write everything; on a broken output mark ``state[0]`` and drop the rest silently."""
    if state is not None and state[0]:
        return
    view = memoryview(data)
    while view:
        try:
            n = posix.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        except OSError:
            if state is not None:
                state[0] = True
            return
        view = view[n:]


def _relay(rfd: int, pid: int, sink: "_LazySink") -> "_LazySink":
    broken = [False]
    try:
        pidfd = posix.pidfd_open(pid)
    except (OSError, AttributeError):
        pidfd = -1
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    if pidfd >= 0:
        poller.register(pidfd, select.POLLIN)
    deadline: float | None = None
    # One preallocated buffer (os.read would allocate a fresh one each time), as large as the pipe:
    # a default pipe's size at first, READ_SIZE once the pipe is enlarged (zeroing 1 MiB up front
    # cost 1.1M instructions and 256 page faults on every command)
    buf = bytearray(PIPE_DEFAULT)
    view = memoryview(buf)
    bulk: _PipeTee | None = None
    tried_bulk = grown = False
    import time

    try:
        while True:
            timeout = None
            if deadline is not None:
                timeout = max(0, int((deadline - time.monotonic()) * 1000))
            events = poller.poll(timeout)
            got_data = False
            for fd, _ev in events:
                if fd == pidfd:
                    poller.unregister(pidfd)
                    deadline = time.monotonic() + DRAIN_GRACE
            for fd, _ev in events:
                if fd != rfd:
                    continue
                try:
                    n = bulk.move(rfd, broken) if bulk is not None else posix.readv(rfd, [buf])
                except OSError as e:
                    if isinstance(e, (InterruptedError, BlockingIOError)):  # EINTR, EAGAIN
                        continue
                    n = 0  # EIO: the pty has no writer left
                if not n:
                    return sink
                got_data = True
                data = buf if bulk is None else bulk.buf  # where this round's bytes are
                if bulk is None:
                    _write_all(2, view[:n], broken)
                    if n >= PIPE_DEFAULT and not grown:
                        # the command filled a default-sized pipe: it writes in bulk. Enlarged
                        # now rather than at the start, so a command that prints little never
                        # loads fcntl (a shared library: 0.2 ms)
                        grown = True
                        _set_pipe_size(rfd, PIPE_SIZE)
                    if n >= BULK_MIN and not tried_bulk and not broken[0]:
                        tried_bulk = True
                        bulk = _PipeTee.open(rfd)  # from the next round on
                sink.written += n
                sink.last = data[n - 1 : n]
                sink.feed(data, n)
                if grown and len(buf) < READ_SIZE:  # the sink has seen this round: a larger buffer
                    view.release()
                    buf = bytearray(READ_SIZE)
                    view = memoryview(buf)
                if bulk is not None and deadline is None:
                    pause = bulk.pause(n)
                    if pause:
                        time.sleep(pause)  # let the pipe fill: fewer, larger rounds
            if deadline is not None and not got_data and time.monotonic() >= deadline:
                _hand_off(rfd, broken)
                return sink
    finally:
        view.release()
        if bulk is not None:
            bulk.close()
        if pidfd >= 0:
            posix.close(pidfd)
        posix.close(rfd)  # after a hand-off the copier holds its own copy


class _PipeTee:
    """Pipe to pipe without copying through the guard: ``tee(2)`` duplicates what the command's
    pipe holds into a private pipe, ``splice(2)`` moves those same bytes on to stderr, and the
    duplicate is read for the sink. One copy into the guard instead of two (read and write), and
    none on the way out. Used once a read came back large (a command writing in bulk): ctypes,
    for tee, is loaded only then. ``open`` returns None where it does not apply (stderr is not a
    pipe, no tee) and the relay goes on reading and writing.

    The copy lands in ``buf``, a page-aligned mmap: the kernel copies a pipe's pages with
    ``rep movsb``, which on AMD's Zen CPUs runs at well under half speed when the destination lies
    a few bytes past a page boundary, as a large bytearray's does (glibc's mmap chunk header is
    16 bytes); measured on this project's machine, 1 GiB took 0.8-1.1 s of CPU into a bytearray
    and 0.3-0.4 s into the aligned buffer.

    stderr's own pipe (a harness's, 64 KiB by default) is enlarged to PIPE_SIZE while the relay
    runs in bulk: at 64 KiB each round left in 16 blocking splices, a context switch each, and
    the reader sat idle while the guard read and scanned the duplicate. Enlarged, a round leaves
    in one splice and the reader has a round's worth meanwhile. It is set back on close when what
    it holds fits in its old size (the kernel refuses a smaller size than that), and the kernel
    may refuse to enlarge it at all (an unprivileged user past the pipe-user-pages limit): then
    the rounds are split as before. Only the capacity changes: the bytes are the same."""

    def __init__(self, tee: "Callable[..., int]", dup_r: int, dup_w: int, buf: "Any", restore: int = 0) -> None:
        self._tee, self._r, self._w, self.buf = tee, dup_r, dup_w, buf
        self._restore = restore  # the size stderr's pipe had before open enlarged it, else 0
        import time

        self._clock = time.monotonic
        self._prev = self._at = self._clock()  # when the last two rounds' tee ran

    def pause(self, n: int) -> float:
        """How long to wait before the next round, after one that moved ``n`` bytes: until about
        BULK_FILL more have come at the rate these came, at most BULK_PAUSE; none after a round
        of BULK_FILL or more."""
        if n >= BULK_FILL:
            return 0.0
        if n <= 0:
            return BULK_PAUSE
        now = self._clock()
        wait = min(BULK_PAUSE, (self._at - self._prev) * BULK_FILL / n - (now - self._at))
        return wait if wait >= BULK_PAUSE_MIN else 0.0

    @classmethod
    def open(cls, rfd: int) -> "_PipeTee | None":
        try:
            if posix.fstat(2).st_mode & 0o170000 != 0o010000 or not hasattr(posix, "splice"):
                return None  # stderr is not a pipe (a socket, a shared file): read and write
            import ctypes
            import errno

            libc = ctypes.CDLL(None, use_errno=True)
            tee = libc.tee
            tee.restype = ctypes.c_ssize_t
            tee.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint)
            buf = _aligned_buffer()
            if buf is None:
                return None
            r, w = posix.pipe2(posix.O_CLOEXEC)
        except (OSError, ImportError, AttributeError):
            return None
        _set_pipe_size(w, PIPE_SIZE)  # a smaller duplicate pipe only means more rounds
        restore = _grow_pipe(2)

        def call(n: int) -> int:
            while True:
                k = tee(rfd, w, n, SPLICE_F_NONBLOCK)
                if k >= 0:
                    return int(k)
                err = ctypes.get_errno()
                if err != errno.EINTR:
                    raise OSError(err, posix.strerror(err))

        return cls(call, r, w, buf, restore)

    def move(self, rfd: int, broken: list[bool]) -> int:
        """Send the next bytes of ``rfd`` (at most ``len(self.buf)``) to stderr and leave a copy
        in ``self.buf``; the count, 0 at end of input."""
        buf = self.buf
        self._prev, self._at = self._at, self._clock()
        n = self._tee(len(buf))
        if not n:
            return 0
        left = n
        while left:  # the bytes tee just duplicated, and only those, go on to stderr
            if broken[0]:  # no reader left: take them off the pipe all the same
                left -= posix.readv(rfd, [memoryview(buf)[: min(left, len(buf))]])
                continue
            try:
                left -= posix.splice(rfd, 2, left)
            except BlockingIOError:
                select.select([], [2], [])
            except OSError:
                broken[0] = True
        got = 0
        while got < n:
            got += posix.readv(self._r, [memoryview(buf)[got:n]])
        return n

    def close(self) -> None:
        for fd in (self._r, self._w):
            try:
                posix.close(fd)
            except OSError:
                pass
        if self._restore:
            _set_pipe_size(2, self._restore)  # refused (EBUSY) while it holds more than that
        try:
            self.buf.close()
        except BufferError:  # a view of it is still alive somewhere: the GC unmaps it later
            pass


class _Follower:
    """Reads what the program appends to a regular file on stderr, from a second thread, and
    feeds it to the sink: the program writes at full speed and no byte passes through the guard.
    ``finish`` (after the program exited) reads on to the end of the file and returns the sink."""

    POLL_MIN, POLL_MAX = 0.002, 0.05

    def __init__(self, rfd: int, start: int, sink: "_LazySink") -> None:
        self.rfd, self.offset, self.sink = rfd, start, sink
        self._stopping = False
        self._ended = _thread.allocate_lock()
        self._ended.acquire()
        self._wake = _thread.allocate_lock()  # released by finish: no waiting out a pause
        self._wake.acquire()
        _thread.start_new_thread(self._loop, ())

    def _loop(self) -> None:
        buf = bytearray(READ_SIZE)
        pause = self.POLL_MIN
        try:
            while True:
                stopping = self._stopping  # read before the pread: EOF after it means the end
                try:
                    n = posix.preadv(self.rfd, [buf], self.offset)
                except InterruptedError:
                    continue
                except OSError:
                    return
                if n:
                    self.offset += n
                    self.sink.written += n
                    self.sink.last = buf[n - 1 : n]
                    self.sink.feed(buf, n)
                    pause = self.POLL_MIN
                    if n >= BULK_MIN and isinstance(buf, bytearray):
                        buf = _aligned_buffer() or buf  # a bulk writer: copy at full speed
                    continue
                if stopping:
                    return
                try:
                    if posix.fstat(self.rfd).st_size < self.offset:
                        self.offset = 0  # truncated under us (``>/dev/stderr``): read it afresh
                except OSError:
                    return
                self._wake.acquire(timeout=pause)
                pause = min(pause * 2, self.POLL_MAX)
        finally:
            self._ended.release()

    def finish(self) -> "_LazySink":
        self._stopping = True
        self._wake.release()
        self._ended.acquire()
        posix.close(self.rfd)
        return self.sink


def _grow_pipe(fd: int) -> int:
    """Enlarge pipe ``fd`` to PIPE_SIZE; the size it had, or 0 when it was as large already or
    the kernel refused (an unprivileged user past the pipe-user-pages limit)."""
    try:
        import fcntl

        size = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        if size >= PIPE_SIZE:
            return 0
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        return int(size)
    except (OSError, AttributeError, ImportError):
        return 0


def _set_pipe_size(fd: int, size: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (OSError, AttributeError, ImportError):
        pass


def _aligned_buffer() -> "Any":
    """A page-aligned READ_SIZE buffer (see _PipeTee: the kernel's copy into a large bytearray
    runs at under half speed on AMD Zen), or None."""
    try:
        import mmap

        return mmap.mmap(-1, READ_SIZE)
    except (ImportError, OSError):
        return None


def _hand_off(rfd: int, broken: list[bool]) -> None:
    """A background process still holds stderr: keep copying it in a detached process."""
    try:
        pid = posix.fork()
    except OSError:
        return
    if pid:
        return
    try:  # the copier: no Python-level state beyond this loop
        # It holds only stderr: a caller waiting for stdout to close ($(…)) must not wait for it.
        null = posix.open("/dev/null", posix.O_RDWR)
        posix.dup2(null, 0)
        posix.dup2(null, 1)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for sig in _FORWARDED:
            if sig not in (signal.SIGWINCH,):
                try:
                    signal.signal(sig, signal.SIG_IGN)
                except (OSError, ValueError):
                    pass
        while True:
            try:
                data = posix.read(rfd, READ_SIZE)
            except InterruptedError:
                continue
            except OSError:
                break
            if not data:
                break
            _write_all(2, data, broken)
    finally:
        posix._exit(0)


def _in_main_thread() -> bool:
    """Whether this is the main thread, without importing threading when nothing else has: then
    no thread was started through it, and the caller is the main thread."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


class _Forwarder:
    """Blocks the forwarded signals and relays those sent with kill(2) to the child."""

    def __init__(self, tty_fd: int) -> None:
        self.tty_fd = tty_fd
        self.original_mask: set[int] = set()
        self.sigs: set[int] = set()
        self.pid = 0
        self._thread: int | None = None  # ident of the forwarding thread (_thread: threading costs ~1 ms)
        self._ended = _thread.allocate_lock()
        self._blocked = False

    def block(self) -> None:
        if not _in_main_thread():
            self.original_mask = set(signal.pthread_sigmask(signal.SIG_BLOCK, ()))
            return
        for sig in _FORWARDED:
            try:
                if signal.getsignal(sig) == signal.SIG_IGN:
                    continue
            except ValueError:
                continue
            self.sigs.add(sig)
        self.original_mask = set(signal.pthread_sigmask(signal.SIG_BLOCK, self.sigs | {_STOP}))
        self._blocked = True

    def start(self, pid: int) -> None:
        self.pid = pid
        if not self._blocked:
            return
        self._ended.acquire()
        self._thread = _thread.start_new_thread(self._run_loop, ())

    def _run_loop(self) -> None:
        try:
            self._loop()
        finally:
            self._ended.release()

    def _loop(self) -> None:
        waited = self.sigs | {_STOP}
        me = posix.getpid()
        while True:
            try:
                info = signal.sigwaitinfo(waited)
            except InterruptedError:
                continue
            except OSError:
                return
            sig = info.si_signo
            if sig == _STOP and info.si_pid == me:
                return
            if sig == signal.SIGWINCH and self.tty_fd >= 0:
                _copy_winsize(self.tty_fd)  # the pty follows the real terminal's size
            if info.si_code == _SI_KERNEL or sig == _STOP:
                continue  # generated by the terminal: the child, in our process group, has it too
            if info.si_pid == self.pid:
                continue
            try:
                posix.kill(self.pid, sig)
            except OSError:
                pass

    def stop(self) -> None:
        if self._thread is not None:
            try:
                signal.pthread_kill(self._thread, _STOP)
            except (OSError, ValueError):
                pass
            if self._ended.acquire(timeout=2):
                self._ended.release()
            self._thread = None
        if self._blocked:
            # Swallow what is still pending (a ^C the child already got) before unblocking.
            pending = signal.sigpending() & (self.sigs | {_STOP})
            for _ in range(len(pending)):
                try:
                    signal.sigtimedwait(pending, 0)
                except OSError:
                    break
            signal.pthread_sigmask(signal.SIG_SETMASK, self.original_mask)
            self._blocked = False
