"""``guard-shell`` reading commands from a pipe or file (``-s``, no arguments): one at a time.

bash reads a script on a non-seekable stdin one byte at a time and runs each complete command
as soon as it has read it, so a harness that keeps the shell open on a pipe gets every answer at
once, and a command that reads stdin gets the bytes after it. guard-shell keeps both:

* the real shell (bash, in stdin mode) reads its commands from a pipe the *feeder* writes;
  the original stdin is kept on a spare descriptor, and every command runs with it as its
  stdin (``{ CMD\\n} <&N``), so what a command reads is what it would have read under bash;
* the feeder (a forked child of guard-shell) reads one complete command from the original
  stdin exactly as bash would (byte by byte on a pipe; a seekable file is read ahead and
  the offset put back), analyses it with the session's state, sends it (or, when refused,
  only ``$?=126``) and waits: after each command the shell sends its state (status, cwd,
  variables, aliases, functions) on a second pipe, and only then is more input read.

``$LINENO``, ``$?`` and ``$_`` stay as bash would leave them. What remains visible: ``set -v``
echoes the wrapper lines, a ``DEBUG`` trap sees the state call, and ``declare -F`` lists one
readonly function, ``__guard_sync``.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import sys

from guard.shell.args import ShellArgs
from guard.shell.decide import REFUSED_STATUS, decide_in, launch, on_trial, real_shell, record_refusal, say
from guard.shell.session import INCOMPLETE, ends_with_continuation, parse_state
from guard.system.fdio import read_exact, write_all

# A command line longer than this is not buffered for analysis: the failure policy applies to
# it and it is passed on as read.
MAX_COMMAND_BYTES = 16 * 1024 * 1024
_READ_AHEAD = 1 << 16
# Variable values longer than this are cut in the state dump (the analysis needs names and
# short values; a 100 MB variable must not be copied after every command).
_MAX_VALUE = 65536


def supported(shell: str | None = None) -> bool:
    """Only bash's parser and ``$LINENO`` behave as the wrapper assumes."""
    return "bash" in os.path.basename(shell or real_shell())


# --------------------------------------------------------------------------- bash text


def _sync_function(nonce: str, state_fd: int) -> str:
    """``__guard_sync STATUS FULL LAST``: send the state, return STATUS. The short form (FULL
    0) sends the status and the cwd only; the full one adds variables, exports, aliases and
    functions. ``$PS4`` tracing of it is hidden by the caller (``2>/dev/null``)."""
    end = f"builtin printf 'Z\\0%s\\0' {nonce}"
    return (
        "__guard_sync() { "
        "if [[ $2 != 1 ]]; then "
        f"builtin printf 'S\\0%s\\0D\\0%s\\0' \"$1\" \"${{PWD-}}\" >&{state_fd}; {end} >&{state_fd}; "
        'return "$1"; fi; '
        "local __guard_n IFS=$' \\t\\n'; local -; set +euxvfT +o pipefail; "
        "builtin readonly -f __guard_sync; "
        "{ builtin printf 'S\\0%s\\0D\\0%s\\0' \"$1\" \"$PWD\"; "
        "for __guard_n in $(builtin compgen -v); do "
        f"builtin printf 'V\\0%s\\0%s\\0' \"$__guard_n\" \"${{!__guard_n:0:{_MAX_VALUE}}}\"; done; "
        "for __guard_n in $(builtin compgen -e); do builtin printf 'E\\0%s\\0' \"$__guard_n\"; done; "
        "for __guard_n in \"${!BASH_ALIASES[@]}\"; do "
        "builtin printf 'A\\0%s\\0%s\\0' \"$__guard_n\" \"${BASH_ALIASES[$__guard_n]}\"; done; "
        "for __guard_n in $(builtin compgen -A function); do "
        "builtin printf 'F\\0%s\\0' \"$__guard_n\"; builtin declare -f -- \"$__guard_n\"; "
        "builtin printf '\\0'; done; "
        f"{end}; }} >&{state_fd} 2>/dev/null; "
        'return "$1"; }'
    )


def quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def init_text(nonce: str, state_fd: int, name: str | None = None) -> bytes:
    """The first line the shell reads: defines the state call, sends the first state, and
    leaves ``$LINENO`` at 0 and ``$_`` as bash set it at start-up. ``name`` becomes ``$0`` (a
    script operand that is stdin: bash names it so in its messages)."""
    argv0 = f"BASH_ARGV0={quote(name)}; " if name is not None else ""
    return (
        "{ " + argv0 + _sync_function(nonce, state_fd) + '; \\__guard_sync 0 1 "$_"; } 2>/dev/null <&$((0*(LINENO=0)))\n'
    ).encode()


def run_text(command: bytes, stdin_fd: int, state_fd: int, full: bool = True) -> bytes:
    """``command`` as the shell gets it: run with the original stdin, then the state call.

    The closing line is one more line than bash would have read: ``LINENO-=1`` takes it back.
    The state call keeps ``$?`` (``&&`` so that ``set -e`` does not fire twice) and ``$_``.
    """
    body = command if command.endswith(b"\n") else command + b"\n"
    return (
        b"{ "
        + body
        + f"}} <&$(({stdin_fd}+0*(LINENO-=1))) {stdin_fd}<&- {state_fd}>&-; "
        f'{{ \\__guard_sync "$?" {int(full)} "$_" && \\: "$_"; }} 2>/dev/null\n'.encode()
    )


def refused_text(lines: int) -> bytes:
    """What the shell gets instead of a refused command of ``lines`` lines: ``$?`` becomes 126
    (``set -e`` and an ``ERR`` trap see a failed command) and ``$LINENO`` moves on as if bash
    had read it."""
    return f'{{ \\__guard_sync {REFUSED_STATUS} 0 "$_"; }} 2>/dev/null <&$((0*(LINENO+={lines - 1})))\n'.encode()


# --------------------------------------------------------------------------- reading commands


