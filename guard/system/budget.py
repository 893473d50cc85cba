"""Run analyses in forked workers, under a time and memory budget.

``guard check`` answers every command, whatever it holds: a command whose analysis runs past the
budget, needs more memory than it allows or crashes the interpreter costs only the worker, which
is killed and forked again for the next command. The caller turns the outcome into an answer.
``Worker`` answers one request at a time; ``Pool`` keeps several workers busy for a stream.

The worker reads nothing but its requests: its stdin and stdout are ``/dev/null``, so nothing the
analysis does can read the caller's input stream or write into its output stream.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import struct
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence

from guard.system.fdio import read_exact, write_all

# Defaults, from the measurements in the README's limits section: the slowest line of the shared
# corpus and peers' cases takes well under a second and the worker's peak stays under 200 MiB.
DEFAULT_SECONDS = 10.0
DEFAULT_MEMORY_MIB = 1024
_TICK = 0.05
_READ = 1 << 16  # one read of requests or answers: a stream's small ones, many at a time
_READ_MAX = 1 << 20  # the most one read asks for, however large the frame being read
_HEADER = struct.Struct("!cI")
_MEMORY_EXIT = 3


class Outcome:
    """``kind`` is ``"ok"`` (``answer`` holds the bytes), ``"time"``, ``"memory"`` or
    ``"crash"`` (``detail`` says how)."""

    __slots__ = ("kind", "answer", "detail", "seconds", "peak_kib")

    def __init__(self, kind: str, answer: bytes | None = None, detail: str = "", seconds: float = 0.0,
                 peak_kib: int = 0) -> None:
        self.kind, self.answer, self.detail, self.seconds, self.peak_kib = kind, answer, detail, seconds, peak_kib


def _read_exact(fd: int, n: int) -> bytes | None:
    data = read_exact(fd, n)
    return data if len(data) == n else None


class Frames:
    """The frames (``_HEADER`` then a body) that arrive on a descriptor, however the reads cut
    them: ``feed(data)`` adds what one read gave, ``take()`` the next whole frame as
    ``(kind, body)`` or None. One read takes every frame a stream of small ones has waiting,
    where reading each header and body on its own costs two system calls a frame."""

    __slots__ = ("_buf", "_at")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._at = 0  # where the next frame starts in _buf

    def feed(self, data: bytes) -> None:
        if self._at:  # what was taken goes; a frame still arriving is only appended to
            del self._buf[: self._at]
            self._at = 0
        self._buf += data

    def take(self) -> tuple[bytes, bytes] | None:
        at, buf = self._at, self._buf
        if len(buf) - at < _HEADER.size:
            return None
        kind, n = _HEADER.unpack_from(buf, at)
        end = at + _HEADER.size + n
        if len(buf) < end:
            return None
        self._at = end
        return kind, bytes(buf[at + _HEADER.size : end])

    def begun(self) -> bool:
        """After ``take()`` gave None: whether part of the next frame has arrived (its sender
        had finished making it)."""
        return len(self._buf) > self._at

    def need(self) -> int:
        """After ``take()`` gave None: how many more bytes complete the frame begun."""
        at, buf = self._at, self._buf
        if len(buf) - at < _HEADER.size:
            return _HEADER.size - (len(buf) - at)
        return _HEADER.size + _HEADER.unpack_from(buf, at)[1] - (len(buf) - at)


def _read_some(fd: int, n: int) -> bytes:
    """One read of up to ``n`` bytes, retried across signals; b"" at the end or on an error."""
    while True:
        try:
            return os.read(fd, n)
        except InterruptedError:
            continue
        except OSError:
            return b""


def _vm_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu_limit(seconds: float, soft: int = 0) -> int:
    """In the worker, before a request: the kernel ends it (SIGXCPU) once the request has used
    its CPU budget and two seconds more, whole seconds being all RLIMIT_CPU counts. The parent
    stops a late worker sooner itself; this holds while the parent cannot look (blocked writing
    answers to a reader that stopped reading).

    ``soft`` is the limit the last call set: while it still leaves this request its whole budget
    and one second more, it stands (most requests take microseconds, and the two system calls
    that move it cost a stream of small requests more than the analysis of many). Returns the
    limit now in force."""
    used = time.process_time()
    if soft and soft - used >= seconds + 1:
        return soft
    soft = int(used + seconds) + 2
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))
    except (ValueError, OSError):
        pass
    return soft


def _peak_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


class Worker:
    """``ask(request)`` runs ``handle(request)`` in the worker and returns an ``Outcome``.

    ``seconds`` bounds both the worker's CPU time and, at three times that, the wall-clock time
    of one request (a loaded machine slows a request down without making it hostile; a blocked
    read uses no CPU at all). ``memory_mib`` is the address space the worker may add to what it
    had when it was forked.
    """

    def __init__(self, handle: Callable[[bytes], bytes], seconds: float = DEFAULT_SECONDS,
                 memory_mib: int = DEFAULT_MEMORY_MIB, peaks: bool = False) -> None:
        self.handle, self.seconds, self.memory_mib = handle, seconds, memory_mib
        self.peaks = peaks  # read the worker's peak memory after each answer (a bench wants it)
        self.pid = 0
        self.req_w = self.rep_r = -1

    # -- the parent side

    def ask(self, request: bytes) -> Outcome:
        if not self.pid:
            self._spawn()
        start = time.monotonic()
        if not write_all(self.req_w, _HEADER.pack(b"Q", len(request)) + request):
            return self._lost(start)
        # The worker's CPU clock is read only once an answer is late (most come within a tick):
        # the first reading less one tick is the start, so at most one tick more is counted.
        cpu0: float | None = None
        while True:
            try:
                ready, _, _ = select.select([self.rep_r], [], [], _TICK)
            except InterruptedError:
                continue
            if ready:
                return self._reply(start)
            elapsed = time.monotonic() - start
            if cpu0 is None:
                cpu0 = _cpu_seconds(self.pid) - _TICK
            if _cpu_seconds(self.pid) - cpu0 > self.seconds or elapsed > 3 * self.seconds:
                self.stop()
                return Outcome("time", detail=f"{self.seconds:g} s", seconds=elapsed)

    def _reply(self, start: float) -> Outcome:
        head = _read_exact(self.rep_r, _HEADER.size)
        if head is None:
            return self._lost(start)
        kind, n = _HEADER.unpack(head)
        body = _read_exact(self.rep_r, n)
        if body is None:
            return self._lost(start)
        return self._outcome(kind, body, time.monotonic() - start)

    def _outcome(self, kind: bytes, body: bytes, elapsed: float) -> Outcome:
        """The outcome of an answer frame: a memory one stops the worker (its budget is broken)."""
        peak = _peak_kib(self.pid) if self.peaks or kind == b"M" else 0
        if kind == b"M":
            self.stop()
            return Outcome("memory", detail=f"{self.memory_mib} MiB", seconds=elapsed, peak_kib=peak)
        return Outcome("ok", body, seconds=elapsed, peak_kib=peak)

    def _lost(self, start: float) -> Outcome:
        """The worker went away mid-request: how it ended says which budget it broke."""
        elapsed = time.monotonic() - start
        status = self._reap()
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU:  # its own CPU limit, set for the request (_serve)
                return Outcome("time", detail=f"{self.seconds:g} s", seconds=elapsed)
            if sig == signal.SIGKILL:  # the kernel's OOM killer
                return Outcome("memory", detail=f"{self.memory_mib} MiB", seconds=elapsed)
            return Outcome("crash", detail=f"signal {sig}", seconds=elapsed)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _MEMORY_EXIT:
            return Outcome("memory", detail=f"{self.memory_mib} MiB", seconds=elapsed)
        return Outcome("crash", detail="the worker exited", seconds=elapsed)

    def _reap(self) -> int:
        status = 0
        if self.pid:
            for fd in (self.req_w, self.rep_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                status = 0
            self.pid = 0
            self.req_w = self.rep_r = -1
        return status

    def stop(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _spawn(self) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(req_w)
                os.close(rep_r)
                code = self._serve(req_r, rep_w)
            except MemoryError:
                code = _MEMORY_EXIT
            except BaseException:  # noqa: BLE001 - the parent reports a lost worker
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        self.pid, self.req_w, self.rep_r = pid, req_w, rep_r

    # -- the worker side

    def _serve(self, req_r: int, rep_w: int) -> int:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        for sig in (signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig == signal.SIGPIPE else signal.SIG_IGN)
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ValueError, OSError):
            pass
        limit = _vm_bytes() + self.memory_mib * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
        except (ValueError, OSError):
            pass
        frames = Frames()
        soft = 0
        while True:
            item = frames.take()
            if item is None:  # the requests queued behind this one come in the same read
                data = _read_some(req_r, min(max(_READ, frames.need()), _READ_MAX))
                if not data:
                    return 0
                frames.feed(data)
                continue
            request = item[1]
            soft = _cpu_limit(self.seconds, soft)
            try:
                answer = self.handle(request)
                kind = b"O"
            except MemoryError:
                answer, kind = b"", b"M"
            try:
                frame = _HEADER.pack(kind, len(answer)) + answer
            except MemoryError:
                return _MEMORY_EXIT
            del request, item
            # each answer goes out as soon as it is made: the parent times a request from the
            # answer before it, and one request's budget never counts another's time
            if not write_all(rep_w, frame):
                return 0
            if kind == b"M":
                return _MEMORY_EXIT


# A request this small may wait in a worker's pipe behind the one it is answering. Writing it
# never blocks: it takes at most one page of the pipe (the kernel keeps a write of a page or less
# in one page), and no more of them wait than the pipe has pages to spare, so the parent can never
# wait on a worker that is waiting on the parent to read its answer. A larger one goes only to an
# idle worker, which is reading it.
_QUEUED_MAX = 4096
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_REQUEST_PIPE = 1 << 20  # the size asked for the request pipe: room for a stream's small requests


def _pipe_pages(fd: int) -> int:
    """The pages a request pipe holds, after asking for ``_REQUEST_PIPE`` bytes (a limit such as
    /proc/sys/fs/pipe-max-size may keep it at the default 64 KiB)."""
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _REQUEST_PIPE) // _PAGE
    except OSError:
        try:
            return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) // _PAGE
        except OSError:
            return 16


class _Slot:
    __slots__ = ("worker", "queue", "started", "cpu0", "frames", "out", "room")

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.queue: deque[tuple[Hashable, bytes]] = deque()  # sent, unanswered; the first is running
        self.started = 0.0  # when the first of the queue started
        self.cpu0: float | None = None
        self.frames = Frames()  # the worker's answers, as its pipe gives them
        self.out = bytearray()  # requests taken and not yet written: one write at the next poll
        self.room = 0  # how many requests may be queued behind the running one (its pipe's pages)


class Pool:
    """Up to ``jobs`` workers, each holding up to ``depth`` requests, so a stream of small
    requests costs neither a round trip nor a pair of system calls per request, nor more than
    one CPU's worth.

    ``take(key, request)`` hands a request to a worker (False when none can take it now);
    ``poll(timeout, also)`` writes what was taken, then waits up to ``timeout`` seconds (None:
    until something happens) for answers, and returns them as ``(key, Outcome)`` pairs in the
    order they came, with whether any of the descriptors in ``also`` became readable. Each
    request has the budget a ``Worker`` gives it, counted from when its worker started on it
    (the answer before it came); a worker that breaks one costs only that request: those
    queued behind it go to the worker forked in its place.
    """

    def __init__(self, handle: Callable[[bytes], bytes], jobs: int = 1, seconds: float = DEFAULT_SECONDS,
                 memory_mib: int = DEFAULT_MEMORY_MIB, depth: int = 32) -> None:
        self.seconds, self.depth = seconds, max(1, depth)
        self._slots = [_Slot(Worker(handle, seconds, memory_mib)) for _ in range(max(1, jobs))]
        self._next_check = 0.0

    def take(self, key: Hashable, request: bytes) -> bool:
        small = _HEADER.size + len(request) <= _QUEUED_MAX
        best: _Slot | None = None
        for s in self._slots:
            if not s.queue:
                best = s
                break
            if small and len(s.queue) < min(self.depth, s.room + 1) and (best is None or len(s.queue) < len(best.queue)):
                best = s
        if best is None:
            return False
        self._send(best, key, request)
        return True

    def backlog(self) -> int:
        """The fewest requests any worker holds: while every worker has several, an answer
        need not be read the moment it is written."""
        return min(len(s.queue) for s in self._slots)

    def _send(self, s: _Slot, key: Hashable, request: bytes) -> None:
        w = s.worker
        if not w.pid:
            w._spawn()
            s.frames = Frames()
            s.room = _pipe_pages(w.req_w) - 2  # a page for the request being read, one spare
        idle = not s.queue
        s.queue.append((key, request))
        s.out += _HEADER.pack(b"Q", len(request))
        s.out += request
        if idle:  # an idle worker starts at once; requests queued behind go out at the next poll
            s.started, s.cpu0 = time.monotonic(), None
            write_all(w.req_w, s.out)
            s.out.clear()

    def _flush(self) -> None:
        """Write what each worker was given since the last poll, in one write per worker. A
        worker that went away shows as the end of its answers, which poll() reports."""
        for s in self._slots:
            if s.out:
                write_all(s.worker.req_w, s.out)
                s.out.clear()

    def _resend(self, s: _Slot) -> None:
        """After the worker of ``s`` ended: what was queued behind its request, to its successor."""
        waiting = list(s.queue)
        s.queue.clear()
        s.out.clear()
        for key, request in waiting:
            self._send(s, key, request)

    def poll(self, timeout: float | None, also: Sequence[int] = ()) -> tuple[list[tuple[Hashable, Outcome]], bool]:
        self._flush()
        busy = {s.worker.rep_r: s for s in self._slots if s.queue}
        if not busy and not also:
            return [], False  # nothing could ever become ready
        if busy and (timeout is None or timeout > _TICK):
            timeout = _TICK  # a late answer is looked at every tick
        try:
            ready, _, _ = select.select([*busy, *also], [], [], timeout)
        except InterruptedError:
            ready = []
        out: list[tuple[Hashable, Outcome]] = []
        for fd in ready:
            s = busy.get(fd)
            if s is not None:
                self._answers(s, out)
        now = time.monotonic()
        if busy and now >= self._next_check:
            self._next_check = now + _TICK
            for s in busy.values():
                # an answer partly read is a request done: only the reading of it is left
                if s.queue and s.worker.pid and not s.frames.begun() and now - s.started > _TICK \
                        and self._late(s, now):
                    key, _ = s.queue.popleft()
                    s.worker.stop()
                    out.append((key, Outcome("time", detail=f"{self.seconds:g} s", seconds=now - s.started)))
                    self._resend(s)
        self._flush()  # what was queued behind a broken request, to its successor
        return out, any(fd not in busy for fd in ready)

    def _answers(self, s: _Slot, out: list[tuple[Hashable, Outcome]]) -> None:
        """Read once from the worker of ``s`` (it is readable) and add every answer now whole
        to ``out``; a worker that ended costs its running request (``Worker._lost``)."""
        w = s.worker
        data = _read_some(w.rep_r, min(max(_READ, s.frames.need()), _READ_MAX))
        if not data:
            key, _ = s.queue.popleft()
            out.append((key, w._lost(s.started)))
            self._resend(s)
            return
        s.frames.feed(data)
        while (frame := s.frames.take()) is not None:
            now = time.monotonic()
            key, _ = s.queue.popleft()
            out.append((key, w._outcome(*frame, now - s.started)))
            if not w.pid:  # it broke its memory budget: the rest go to a new worker
                self._resend(s)
                return
            if s.queue:
                s.started, s.cpu0 = now, None

    def _late(self, s: _Slot, now: float) -> bool:
        """Whether the request ``s`` is running has used up its budget (as ``Worker.ask`` counts)."""
        cpu = _cpu_seconds(s.worker.pid)
        if s.cpu0 is None:
            s.cpu0 = cpu - _TICK
        return cpu - s.cpu0 > self.seconds or now - s.started > 3 * self.seconds

    def stop(self) -> None:
        for s in self._slots:
            s.queue.clear()
            s.worker.stop()
