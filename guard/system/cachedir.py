"""Where guard keeps its caches: ``$XDG_CACHE_HOME/guard``, else ``~/.cache/guard``.

One answer for every cache (compiled rules, the pre-check plan, the stderr digest, the bashlex
tables, sourced files), found with ``posix`` alone: the pre-check asks it before ``os`` is loaded.
"""

# No `from __future__ import annotations`: the pre-check imports this module (see guard/shell/precheck.py).
import posix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def _home() -> str:
    home = posix.environ.get(b"HOME")
    if home is not None:
        return home.decode("utf-8", "surrogateescape")
    try:
        import pwd

        return pwd.getpwuid(posix.getuid()).pw_dir
    except (ImportError, KeyError):
        return "/"


def cache_root(env: "Mapping[str, str] | None" = None) -> str:
    """``$XDG_CACHE_HOME/guard`` or ``$HOME/.cache/guard`` of ``env`` (default: this process's
    environment; with ``env`` given and no HOME in it, the user's home from the password file)."""
    if env is None:
        base = posix.environ.get(b"XDG_CACHE_HOME", b"").decode("utf-8", "surrogateescape")
        home = "" if base else _home()
    else:
        base = env.get("XDG_CACHE_HOME") or ""
        home = "" if base else (env.get("HOME") or _home())
    if not base:
        base = home.rstrip("/") + "/.cache"
    return base.rstrip("/") + "/guard" if base != "/" else "/guard"


# --------------------------------------------------------------------------- trusted files
# A cache file can change a verdict (the compiled rule set, the pre-check's plan), so one is read
# only from a folder and a file that are this user's own and that no one else may write: opened
# without following a symbolic link, checked on the open descriptor (no window between the
# check and the read). One is written under a name no one can have prepared (O_EXCL, a random
# part) and then renamed into place. A folder that fails the check is said once on stderr, and
# guard works without it.

_O_DIR = posix.O_RDONLY | posix.O_DIRECTORY | posix.O_NOFOLLOW | posix.O_CLOEXEC
_O_READ = posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_CLOEXEC | posix.O_NONBLOCK
_O_NEW = posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | posix.O_NOFOLLOW | posix.O_CLOEXEC
_S_IFMT, _S_IFDIR, _S_IFREG = 0o170000, 0o040000, 0o100000
READ_MAX = 256 << 20  # bytes of one cache file read at most

_said: set = set()


def private(st: "posix.stat_result", kind: int = _S_IFREG) -> bool:
    """Whether ``st`` is of ``kind``, owned by this user and writable by no one else."""
    return st.st_mode & _S_IFMT == kind and st.st_uid == posix.getuid() and not st.st_mode & 0o022


def _say_once(folder: str) -> None:
    if folder in _said:
        return
    _said.add(folder)
    line = f"guard: cache: {folder} is not this user's own or others may write it; working without it\n"
    try:
        posix.write(2, line.encode("utf-8", "backslashreplace"))
    except OSError:
        pass


def open_folder(folder: str) -> int:
    """A descriptor of ``folder`` when it is a real folder of this user's that no one else may
    write; -1 otherwise (said once when it exists but fails the check)."""
    try:
        fd = posix.open(folder, _O_DIR)
    except (OSError, ValueError):
        try:
            posix.lstat(folder)
        except (OSError, ValueError):
            return -1  # no cache yet: nothing to say
        _say_once(folder)  # a symbolic link, or not a folder
        return -1
    try:
        ok = private(posix.fstat(fd), _S_IFDIR)
    except OSError:
        ok = False
    if not ok:
        posix.close(fd)
        _say_once(folder)
        return -1
    return fd


def read_private(path: str, link_in_folder: bool = False) -> "bytes | None":
    """The bytes of cache file ``path`` when it and its folder pass the check, else None. With
    ``link_in_folder``, ``path`` may be a symbolic link to a file of the same folder (the
    last-known-good link), which is checked in its place."""
    folder, _, name = path.rpartition("/")
    dfd = open_folder(folder or "/")
    if dfd < 0:
        return None
    try:
        try:
            fd = posix.open(name, _O_READ, dir_fd=dfd)
        except OSError:
            if not link_in_folder:
                return None
            target = posix.readlink(name, dir_fd=dfd)
            if not target or "/" in target or target in (".", ".."):
                return None
            fd = posix.open(target, _O_READ, dir_fd=dfd)
        try:
            st = posix.fstat(fd)
            if not private(st):
                if st.st_mode & _S_IFMT == _S_IFREG:
                    _say_once(path)
                return None
            if st.st_size > READ_MAX:
                return None
            chunks = []
            got = 0
            while got < st.st_size:  # one read for a file of the size fstat gave
                chunk = posix.read(fd, st.st_size - got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            posix.close(fd)
    except (OSError, ValueError):
        return None
    finally:
        posix.close(dfd)


def make_folder(folder: str) -> int:
    """``open_folder``, creating the folder (and missing parents) mode 0700 first."""
    missing = []
    at = folder
    while at and at != "/":
        try:
            posix.lstat(at)
            break
        except (OSError, ValueError):
            missing.append(at)
            at = at.rpartition("/")[0]
    for p in reversed(missing):
        try:
            posix.mkdir(p, 0o700)
        except OSError:
            pass
    return open_folder(folder)


def write_private(path: str, data: bytes, link: "str | None" = None) -> bool:
    """Put ``data`` at ``path`` (or, with ``link``, a symbolic link to the name ``link`` of the
    same folder) atomically: written under a fresh name created with ``O_EXCL|O_NOFOLLOW``, mode
    0600, then renamed. False when the folder fails the check or anything fails."""
    folder, _, name = path.rpartition("/")
    dfd = make_folder(folder or "/")
    if dfd < 0:
        return False
    tmp = f".{name}.{posix.getpid()}.{posix.urandom(6).hex()}.tmp"
    try:
        if link is not None:
            posix.symlink(link, tmp, dir_fd=dfd)
        else:
            fd = posix.open(tmp, _O_NEW, 0o600, dir_fd=dfd)
            try:
                view = memoryview(data)
                while view:
                    view = view[posix.write(fd, view):]
            finally:
                posix.close(fd)
        posix.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return True
    except (OSError, ValueError):
        try:
            posix.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        return False
    finally:
        posix.close(dfd)
