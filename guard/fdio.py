"""Whole reads and writes on a file descriptor, retried across signals: the framing the analysis
worker (``guard.budget``), guard-shell's stream feeder and ``guard check --jsonl`` rest on.

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
