"""Run a plain simple command the way ``bash -c`` runs it, without starting bash.

Given ``-c`` and one simple command with nothing after it, bash does not fork: it execs the
program in its own place. guard-shell's plain path (``guard.shell.launch.exec_if_plain``) can make
that exec itself and save bash's start, provided it does everything bash does before it:

- **find the program** by bash's PATH search: the first ``DIR/NAME``, DIRs in PATH order, that
  exists, is not a directory and is executable by the effective ids (bash's ``eaccess`` test);
- **pass the environment bash passes**: what it received, except that ``SHLVL`` is the number
  it received (bash adds one at start and takes it off before the exec; none or not a number
  gives 0), ``PWD`` is kept when it is an absolute name of the working directory and otherwise
  becomes ``getcwd()``, ``OLDPWD`` is dropped unless it names a directory, and ``_`` is the
  program's path;
- **run the no-op builtins** ``true``, ``false`` and ``:`` as bash does: their status, nothing
  else.

Anything this module cannot reproduce exactly makes ``target`` return None, and the caller execs
bash as before: another word than a plain literal one, a bash builtin or keyword, a name the
PATH search does not find, a relative, empty or ``~`` PATH entry, a variable bash reads or
rewrites at start (``VARS_BASH_CHANGES``, any ``BASH*``), ``LC_ALL`` naming a locale bash may
warn about, a ``PWD`` naming another directory, an odd ``SHLVL``, a name given twice. A failed
exec falls back the same way, so bash prints its own message for it. ``tests/shell/test_simple_exec.py``
compares the environment and the argv with what the installed bash passes, for every variable
bash knows.

Imports ``posix`` alone: it runs on the plain path, before anything else is loaded.
"""

# No `from __future__ import annotations`: it imports the __future__ module, a file read on the
# plain path; annotations naming typing-only types are strings instead.
import posix

try:  # the C module: `signal` imports enum
    import _signal as signal
except ImportError:  # pragma: no cover - other Pythons
    import signal  # type: ignore[no-redef]

# bash's builtins and reserved words (bash 5.2's `compgen -b` and `compgen -k`); the test
# checks the installed bash has no other
BUILTINS = frozenset(
    ". : [ alias bg bind break builtin caller cd command compgen complete compopt continue "
    "declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history "
    "jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set "
    "shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait "
    "if then else elif fi case esac for select while until do done in function time { } ! [[ ]] "
    "coproc".split()
)
# The builtins that only return a status.
STATUS_BUILTINS = {"true": 0, ":": 0, "false": 1}
# Variables bash reads, re-exports with another value or drops when they are in its environment
# (found by running bash with each one set; the test repeats that for every name bash knows),
# besides every name starting with BASH.
VARS_BASH_CHANGES = frozenset(
    b"IFS PPID RANDOM SRANDOM LINENO HISTCMD OPTIND OPTERR PS1 PS2 PS4 SHELLOPTS POSIXLY_CORRECT "
    b"COMP_WORDBREAKS EPOCHSECONDS EPOCHREALTIME EXECIGNORE".split()
)
# LC_ALL values bash sets without a warning on any glibc system.
QUIET_LOCALES = frozenset((b"", b"C", b"POSIX"))
# Characters of a word bash takes literally wherever it stands (the pre-check allows more).
LITERAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%")
MAX_SHLVL = 998  # bash warns and resets above this (its own level would pass 999)


def words(text: str) -> "list[str] | None":
    """The words of ``text`` when it is one simple command of literal words, else None."""
    if not LITERAL.issuperset(text.replace(" ", "").replace("\t", "")):
        return None
    out = text.split()
    return out or None


def search(name: bytes, path: bytes) -> "bytes | None":
    """bash's PATH search for ``name``, or None when it finds nothing or a PATH entry is not an
    absolute folder (bash's own rules for those are left to bash)."""
    for folder in path.split(b":"):
        if not folder.startswith(b"/"):
            return None
        full = folder + name if folder.endswith(b"/") else folder + b"/" + name
        try:
            st = posix.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, ValueError):  # a loop, a permission: the searches part ways
            return None
        if st.st_mode & 0o170000 == 0o040000:
            continue
        if posix.access(full, posix.X_OK, effective_ids=True):
            return full
    return None


def child_env(env: "dict[bytes, bytes]", program: bytes) -> "dict[bytes, bytes] | None":
    """The environment bash would exec ``program`` with, or None when it is not certain."""
    out = {}
    for key, value in env.items():
        if key.startswith(b"BASH") or key in VARS_BASH_CHANGES:
            return None
        out[key] = value
    if env.get(b"LC_ALL", b"") not in QUIET_LOCALES:
        return None
    level = env.get(b"SHLVL")
    if level is None:
        out[b"SHLVL"] = b"0"
    elif 0 < len(level) <= 3 and level.isdigit() and int(level) <= MAX_SHLVL:
        out[b"SHLVL"] = str(int(level)).encode()
    else:
        return None
    try:
        here = posix.stat(".")
        cwd = posix.getcwdb()
    except OSError:  # bash complains of a working directory it cannot name
        return None
    pwd = env.get(b"PWD")
    if pwd is None:
        out[b"PWD"] = cwd
    elif not pwd.startswith(b"/") or b"/./" in pwd + b"/" or b"/../" in pwd + b"/":
        return None  # bash canonicalises such a name before comparing it: leave it to bash
    elif not _same_file(pwd, here):
        out[b"PWD"] = cwd
    old = env.get(b"OLDPWD")
    if old is not None and not _is_dir(old):
        del out[b"OLDPWD"]
    out[b"_"] = program
    return out


