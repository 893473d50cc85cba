"""The one door through which the analysis looks at a file on disk.

The analysis reads scripts a command runs or sources, Makefiles, ``package.json``, git config
files and the like. A command may name anything there: its own standard input (``/dev/stdin``,
``/dev/fd/0``, ``/proc/self/fd/0``), a FIFO whose writer is waiting for bash, the terminal, a
socket, a directory, a file of gigabytes. Reading any of those would take bytes the command itself
was meant to read, block, or cost without bound. So a file is read only when ``stat`` says it is a
regular file no larger than the caller's cap, it is opened with ``O_NONBLOCK|O_NOCTTY`` (a file
swapped for a FIFO between the two steps still cannot block or become the controlling terminal),
and ``fstat`` on the open descriptor confirms it is the same regular file. Everything else comes
back as a reason, for the verdict's ``unresolved`` list, and is never opened.

NUL bytes are removed from what is read, as bash removes them from a script it reads. A file with
a NUL in its first line (within 80 bytes) is binary, as bash's own check for ``bash FILE`` decides:
bash will not run it as a script and the kernel execs it as a program, so it is not read.
"""

from __future__ import annotations

import os
import re
import stat

# /dev/stdin, /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N, /proc/PID/fd/N (and task/TID),
# after ``//`` and ``/./`` are folded.
_DESCRIPTOR = re.compile(r"^/(?:dev/(?:stdin|stdout|stderr|fd/\d+)|proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd/\d+)$")
_STDIN = re.compile(r"^/(?:dev/(?:stdin|fd/0)|proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd/0)$")

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _folded(path: str) -> str:
    """``//dev/./stdin`` → ``/dev/stdin``: the spellings the kernel treats as one path."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return "/" + "/".join(parts) if path.startswith("/") else "/".join(parts)


def names_stdin(path: str) -> bool:
    """Whether ``path`` is a name for the reading process's own standard input."""
    return bool(_STDIN.match(_folded(path)))


def descriptor_number(path: str) -> int | None:
    """The descriptor ``path`` names in the reading process (``/dev/fd/3`` → 3), or None."""
    m = _DESCRIPTOR.match(_folded(path))
    if m is None:
        return None
    tail = _folded(path).rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else {"stdin": 0, "stdout": 1, "stderr": 2}.get(tail)


def names_descriptor(path: str) -> bool:
    """Whether ``path`` names an open descriptor of some process rather than a file."""
    return bool(_DESCRIPTOR.match(_folded(path)))


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def strip_nul(text: str) -> str:
    """Remove NUL characters, as bash does from a script it reads (and as ``-c`` text never holds)."""
    return text.replace("\0", "") if "\0" in text else text


def read_text(path: str, cap: int) -> tuple[str | None, str | None]:
    """``(text, None)`` for a regular file of at most ``cap`` bytes, else ``(None, why)``.

    ``path`` must be absolute or relative to this process's cwd. Text is decoded as UTF-8 with
    undecodable bytes replaced; NUL bytes are removed.
    """
    if "\0" in path:
        return None, "path holds a NUL byte, not read"
    if names_descriptor(path):
        return None, "names an open descriptor (such as standard input), not read"
    try:
        before = os.stat(path)
    except OSError as e:
        return None, f"not readable ({e.strerror or 'error'})"
    if not stat.S_ISREG(before.st_mode):
        return None, f"{_kind(before.st_mode)}, not read"
    if before.st_size > cap:
        return None, f"larger than {cap} bytes, not read"
    try:
        fd = os.open(path, _FLAGS)
    except OSError as e:
        return None, f"not readable ({e.strerror or 'error'})"
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            return None, "changed while being read, not read"
        chunks: list[bytes] = []
        left = cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        return None, f"not readable ({e.strerror or 'error'})"
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        return None, f"larger than {cap} bytes, not read"
    if b"\0" in data[:80].split(b"\n", 1)[0]:
        return None, "a binary file, not read"
    return strip_nul(data.decode("utf-8", "replace")), None
