"""``guard-shell``: the agent's ``$SHELL``.

Takes bash's invocation forms, analyses the command text before anything runs, and then either
refuses (message on stderr, exit 126) or hands the untouched arguments to the real shell
(``GUARD_REAL_SHELL``, default ``/bin/bash``). With no command and a terminal on stdin it starts
an interactive session (``guard.shell.interactive``).

Hot path: this module imports only ``posix``, ``sys`` and ``_signal`` at load time (not ``os``:
see ``guard.system.sysenv``); the engine, the relay and the audit log are imported when they are
needed.
"""

# No `from __future__ import annotations`: that import reads a file on every analysed command;
# annotations that name typing-only types are strings instead.
import posix
import sys

try:  # the C module: `signal` itself imports enum (~3 ms), paid on every command
    import _signal as signal
except ImportError:  # pragma: no cover - other Pythons
    import signal  # type: ignore[no-redef]

from guard.shell import launch as launcher
from guard.shell.args import ShellArgs, parse_args
from guard.shell.decide import (
    REFUSED_STATUS,
    Decision,
    current_dir,
    decide,
    exit_now,
    failed,
    launch,
    on_trial,
    passes_precheck,
    record_refusal,
    replied,
    say,
)
from guard.system import sysenv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# A script file bigger than this is not read for analysis (the failure policy applies).
MAX_SCRIPT_BYTES = 64 * 1024 * 1024


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            b = posix.read(fd, 1 << 16)
        except InterruptedError:
            continue
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def _replace_stdin(data: bytes) -> None:
    """Make fd 0 hold exactly ``data`` for the real shell, of the same kind as before: a pipe
    stays a pipe (a command bash runs that reads stdin takes what bash has not, as with bash
    itself), a file stays a seekable file."""
    import stat

    try:
        was_pipe = not stat.S_ISREG(posix.fstat(0).st_mode)
    except OSError:
        was_pipe = True
    if was_pipe and _stdin_pipe(data):
        return
    try:
        fd = posix.memfd_create("guard-shell-stdin", 0)
    except (AttributeError, OSError):
        import tempfile

        fd, path = tempfile.mkstemp(prefix="guard-shell-")
        posix.unlink(path)
    view = memoryview(data)
    while view:
        k = posix.write(fd, view)
        view = view[k:]
    posix.lseek(fd, 0, 0)  # SEEK_SET
    posix.dup2(fd, 0)
    posix.close(fd)


def _stdin_pipe(data: bytes) -> bool:
    """fd 0 becomes a pipe that yields ``data`` then EOF; a writer process feeds what does not
    fit in the pipe's buffer. False when no pipe could be made (the caller uses a file)."""
    try:
        r, w = posix.pipe()
    except OSError:
        return False
    try:
        import fcntl

        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, min(max(len(data), 65536), 1 << 20))
    except (OSError, ImportError, AttributeError):
        pass
    try:
        posix.set_blocking(w, False)
        sent = posix.write(w, data) if data else 0
    except BlockingIOError:
        sent = 0
    except OSError:
        posix.close(r)
        posix.close(w)
        return False
    if sent < len(data):
        try:
            pid = posix.fork()
        except OSError:
            posix.close(r)
            posix.close(w)
            return False
        if pid == 0:  # the writer: holds nothing but the pipe's write end
            try:
                posix.close(r)
                null = posix.open("/dev/null", posix.O_RDWR)
                for fd in (0, 1, 2):
                    posix.dup2(null, fd)
                posix.set_blocking(w, True)
                view = memoryview(data)[sent:]
                while view:
                    view = view[posix.write(w, view):]
            finally:
                posix._exit(0)
    posix.close(w)
    posix.dup2(r, 0)
    posix.close(r)
    return True


def _find_script(path: str, search: bool = True) -> str | None:
    """The file bash would read for ``bash SCRIPT``: as given, else searched on PATH."""
    import os  # script mode: not on the path of a -c command

    if os.path.exists(path):
        return path
    if "/" in path or not search:
        return None
    for d in os.environ.get("PATH", "").split(":"):
        cand = os.path.join(d or ".", path)
        if os.path.isfile(cand) and posix.access(cand, posix.R_OK):
            return cand
    return None


class ScriptFile:
    """What a script path holds, found without reading anything but a regular file.

    ``kind``: ``"text"`` (``text`` holds it), ``"stdin"`` (it is this process's own stdin, a
    pipe or socket: bash reads it like stdin mode), ``"unknown"`` (a FIFO, a device, a
    socket, a file over the cap: not read, ``reason`` says why) or ``"missing"`` (absent,
    unreadable, a directory: bash reports it in its own words).
    """

    __slots__ = ("kind", "text", "reason")

    def __init__(self, kind: str, text: str | None = None, reason: str = "") -> None:
        self.kind, self.text, self.reason = kind, text, reason


