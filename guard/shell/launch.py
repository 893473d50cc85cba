"""What the launchers (``bin/guard``, ``bin/guard-shell``) do before guard proper is imported.

The floor for a command guard-shell runs is the interpreter started the way ``python -I -S``
starts it: isolated, without the ``site`` scan of site-packages and ``.pth`` files. A launcher
that pip installed cannot say so itself: pip writes the interpreter's path alone on its ``#!``
line and drops any options there. So the first time a launcher runs, started the slow way, it
adds ``-IS`` to its own ``#!`` line (``fix_shebang``), provided the next start will find guard
without ``site``: a regular install into the interpreter's own ``lib/pythonX.Y/site-packages``.
An editable install, a ``--user`` one, or a launcher its user cannot rewrite keeps the line pip
wrote and starts as before.

A launcher started with ``-IS`` puts that site-packages folder on ``sys.path`` itself (the
``BOOT`` snippet the launchers carry); when guard is not found there it starts again the
ordinary way, so a moved or changed install still works, one start slower.

``exec_if_plain`` is guard-shell's first step: a ``-c`` command that passes the pre-check
(``guard.shell.precheck``) is handed to the real shell at once, with nothing imported but this module
and the pre-check; when it is one program and literal words, guard-shell makes the exec bash
itself would make in its place (``guard.shell.simple_exec``) and bash is not started at all. ``os`` alone (its ``collections.abc`` import) costs more than the 1 ms this
path is allowed, so this module uses ``posix`` directly and ``guard.shell.main`` is not loaded.
"""

# No `from __future__ import annotations`: that statement imports the __future__ module, a file
# read on this path; the annotations below that name typing-only types are strings instead.
import posix
import sys

try:  # the C module: `signal` imports enum
    import _signal as signal
except ImportError:  # pragma: no cover - other Pythons
    import signal  # type: ignore[no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

DEFAULT_REAL_SHELL = b"/bin/bash"
FAST_FLAGS = "-IS"
# The kernel reads at most this much of a #! line (BINPRM_BUF_SIZE less the terminating NUL).
SHEBANG_MAX = 255
# Short options of a plain `-c` invocation that change nothing guard looks at. Anything else
# (-i and its rc file, -o NAME, -s, long options) goes the full way through guard.shell.main.
PLAIN_FLAGS = frozenset("celuxvhBEHPT")