class Reader:
    """Reads stdin the way bash does: never past the end of the command it returns."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        try:
            os.lseek(fd, 0, os.SEEK_CUR)
            self.seekable = True
        except OSError:
            self.seekable = False
        self.eof = False

    def line(self, limit: int = MAX_COMMAND_BYTES) -> bytes:
        """One line with its newline; the tail at end of input; b"" at end of input. A line
        longer than ``limit`` comes back cut at ``limit`` bytes (the rest is the next read)."""
        if self.eof:
            return b""
        return self._line_seekable(limit) if self.seekable else self._line_pipe(limit)

    def _line_pipe(self, limit: int) -> bytes:
        out = bytearray()
        while len(out) < limit:
            seen = _peek(self.fd, min(_READ_AHEAD, limit - len(out)))
            if seen:
                # what is in the pipe now, unconsumed: take up to the newline, and all of it
                # when there is none (bash reads every byte of the line it is in)
                k = seen.find(b"\n")
                want = k + 1 if k >= 0 else len(seen)
                got = read_exact(self.fd, want)
                out += got
                if got.endswith(b"\n") or len(got) < want:
                    if len(got) < want:
                        self.eof = True
                    break
                continue
            try:
                b = os.read(self.fd, 1)
            except InterruptedError:
                continue
            except OSError:
                b = b""
            if not b:
                self.eof = True
                break
            out += b
            if b == b"\n":
                break
        return bytes(out)

    def _line_seekable(self, limit: int) -> bytes:
        out = bytearray()
        while len(out) < limit:
            try:
                chunk = os.read(self.fd, min(_READ_AHEAD, limit - len(out)))
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                break
            k = chunk.find(b"\n")
            if k >= 0:
                out += chunk[: k + 1]
                extra = len(chunk) - k - 1
                if extra:
                    os.lseek(self.fd, -extra, os.SEEK_CUR)
                break
            out += chunk
        return bytes(out)


_TEE: list[object] = []  # [libc, scratch read end, scratch write end] once set up; [None] if not


def _peek(fd: int, n: int) -> bytes:
    """Up to ``n`` bytes waiting in the pipe ``fd``, left there (``tee(2)`` into a scratch
    pipe); b"" when there are none yet or ``fd`` is not a pipe (the caller reads one byte)."""
    if not _TEE:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            r, w = os.pipe()
            import fcntl

            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, _READ_AHEAD)
            _TEE.extend([libc, r, w])
        except Exception:  # noqa: BLE001 - no tee: one byte at a time, as bash reads
            _TEE.append(None)
    if _TEE[0] is None:
        return b""
    libc, r, w = _TEE
    import select

    try:
        select.select([fd], [], [])  # wait for data (or end of input) without taking any
    except (OSError, ValueError):
        return b""
    k = libc.tee(fd, w, min(n, _READ_AHEAD), 2)  # type: ignore[attr-defined]  # SPLICE_F_NONBLOCK
    if k <= 0:
        return b""
    return read_exact(r, k)  # type: ignore[arg-type]


_SIMPLE_LINE = re.compile(rb"[A-Za-z0-9_./=:,+@%^ \t-]*\n?")
_RESERVED = frozenset(
    b"if then else elif fi case esac for select while until do done function time coproc { } [[ ]] !".split()
)


def _obviously_complete(text: bytes) -> bool:
    """A single line of plain words that opens nothing: complete without asking bash."""
    if text.count(b"\n") > 1 or not _SIMPLE_LINE.fullmatch(text):
        return False
    return not any(w in _RESERVED for w in text.split())


def syntax(text: bytes, shopts: tuple[str, ...] = ()) -> str:
    """``"ok"``, ``"incomplete"`` or ``"error"``: what bash's own parser (``bash -n``, with the
    session's parser-changing ``shopt`` options) says of ``text``."""
    import subprocess

    if _obviously_complete(text):
        return "ok"
    clean = text.replace(b"\0", b"")  # bash drops NUL bytes from what it reads
    if ends_with_continuation(clean.decode("utf-8", "surrogateescape")):
        return "incomplete"
    opts = [x for o in shopts if o in _PARSER_SHOPTS for x in ("-O", o)]
    env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    try:
        proc = subprocess.run(
            [real_shell(), "--norc", "--noprofile", *opts, "-n"],
            input=clean,
            capture_output=True,
            env=env,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "ok"
    err = proc.stderr.decode("utf-8", "replace")
    if any(m in err for m in INCOMPLETE):  # a heredoc without its end is only a warning
        return "incomplete"
    return "ok" if proc.returncode == 0 else "error"


_PARSER_SHOPTS = ("extglob", "extquote", "globasciiranges")


def read_command(reader: Reader, shopts: tuple[str, ...] = ()) -> tuple[bytes, str]:
    """The next command (possibly several lines) and what bash's parser says of it.

    ``(b"", "ok")`` only at end of input. A command still incomplete at end of input comes back
    as ``"incomplete"``: bash reports it.
    """
    text = b""
    while True:
        line = reader.line(max(1, MAX_COMMAND_BYTES - len(text)))
        if not line:
            return text, ("incomplete" if text else "ok")
        text += line
        if len(text) >= MAX_COMMAND_BYTES:
            return text, "incomplete"
        if not line.endswith(b"\n"):
            continue
        verdict = syntax(text, shopts)
        if verdict != "incomplete":
            return text, verdict


def _only_comments(raw: bytes) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith(b"#") for ln in raw.replace(b"\0", b"").split(b"\n"))


# --------------------------------------------------------------------------- the feeder