def read_script_file(path: str, limit: int = MAX_SCRIPT_BYTES, search: bool = True) -> ScriptFile:
    """Open ``path`` as bash would to read a script, but never block on it, never take a
    terminal, and read it only when it is a regular file of at most ``limit`` bytes."""
    import stat

    found = _find_script(path, search)
    if found is None:
        return ScriptFile("missing")
    # stat first: even opening a FIFO (O_NONBLOCK or not) lets a writer waiting in open(2) go
    # on, and closing it again leaves that writer with nobody to read what it writes
    try:
        st = posix.stat(found)
    except OSError:
        return ScriptFile("missing")
    if stat.S_ISDIR(st.st_mode):
        return ScriptFile("missing")
    if not stat.S_ISREG(st.st_mode):
        return _special_script(path, st)
    from guard.resolve import files

    if files.names_descriptor(found):  # a regular file on a descriptor: bash opens it afresh
        import os

        found = os.path.realpath(found)
    text, why = files.read_text(found, limit)
    if text is not None:
        return ScriptFile("text", text)
    if why and why.startswith("larger"):
        return ScriptFile("unknown", reason=f"{path} is {why.removesuffix(', not read')}")
    return ScriptFile("missing")


def _special_script(path: str, st: posix.stat_result) -> ScriptFile:
    """A script path that is not a regular file: this process's own stdin, or unknown."""
    import stat

    try:
        own = posix.fstat(0)
        mine = (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino) and not stat.S_ISREG(own.st_mode)
    except OSError:
        mine = False
    if mine and not stat.S_ISCHR(st.st_mode):
        return ScriptFile("stdin")
    return ScriptFile("unknown", reason=f"{path} is {_file_kind(st.st_mode)}")


def _file_kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def exported_functions(env: "Mapping[str, str]") -> dict[str, str]:
    """Functions bash imports from the environment (``export -f``: ``BASH_FUNC_name%%``)."""
    out = {}
    for key, value in env.items():
        if key.startswith("BASH_FUNC_") and key.endswith("%%") and value.startswith("() {"):
            name = key[len("BASH_FUNC_") : -2]
            out[name] = f"{name} {value}"
    return out


def startup_texts(parsed: ShellArgs, env: "Mapping[str, str]") -> list[str]:
    """Shell text bash runs before the command: a file named by ``--rcfile``/``--init-file``
    (read when the shell is interactive, ``-i``), and ``$BASH_ENV`` (non-interactive).

    bash expands ``$BASH_ENV``'s value (command substitution included) and then sources the file
    it names, so both are checked. A login shell's profiles are the machine's own set-up: what
    they define is read (``login_profiles``), what they run is not judged.
    """
    if parsed.mode == "passthrough":
        return []
    texts = []
    interactive = "i" in parsed.flags
    rcfile = _option_value(parsed.options, ("--rcfile", "--init-file"))
    if rcfile is not None and interactive and "--norc" not in parsed.long_flags:
        texts.extend(_read_text(rcfile))
    value = env.get("BASH_ENV")
    if value and not interactive:
        if any(c in value for c in "$`"):
            texts.append(f": {value}")
        else:
            texts.extend(_read_text(value))
    return texts


def login_profiles(parsed: ShellArgs, env: "Mapping[str, str]") -> tuple[str, ...]:
    """The profiles a login shell (``-l``, ``--login``) reads: /etc/profile, then the first of
    ~/.bash_profile, ~/.bash_login, ~/.profile (bash's order), unless ``--noprofile``."""
    if parsed.mode == "passthrough" or ("l" not in parsed.flags and "--login" not in parsed.long_flags):
        return ()
    if "--noprofile" in parsed.long_flags:
        return ()
    import os

    found = ["/etc/profile"] if os.path.isfile("/etc/profile") else []
    home = env.get("HOME") or ""
    for name in (".bash_profile", ".bash_login", ".profile"):
        path = os.path.join(home, name) if home else ""
        if path and os.path.isfile(path):
            found.append(path)
            break
    return tuple(found)


