"""Has any file the server's workers rely on changed? One ``poll`` instead of a ``stat`` per file.

The analysis server's workers inherit what the server checked (the guard package's files, the rule
files of each layering it loaded) and, before each request, would look at every one of those files
again (a stat each: near half a request's instructions). Instead the server watches them
with inotify, set up *before* it checks them, so any change after the check is an event waiting in
the instance's queue, which a worker sees with a zero-timeout ``poll``. Workers only poll, never
read, so an event stays for every worker forked before it; the server then makes a new watch and
checks everything again, and the workers forked after that start from a quiet one.

What is watched, for each path: the file or folder itself (content, attributes, the link count that
a rename over it or an unlink changes; for a folder also its entries), for a missing path the
nearest existing folder's entries, and every folder above it for being moved or deleted. A path
that goes through a symlink, or lies on a filesystem whose changes inotify may not see (network,
FUSE), is not watched: its layering keeps the stat per request. A mount or unmount anywhere in the
mount namespace could change what a path names without any event, so each worker also has its own
``/proc/self/mounts`` descriptor, opened by the server just before the fork, which ``poll`` flags
after any mount change (the flag is cleared by the poll that reports it, hence one per worker).
"""

from __future__ import annotations

import os
import select

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_MASK_ADD = 0x20000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

SELF = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF
ENTRIES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
ABOVE = IN_DELETE_SELF | IN_MOVE_SELF

# Filesystems whose every change goes through this kernel's VFS, so inotify reports it.
LOCAL = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "ramfs",
                   "bcachefs", "jfs", "reiserfs"})
MOUNTS = "/proc/self/mounts"


def _libc():  # type: ignore[no-untyped-def]
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _unescape(field: str) -> str:
    """A mountinfo path field: space, tab, newline and backslash are written as octal escapes."""
    if "\\" not in field:
        return field
    import re

    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_types(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) of each line of a ``/proc/self/mountinfo`` text, the
    deepest mount point first."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if sep and len(fields) >= 5 and right.split():
            out.append((_unescape(fields[4]), right.split()[0]))
    out.sort(key=lambda m: len(m[0]), reverse=True)
    return out


def fs_type(path: str, mounts: list[tuple[str, str]]) -> str | None:
    """The type of the filesystem ``path`` (absolute, with no symlink) lies on."""
    for point, kind in mounts:
        if path == point or point == "/" or path.startswith(point + "/"):
            return kind
    return None


class Watch:
    """One inotify instance and the server's own ``/proc/self/mounts`` descriptor (see the
    module's docstring). ``cover`` adds paths; ``quiet`` says nothing happened since; ``for_worker``
    gives a worker what it polls."""

    def __init__(self) -> None:
        self.mounts = os.open(MOUNTS, os.O_RDONLY | os.O_CLOEXEC)  # first: a mount from now on is seen
        self._libc = _libc()
        self.fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            os.close(self.mounts)
            raise OSError(self._errno(), "inotify_init1")
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            self._types = mount_types(fh.read())
        self._poll = Poll(self.fd, self.mounts)

    def _errno(self) -> int:
        import ctypes

        return ctypes.get_errno()

    def _add(self, path: str, mask: int) -> bool:
        return self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask | IN_MASK_ADD) >= 0

    def cover(self, paths: Iterable[str]) -> bool:
        """Watch each of ``paths`` (file, folder, or missing); False when one cannot be (a
        symlink on the way, a filesystem inotify may not see, no watch left), and then a change
        to it may go unseen."""
        above: set[str] = set()
        for path in paths:
            path = os.path.normpath(path)
            if not os.path.isabs(path) or os.path.realpath(path) != path:
                return False
            here = path
            while not os.path.lexists(here):
                here = os.path.dirname(here)
            if fs_type(here, self._types) not in LOCAL:
                return False
            if here != path:
                ok = self._add(here, ENTRIES | ABOVE)  # the missing path may be created
            else:
                ok = self._add(path, SELF | (ENTRIES if os.path.isdir(path) else 0))
            if not ok:
                return False
            parent = os.path.dirname(here)
            while parent not in above:
                above.add(parent)
                if not self._add(parent, ABOVE):
                    return False
                parent = os.path.dirname(parent)
        return True

    def quiet(self) -> bool:
        """No event on any watched path and no mount change since the watch began (the server's
        own question: it alone polls its mounts descriptor)."""
        return self._poll.quiet()

    def for_worker(self) -> tuple[Poll, int] | None:
        """For the worker about to be forked: a poll of this watch's events and of a mounts
        descriptor of its own (opened before the check, so a mount after the check is flagged
        there), and that descriptor, which the server closes after the fork; None when the watch
        is no longer quiet."""
        mine = os.open(MOUNTS, os.O_RDONLY | os.O_CLOEXEC)
        if not self.quiet():
            os.close(mine)
            return None
        return Poll(self.fd, mine), mine

    def close(self) -> None:
        for fd in (self.fd, self.mounts):
            try:
                os.close(fd)
            except OSError:
                pass


class Poll:
    """``quiet()``: no inotify event queued and no mount change flagged, and none seen before (a
    mount change is flagged to one poll only, so once seen it is remembered)."""

    __slots__ = ("_poll", "_fired")

    def __init__(self, inotify_fd: int, mounts_fd: int) -> None:
        self._poll = select.poll()
        self._poll.register(inotify_fd, select.POLLIN)
        self._poll.register(mounts_fd, select.POLLPRI)
        self._fired = False

    def quiet(self) -> bool:
        if self._fired:
            return False
        if self._poll.poll(0):
            self._fired = True
            return False
        return True


def start() -> Watch | None:
    """A new watch, or None where inotify is not available (too many instances, not Linux)."""
    try:
        return Watch()
    except (OSError, AttributeError):
        return None