class StateReader:
    """Reads the shell's state records from the state pipe, one dump at a time."""

    def __init__(self, fd: int, nonce: str) -> None:
        self.fd = fd
        self.end = b"Z\0" + nonce.encode() + b"\0"
        self.buf = b""

    def next(self) -> bytes | None:
        """One dump (without its end record), or None once the shell has gone."""
        while True:
            k = self._find_end()
            if k >= 0:
                dump, self.buf = self.buf[:k], self.buf[k + len(self.end) :]
                return dump
            try:
                chunk = os.read(self.fd, 1 << 16)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                return None
            self.buf += chunk

    def _find_end(self) -> int:
        # the end record starts a record: at offset 0 or right after a NUL
        start = 0
        while True:
            k = self.buf.find(self.end, start)
            if k <= 0:
                return k
            if self.buf[k - 1 : k] == b"\0":
                return k
            start = k + 1


# Words after which the shell's variables, aliases or functions may differ: assignments, the
# builtins that define or change them, anything that runs code the text does not show. Only
# decides whether the state is sent in full after the command (a short one carries ``$?`` and
# the cwd); a command that might change it gets the full one.
_STATE_WORDS = re.compile(
    rb"=|\(\)|\b(?:alias|unalias|export|declare|typeset|local|readonly|unset|set|shopt|source|eval|"
    rb"read|readarray|mapfile|printf|getopts|let|cd|pushd|popd|enable|builtin|command|exec|trap|"
    rb"function|for|select|hash|caller|wait|jobs|fc|history|complete|compgen|bind|coproc|"
    rb"cd|umask|ulimit)\b|(?:^|[;&|\s(`])\.(?:\s|$)|\$\(\(|\(\("
)


def needs_full_state(text: bytes, known: set[str]) -> bool:
    """Whether ``text`` may change the shell's variables, aliases or functions; ``known`` are
    the names of the session's aliases and functions (calling one may run anything)."""
    if _STATE_WORDS.search(text):
        return True
    if not known:
        return False
    words = set(re.findall(rb"[^\s;&|()<>`'\"]+", text))
    return any(os.fsencode(k) in words for k in known)


class Feeder:
    """Writes commands to the shell and waits for each to finish (runs in the forked child)."""

    def __init__(self, cmd_fd: int, state_fd: int, nonce: str) -> None:
        import fcntl
        import select

        self.cmd_fd = cmd_fd
        self.states = StateReader(state_fd, nonce)
        try:  # one page: the writer can then tell when the shell has read everything
            fcntl.fcntl(cmd_fd, fcntl.F_SETPIPE_SZ, 4096)
        except (OSError, AttributeError):
            pass
        self.poll = select.poll()
        self.poll.register(state_fd, select.POLLIN)
        self.poll.register(cmd_fd, select.POLLOUT)
        self.state_fd = state_fd

    def send(self, data: bytes) -> str:
        """Send ``data`` and a NUL byte (bash drops NULs it reads); return ``"done"`` when the
        state arrived, ``"gone"`` when the shell has exited, ``"more"`` when the shell read the
        NUL without the state: it is still reading the command (it wants more input), or it
        runs nothing (``set -n``)."""
        if not write_all(self.cmd_fd, data + b"\0"):
            return "gone"
        import select

        while True:
            try:
                events = dict(self.poll.poll())
            except InterruptedError:
                continue
            if events.get(self.state_fd):
                return "done"
            if events.get(self.cmd_fd, 0) & (select.POLLERR | select.POLLHUP):
                return "gone"
            if events.get(self.cmd_fd, 0) & select.POLLOUT:
                # drained: the state, if the command is done, was written before the NUL was read
                ready = dict(self.poll.poll(0))
                return "done" if ready.get(self.state_fd) else "more"

    def state(self) -> bytes | None:
        return self.states.next()


