"""Whole reads and writes on a file descriptor, retried across signals: the framing the analysis
worker (``guard.system.budget``), guard-shell's stream feeder and ``guard check --jsonl`` rest on.

Imports nothing but ``os``: guard-shell loads it on the command path.
"""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes) -> bool:
    """Write every byte of ``data``; False when the descriptor failed (the reader went away)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except InterruptedError:
            continue
        except OSError:
            return False
    return True


def read_exact(fd: int, n: int) -> bytes:
    """``n`` bytes, or fewer when the descriptor ends or fails first."""
    out = bytearray()
    while len(out) < n:
        try:
            b = os.read(fd, min(n - len(out), 1 << 20))
        except InterruptedError:
            continue
        except OSError:
            break
        if not b:
            break
        out += b
    return bytes(out)


class Lines:
    """The lines of a descriptor as they arrive, for a loop that also waits on others:
    ``fill()`` reads once (call it when the descriptor is readable), ``take()`` gives the next
    whole line (without its line ending) as ``(line, False)``, or None. A line longer than
    ``limit`` bytes is not kept: it comes as ``(head, True)``, its first 4096 bytes (or
    ``limit + 1``, if fewer), once its end has been read past. ``eof`` is set at the end of
    input, after which the last line, if it had no newline, can be taken like the others."""

    def __init__(self, fd: int, limit: int, chunk: int = 1 << 16) -> None:
        self.fd, self.limit, self.chunk = fd, limit, chunk
        self.eof = False
        self._buf = bytearray()
        self._lines: list[tuple[bytes, bool]] = []  # read, not yet taken from _next on
        self._next = 0
        self._skipping: bytes | None = None  # the head of a line too long to keep
        self._head = min(4096, limit + 1)

    def queued(self) -> int:
        return len(self._lines) - self._next

    def take(self) -> tuple[bytes, bool] | None:
        if self._next == len(self._lines):
            return None
        item = self._lines[self._next]
        self._next += 1
        if self._next == len(self._lines):  # all taken: start the list again
            self._lines.clear()
            self._next = 0
        return item

    def fill(self) -> None:
        try:
            data = os.read(self.fd, self.chunk)
        except InterruptedError:
            return
        except OSError:
            data = b""
        if not data:
            self.eof = True
            if self._skipping is not None:
                self._lines.append((self._skipping, True))
            elif self._buf:
                self._add(bytes(self._buf))
            self._buf.clear()
            self._skipping = None
            return
        if self._skipping is not None:
            end = data.find(b"\n")
            if end < 0:
                return
            self._lines.append((self._skipping, True))
            self._skipping = None
            data = data[end + 1 :]
        last = data.rfind(b"\n")  # in the new bytes only: a long line is not searched again
        if last >= 0:
            whole = bytes(self._buf) + data[:last]
            self._buf = bytearray(data[last + 1 :])
            for line in whole.split(b"\n"):
                self._add(line)
        else:
            self._buf += data
        if len(self._buf) > self.limit:
            self._skipping = bytes(self._buf[: self._head])
            self._buf.clear()

    def _add(self, line: bytes) -> None:
        if len(line) > self.limit:
            self._lines.append((line[: self._head], True))
        else:
            self._lines.append((line.rstrip(b"\r\n"), False))
