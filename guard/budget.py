"""Run one analysis at a time in a forked worker, under a time and memory budget.

``guard check`` answers every command, whatever it holds: a command whose analysis runs past the
budget, needs more memory than it allows or crashes the interpreter costs only the worker, which
is killed and forked again for the next command. The caller turns the outcome into an answer.

The worker reads nothing but its requests: its stdin and stdout are ``/dev/null``, so nothing the
analysis does can read the caller's input stream or write into its output stream.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import time
from collections.abc import Callable

from guard.fdio import read_exact, write_all

# Defaults, from the measurements in the README's limits section: the slowest line of the shared
# corpus and peers' cases takes well under a second and the worker's peak stays under 200 MiB.
DEFAULT_SECONDS = 10.0
DEFAULT_MEMORY_MIB = 1024
_TICK = 0.05
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
        elapsed = time.monotonic() - start
        peak = _peak_kib(self.pid) if self.peaks or kind == b"M" else 0
        if body is None:
            return self._lost(start)
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
        import resource

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
        while True:
            head = _read_exact(req_r, _HEADER.size)
            if head is None:
                return 0
            _, n = _HEADER.unpack(head)
            request = _read_exact(req_r, n)
            if request is None:
                return 0
            try:
                answer = self.handle(request)
                kind = b"O"
            except MemoryError:
                answer, kind = b"", b"M"
            try:
                frame = _HEADER.pack(kind, len(answer)) + answer
            except MemoryError:
                return _MEMORY_EXIT
            del request
            if not write_all(rep_w, frame):
                return 0
            if kind == b"M":
                return _MEMORY_EXIT