def _same_file(path: bytes, st: "posix.stat_result") -> bool:
    try:
        other = posix.stat(path)
    except (OSError, ValueError):
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _is_dir(path: bytes) -> bool:
    try:
        return posix.stat(path).st_mode & 0o170000 == 0o040000
    except (OSError, ValueError):
        return False


def target(
    args: "list[str]", text: str, env: "dict[bytes, bytes]", duplicates: bool
) -> "int | tuple[bytes, list[bytes], dict[bytes, bytes]] | None":
    """What ``bash -c text`` would do at once, for guard-shell ``args`` (``-c TEXT [NAME ARGS…]``)
    with environment ``env``: an exit status (a no-op builtin), the (path, argv, environment) it
    would exec, or None when bash should run it. ``duplicates``: the environment named a
    variable twice (bash keeps the last; leave that to bash)."""
    if duplicates or len(args) < 2 or args[0] != "-c" or args[1] != text or env.get(b"GUARD_REAL_SHELL"):
        return None
    found = words(text)
    if found is None:
        return None
    name = found[0]
    if name.startswith("%"):  # bash runs `fg` for a word like %1
        return None
    status = STATUS_BUILTINS.get(name)
    if status is not None:  # bash would still have read its environment
        return status if child_env(env, b"") is not None else None
    path = env.get(b"PATH")
    if name in BUILTINS or not path or "/" in name or "=" in name or b"BASH_FUNC_" + name.encode() + b"%%" in env:
        return None
    program = search(name.encode(), path)
    if program is None:
        return None
    out = child_env(env, program)
    if out is None:
        return None
    return program, [w.encode() for w in found], out


def execute(path: bytes, argv: "list[bytes]", env: "dict[bytes, bytes]") -> None:
    """Make bash's exec: with SIGCHLD unblocked, as bash leaves it for what it runs. Raises
    OSError when the exec fails (bash is then the one to run the command and report it)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGCHLD,))
    posix.execve(path, argv, env)


def kernel_runs(path: bytes) -> bool:
    """Whether an exec of ``path`` succeeds as far as a look at the file can tell: an ELF file
    for this machine whose loader exists, or a ``#!`` line naming such a file. Any other exec
    may fail (ENOEXEC, a missing interpreter or loader), and bash then reports that or runs the
    file as a script itself, while the relay's spawn would report the failure in its own words
    or hand the file to ``/bin/sh`` (and setpriv's PATH search, ``execvp``, where guard._spawn
    was not built, would go on to the next PATH entry of the name)."""
    head = _head(path)
    if head.startswith(b"#!"):
        line, newline, _ = head[2:].partition(b"\n")
        interpreter = line.replace(b"\t", b" ").strip(b" ").split(b" ", 1)[0]  # the kernel's split
        if not newline or not interpreter.startswith(b"/"):
            return False
        return posix.access(interpreter, posix.X_OK, effective_ids=True) and _elf_runs(_head(interpreter))
    return _elf_runs(head)


def _head(path: bytes, size: int = 4096) -> bytes:
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC)
    except (OSError, ValueError):
        return b""
    try:
        return posix.read(fd, size)
    except OSError:
        return b""
    finally:
        posix.close(fd)


def _elf_runs(head: bytes) -> bool:
    """An executable 64-bit little-endian ELF image of this machine (as ``/proc/self/exe``)
    whose program interpreter, if it names one, exists."""
    global _own
    if _own is None:
        _own = _head(b"/proc/self/exe", 64)
    own = _own
    if len(head) < 64 or head[:4] != b"\x7fELF" or own[4:6] != b"\x02\x01" or head[4:6] != own[4:6]:
        return False
    if head[18:20] != own[18:20] or head[16:18] not in (b"\x02\x00", b"\x03\x00"):  # e_machine; ET_EXEC/DYN
        return False
    phoff, phentsize, phnum = _u(head, 32, 8), _u(head, 54, 2), _u(head, 56, 2)
    for i in range(phnum):
        at = phoff + i * phentsize
        if phentsize < 56 or at + 56 > len(head):
            return False
        if _u(head, at, 4) == 3:  # PT_INTERP
            start, size = _u(head, at + 8, 8), _u(head, at + 32, 8)
            if start + size > len(head):
                return False
            try:
                posix.stat(head[start:start + size].rstrip(b"\0"))
            except (OSError, ValueError):
                return False
    return True


def _u(data: bytes, at: int, size: int) -> int:
    return int.from_bytes(data[at:at + size], "little")


_own: "bytes | None" = None