def _option_value(options: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    for j, a in enumerate(options):
        if a in names and j + 1 < len(options):
            return options[j + 1]
        for n in names:
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def _read_text(path: str) -> list[str]:
    import os

    got = read_script_file(os.path.expanduser(path), search=False)
    return [got.text] if got.text is not None else []


def guard_command(
    text: str, cwd: str | None, parsed: ShellArgs | None = None, env: dict[str, str] | None = None
) -> Decision:
    """Decide on one command text (after the start-up text bash would run first) and print what
    the decision says to print: the refusal, or the one-line notice of a fail-open.

    ``env`` is the command's environment (default ``os.environ``); refusals are logged with it.
    """
    environ = sysenv.environ() if env is None else env
    functions = exported_functions(environ)
    decision = Decision("run")
    from guard.shell import hostwrap  # an agent host's wrapper: judge and log what the agent wrote

    wrapped = hostwrap.unwrap(text) if parsed is not None and parsed.mode == "command" else None
    own = wrapped.analysis_text() if wrapped else text
    profiles = login_profiles(parsed, environ) if parsed else ()
    for part in [*(startup_texts(parsed, environ) if parsed else []), own]:
        decision = decide(part, cwd=cwd, functions=functions, env=env, startup=profiles if part is own else ())
        if decision.message:
            say(decision.message)
        if decision.action == "refuse" or on_trial(decision):
            logged = wrapped.inner if wrapped and part is own else part
            record_refusal(logged, decision, cwd, env, client=hostwrap.client(environ, wrapped))
        if decision.action == "refuse":
            break
    return decision


def served_decision(args: list[str], text: str, cwd: str | None, parsed: ShellArgs) -> Decision | None:
    """The decision from the resident analysis server (``guard.serve``), or None to decide here.

    A command the pre-check passes is decided here without asking. The server runs
    ``guard_command`` on the same argv, cwd and environment and sends back what it printed, so
    the outcome is the same as deciding here. Not used when ``GUARD_SERVER=0``, when the cwd is
    unknown, or when this process already has an engine loaded (a caller's own, e.g. a test's).
    """
    if cwd is None or "guard.engine" in sys.modules:
        return None
    if launcher.sent and text == launcher.not_plain:
        # the launcher sent this request and shell_decide.run_served read the reply: it had
        # none it could use, so decide here rather than ask the server a second time
        return None
    try:
        from guard.shell import client

        environ = sysenv.environ()
        functions = exported_functions(environ)
        if (text != launcher.not_plain and not startup_texts(parsed, environ)
                and passes_precheck(text, environ, None, functions)):
            return Decision("run", plain=True)
        if not client.enabled(environ):
            return None
        reply = client.ask([sysenv.fsencode(a) for a in args], cwd, sysenv.environb())
    except Exception:  # noqa: BLE001 - any trouble: decide here
        return None
    return None if reply is None else replied(reply)


def _streamable(parsed: ShellArgs) -> bool:
    """Stdin is read one command at a time unless bash would not run it (``-n``) or the real
    shell is not bash."""
    if "n" in parsed.flags:
        return False
    from guard.shell import stream as shell_stream

    return shell_stream.supported()


def _stdin_argv(parsed: ShellArgs) -> list[bytes]:
    """bash's arguments for reading the script operand's commands from stdin (``-s``)."""
    opts = [o for o in parsed.options if o not in ("--", "-")]
    return [sysenv.fsencode(a) for a in ("-s", *opts, "--", *parsed.rest)]


def run(args: list[str]) -> int:
    """Everything ``main`` does, minus the process exit. Returns the status when not exec-ing."""
    parsed = parse_args(args)
    argv = [sysenv.fsencode(a) for a in args]
    if parsed.mode == "passthrough":
        return launch(argv, None)
    if parsed.mode == "command":
        text = parsed.operand or ""
        cwd = current_dir()
        decision = served_decision(args, text, cwd, parsed) or guard_command(text, cwd, parsed)
        if decision.action == "refuse":
            return REFUSED_STATUS
        return launch(argv, text, plain=decision.plain, verdict=decision.verdict)
    if parsed.mode == "script":
        script = read_script_file(parsed.operand or "")
        if script.kind == "stdin" and _streamable(parsed):
            from guard.shell import stream as shell_stream

            return shell_stream.run_stream(parsed, _stdin_argv(parsed), name=parsed.operand)
        if script.kind == "unknown" or script.kind == "stdin":
            # bash reads it; reading it here would take what bash reads (a FIFO, a terminal)
            if sysenv.environ().get("GUARD_FAIL", "").strip().lower() == "closed":
                say(f"guard: cannot check the script: {script.reason or parsed.operand}; "
                     "refusing it (GUARD_FAIL=closed)")
                return REFUSED_STATUS
            return launch(argv, None)
        if script.text is None:  # unreadable or missing: bash reports it in its own words
            return launch(argv, None)
        decision = guard_command(script.text, current_dir(), parsed)
        if decision.action == "refuse":
            return REFUSED_STATUS
        return launch(argv, script.text, verdict=decision.verdict)
    # stdin
    try:
        posix.fstat(0)
    except OSError:  # stdin closed: bash reads no commands; nothing to check
        return launch(argv, None)
    if posix.isatty(0):
        from guard.shell.interactive import interactive_session

        return interactive_session(parsed)
    if _streamable(parsed):
        from guard.shell import stream as shell_stream

        return shell_stream.run_stream(parsed, argv)
    data = _read_all(0)
    text = data.decode("utf-8", "surrogateescape")
    decision = guard_command(text, current_dir(), parsed)
    if decision.action == "refuse":
        return REFUSED_STATUS
    _replace_stdin(data)
    return launch(argv, text, verdict=decision.verdict)


def main() -> None:
    # Die of SIGINT like bash would while the guard is still deciding, without a traceback
    # (unless the caller ignores SIGINT: then Python left it ignored, and so do we).
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        status = run(sys.argv[1:])
    except KeyboardInterrupt:
        status = 130
    except Exception as exc:  # noqa: BLE001 - last resort: never a traceback
        status = failed(exc, sys.argv[1:])
    exit_now(status)


if __name__ == "__main__":
    main()