def feed(in_fd: int, cmd_fd: int, state_fd: int, stdin_fd: int, nonce: str, name: str | None = None) -> int:
    """The feeder's loop (runs in the forked child). Returns its exit status."""
    feeder = Feeder(cmd_fd, state_fd, nonce)
    if feeder.send(init_text(nonce, SHELL_STATE_FD, name)) != "done":
        return 0
    dump = feeder.state()
    if dump is None:
        return 0
    state = parse_state(dump)
    reader = Reader(in_fd)
    while True:
        shopts = tuple(state.variables.get("BASHOPTS", "").split(":"))
        raw, verdict = read_command(reader, shopts)
        if not raw:
            return 0
        text = raw.replace(b"\0", b"").decode("utf-8", "surrogateescape")
        if _only_comments(raw):  # blank lines and comments: bash reads them, runs nothing
            if not write_all(cmd_fd, raw):
                return 0
            continue
        decision = decide_in(text, state)
        if decision.message:
            say(decision.message)
        full = False
        if on_trial(decision):
            record_refusal(text, decision, state.cwd)
        if decision.action == "refuse":
            record_refusal(text, decision, state.cwd)
            lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)
            data = refused_text(max(1, lines))
        elif verdict != "ok":
            # bash reports it in its own words and runs none of it (non-interactive bash then
            # exits); only a shell that goes on reaches the state call after it
            data = raw if raw.endswith(b"\n") else raw + b"\n"
            if verdict == "incomplete":  # end of input: bash reports it and exits
                write_all(cmd_fd, data)
                return 0
            data += refused_text(0).replace(b"__guard_sync 126", b'__guard_sync "$?"')
        else:
            full = needs_full_state(raw, {*state.aliases, *state.functions})
            data = run_text(raw, stdin_fd, SHELL_STATE_FD, full)
        got = feeder.send(data)
        while got == "more":
            # the shell wants more than bash -n said the command needs: each further line is
            # checked like any other before the shell gets it
            line = reader.line()
            if not line:
                return 0
            more = line.replace(b"\0", b"").decode("utf-8", "surrogateescape")
            decision = decide_in(more, state)
            if decision.message:
                say(decision.message)
            if on_trial(decision):
                record_refusal(more, decision, state.cwd)
            if decision.action == "refuse":
                record_refusal(more, decision, state.cwd)
                return 0  # the shell then reads end of input: nothing of the rest runs
            got = feeder.send(line)
            full = True
        if got == "gone":
            return 0
        dump = feeder.state()
        if dump is None:
            return 0
        new = parse_state(dump)
        if not full:  # a short state: status and cwd; the rest is as it was
            new.variables, new.exported = state.variables, state.exported
            new.aliases, new.functions = state.aliases, state.functions
            new.ps1, new.ps2 = state.ps1, state.ps2
        state = new


# Descriptors the real shell holds: the original stdin and the state pipe's write end. High
# numbers, as bash's own saved descriptors are; commands never see them (each command's
# redirections close them).
SHELL_STDIN_FD = 254
SHELL_STATE_FD = 253
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - without it the feeder still ends at end of input
        pass
    if os.getppid() != parent:
        os._exit(0)


def run_stream(parsed: ShellArgs, argv: list[bytes], name: str | None = None) -> int:
    """Run stdin mode one command at a time. Returns the shell's status (when not exec-ing)."""
    nonce = secrets.token_hex(8)
    p_r, p_w = os.pipe()
    s_r, s_w = os.pipe()
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the feeder
        status = 0
        try:
            os.close(p_r)
            os.close(s_w)
            _die_with_parent(parent)
            for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP):
                signal.signal(sig, signal.SIG_IGN)
            status = feed(0, p_w, s_r, SHELL_STDIN_FD, nonce, name)
        except BaseException:  # noqa: BLE001 - the feeder never prints a traceback
            status = 1
        finally:
            os._exit(status)
    os.close(p_w)
    os.close(s_r)
    os.dup2(0, SHELL_STDIN_FD)
    os.dup2(s_w, SHELL_STATE_FD)
    os.dup2(p_r, 0)
    for fd in (p_r, s_w):
        if fd not in (0, SHELL_STATE_FD, SHELL_STDIN_FD):
            os.close(fd)
    return launch(argv, None)