def original_environ() -> dict[bytes, bytes]:
    """The environment exactly as this process received it (read it, do not change it).

    Python may add variables at start-up (C locale coercion sets ``LC_CTYPE``); the real shell
    must see what the caller passed, so read the kernel's copy when there is one. That copy is
    the block the process started with, whatever it sets later, so it is read once.
    """
    global _original
    if _original is not None:
        return _original
    try:
        with open("/proc/self/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return dict(posix.environ)
    env: dict[bytes, bytes] = {}
    given = 0
    for item in raw.split(b"\0"):
        if b"=" in item[1:]:  # bash drops an entry with no name (`=x`); exec would refuse it
            k, v = item.split(b"=", 1)
            env.setdefault(k, v)
            given += 1
    global duplicated
    duplicated = given != len(env)
    _original = env
    return env


_original: "dict[bytes, bytes] | None" = None
# The environment named some variable more than once (the first value is the one kept).
duplicated = False


def reset_signals() -> None:
    """Undo what Python changed at start-up, so the real shell inherits what bash would have.

    Python ignores SIGPIPE and SIGXFSZ (the caller's setting is lost; the default is the usual
    one) and catches SIGINT only when it was not ignored (an ignored SIGINT stays ignored).
    """
    for name in ("SIGPIPE", "SIGXFSZ"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def plain_operand(args: "Sequence[str]") -> str | None:
    """The command text of a ``-c`` invocation in its plainest shape (short options from
    ``PLAIN_FLAGS`` including ``c``, then the text, then any positional words), else None."""
    i = 0
    has_c = False
    while i < len(args):
        a = args[i]
        if len(a) < 2 or a[0] != "-" or not PLAIN_FLAGS.issuperset(a[1:]):
            break
        has_c = has_c or "c" in a
        i += 1
    if not has_c or i >= len(args) or args[i].startswith(("-", "+")):
        return None
    return args[i]


def plain_command(args: "Sequence[str]", env: dict[bytes, bytes]) -> bool:
    """Whether guard-shell ``args`` is a ``-c`` command the pre-check passes, with nothing the
    real shell reads first (``$BASH_ENV``) and no exported function shadowing its program."""
    text = plain_operand(args)
    if text is None or env.get(b"BASH_ENV"):
        return False
    from guard.shell.precheck import trivially_allowed

    # the whole environment, as guard.shell.main passes it: the pre-check may read more than the
    # exported functions (which rule layers are in force, for one)
    strenv = {k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape") for k, v in env.items()}
    if trivially_allowed(text, env=strenv, shadowed=()):
        return True
    global not_plain
    not_plain = text
    return False


# The command text the pre-check refused here, with nothing shadowed: guard.shell.main need not ask it
# again (shadowing more names cannot make it plain).
not_plain: str | None = None
# The analysis server's worker has ``not_plain``'s request (``send_early``): guard.shell.main reads
# the reply (``pending``) instead of asking again. ``sent`` says the launcher tried (a None
# ``pending`` then means no trustworthy worker took it: guard.shell.main decides in-process at once
# rather than wait for the server a second time).
sent = False
pending: object | None = None


def real_shell(env: dict[bytes, bytes]) -> bytes:
    return env.get(b"GUARD_REAL_SHELL") or DEFAULT_REAL_SHELL


def exec_if_plain(args: "Sequence[str]") -> None:
    """Exec the real shell for a plain pre-checked ``-c`` command; return when it is not one
    (or the exec failed: guard.shell.main then runs and reports it in its own words)."""
    try:
        env = original_environ()
        if not plain_command(args, env):
            return
        argv = [a.encode("ascii") for a in args]
    except Exception:  # noqa: BLE001 - anything odd: the full path decides
        return
    shell = real_shell(env)
    reset_signals()
    try:
        from guard.shell.simple_exec import target

        direct = target(list(args), plain_operand(args) or "", env, duplicated)
    except Exception:  # noqa: BLE001 - anything odd: bash runs it
        direct = None
    if type(direct) is int:
        posix._exit(direct)
    if direct is not None:
        from guard.shell.simple_exec import execute

        try:  # bash's own last step; a failure (ENOEXEC, EACCES) is bash's to report
            execute(*direct)
        except OSError:
            pass
    try:
        posix.execve(shell, [shell, *argv], env)
    except OSError:
        return


def send_early(args: "Sequence[str]") -> None:
    """Send the request for a ``-c`` command the pre-check did not pass (``not_plain``) to the
    analysis server now, before ``os`` and ``guard.shell.main`` are imported, so the worker analyses
    it while they load. The request is the one ``guard.shell.main.served_decision`` would send: the
    same argv, working directory and environment."""
    global sent, pending
    if not_plain is None or sent:
        return
    # A busy server may be waited for: a ^C then ends guard-shell as it ends bash, not in a
    # traceback (guard.shell.main's main does the same, later)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        from guard.shell import client

        own = posix.environ
        where = client.text_env(own)
        if not client.enabled(where):
            return
        cwd = posix.getcwd()
        encode = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        argv = [a.encode(*encode) for a in args]
        sent = True
        pending = client.send(argv, cwd, dict(own), where)
    except Exception:  # noqa: BLE001 - anything odd: guard.shell.main asks or decides as before
        sent, pending = False, None


# --------------------------------------------------------------------------- the #! line


def site_packages(executable: str) -> str:
    """``<prefix>/lib/pythonX.Y/site-packages`` for the interpreter at ``executable`` (a venv's
    ``bin/python``, or an installation's): where a regular install puts guard."""
    prefix = executable.rpartition("/")[0].rpartition("/")[0]
    return f"{prefix}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


def fast_start_finds(package_file: str, executable: str) -> bool:
    """Whether a start without ``site`` finds the guard package at ``package_file`` (its
    ``__init__.py``): it lies in the interpreter's own site-packages, not behind a .pth file."""
    import os.path

    here = os.path.realpath(os.path.dirname(package_file))
    want = os.path.realpath(os.path.join(site_packages(executable), "guard"))
    return here == want


def fix_shebang(script: str, executable: str, package_file: str) -> bool:
    """Add ``-IS`` to the ``#!`` line of launcher ``script`` when it names an interpreter and no
    options, and the next start would find guard without ``site``. Replaces the file in one
    rename, so a concurrent start sees the old line or the new one. Never raises."""
    import os

    try:
        if not fast_start_finds(package_file, executable):
            return False
        path = os.path.realpath(script)
        with open(path, "rb") as fh:
            first = fh.readline()
            rest = fh.read()
        line = first.rstrip(b"\n")
        if not line.startswith(b"#!/") or b" " in line or b"\t" in line or not first.endswith(b"\n"):
            return False
        new = line + b" " + FAST_FLAGS.encode() + b"\n"
        if len(new) > SHEBANG_MAX:
            return False
        st = os.stat(path)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o7777)
        try:
            with open(fd, "wb") as out:
                out.write(new + rest)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return True
    except Exception:  # noqa: BLE001 - stays as pip wrote it
        return False
