"""Interactive ``guard-shell``: one real shell session, every complete command checked first.

How it works:

* The real shell runs on a pseudo-terminal (pexpect), started with the user's options plus
  ``--noediting``; the guard does the line editing itself (Python's readline).
* A hook installed as the session's ``PROMPT_COMMAND`` runs after every command. It prints a
  *sync* marker, saves any lines typed ahead while the command ran (they are checked like any
  other input, never run unchecked), dumps the session's state (cwd, variables, aliases,
  functions, prompts) to a private file and prints a *ready* marker.
* The guard reads lines until they form a complete command (``bash -n``), analyses it with that
  state and either prints the refusal (``$?`` becomes 126) or writes the text to a file the
  session ``source``s at top level, so variables, ``cd``, aliases and functions persist.
* While a command runs, the terminal is in raw mode and bytes go straight between the user and
  the session: Ctrl-C, Ctrl-Z, ``read``, ``less`` and ``vi`` reach the command itself.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile

from guard.shell.args import ShellArgs
from guard.shell.decide import (
    REFUSED_STATUS,
    decide_in,
    failure_decision,
    launch,
    on_trial,
    real_shell,
    record_refusal,
    say,
)
from guard.shell.launch import original_environ
from guard.shell.session import INCOMPLETE, SessionState, ends_with_continuation, parse_state

# Options of the outer command line that the session's real shell gets too.
_PASS_LONG = {"--login", "--norc", "--noprofile", "--posix", "--restricted", "--rcfile", "--init-file"}


# --------------------------------------------------------------------------- pure helpers


def is_complete(text: str, shell: str | None = None) -> bool:
    """Whether ``text`` is a whole command, as the real shell's parser (``bash -n``) sees it.

    Unfinished quotes, open compound commands, dangling ``&&``/``|`` and heredocs whose
    delimiter has not come yet are incomplete; any other syntax error is complete (the shell
    will report it).
    """
    if not text.strip():
        return True
    if ends_with_continuation(text):
        return False
    env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    try:
        proc = subprocess.run(
            [shell or real_shell(), "--norc", "--noprofile", "-n"],
            input=text.encode("utf-8", "surrogateescape"),
            capture_output=True,
            env=env,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return True
    err = proc.stderr.decode("utf-8", "replace")
    return not any(marker in err for marker in INCOMPLETE)


def strip_prompt_markers(prompt: str) -> str:
    return prompt.replace("\x01", "").replace("\x02", "")


def init_script(nonce: str, workdir: str) -> str:
    """The session's hook, installed once at start-up (bash syntax)."""
    q = "'" + workdir.replace("'", "'\\''") + "'"
    return rf"""
__guard_dir={q}
__guard_hook() {{
  local __guard_s=$? __guard_l __guard_n
  local -
  set +euxv +o pipefail
  builtin command stty -echo 2>/dev/null
  builtin printf '\033]777;guard-sync;{nonce}\007'
  : > "$__guard_dir/typeahead"
  while IFS= builtin read -r __guard_l; do
    if [[ $__guard_l == *'ACK-{nonce}' ]]; then
      __guard_l=${{__guard_l%'ACK-{nonce}'}}
      [[ -n $__guard_l ]] && builtin printf '%s' "$__guard_l" >> "$__guard_dir/typeahead"
      break
    fi
    builtin printf '%s\n' "$__guard_l" >> "$__guard_dir/typeahead"
  done
  if [[ -n ${{PS1-}} ]]; then __guard_ps1=$PS1; PS1=; fi
  if [[ -n ${{PS2-}} ]]; then __guard_ps2=$PS2; PS2=; fi
  {{
    builtin printf 'S\0%s\0D\0%s\0' "$__guard_s" "$PWD"
    for __guard_n in $(builtin compgen -v); do
      builtin printf 'V\0%s\0%s\0' "$__guard_n" "${{!__guard_n-}}"
    done
    for __guard_n in $(builtin compgen -e); do builtin printf 'E\0%s\0' "$__guard_n"; done
    for __guard_n in "${{!BASH_ALIASES[@]}}"; do
      builtin printf 'A\0%s\0%s\0' "$__guard_n" "${{BASH_ALIASES[$__guard_n]}}"
    done
    for __guard_n in $(builtin compgen -A function); do
      builtin printf 'F\0%s\0' "$__guard_n"; builtin declare -f -- "$__guard_n"; builtin printf '\0'
    done
    builtin printf 'P\0%s\0Q\0%s\0' "${{__guard_ps1@P}}" "${{__guard_ps2@P}}"
  }} > "$__guard_dir/state" 2>/dev/null
  builtin printf '\033]777;guard-ready;{nonce}\007'
  return $__guard_s
}}
__guard_pre() {{
  local __guard_s=$?
  builtin history -s -- "$(< "$__guard_dir/cmd")" 2>/dev/null
  builtin command stty echo 2>/dev/null
  return $__guard_s
}}
__guard_ps1=${{PS1-'\s-\v\$ '}}
__guard_ps2=${{PS2-'> '}}
set +o history +o emacs +o vi
PROMPT_COMMAND=__guard_hook
readonly PROMPT_COMMAND
readonly -f __guard_hook __guard_pre
"""


def partial_marker_len(buf: bytes, markers: tuple[bytes, ...]) -> int:
    """Length of the longest tail of ``buf`` that is the start of one of ``markers``."""
    start = buf.rfind(b"\x1b")
    if start < 0:
        return 0
    tail = buf[start:]
    return len(tail) if any(m.startswith(tail) for m in markers) else 0


def sync_marker(nonce: str) -> bytes:
    return f"\x1b]777;guard-sync;{nonce}\x07".encode()


def ready_marker(nonce: str) -> bytes:
    return f"\x1b]777;guard-ready;{nonce}\x07".encode()


# --------------------------------------------------------------------------- the session


def _shell_args(parsed: ShellArgs) -> list[str]:
    long_opts: list[str] = []
    short_opts: list[str] = []
    opts = list(parsed.options)
    i = 0
    while i < len(opts):
        a = opts[i]
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            if name in _PASS_LONG:
                long_opts.append(a)
                if name in ("--rcfile", "--init-file") and "=" not in a and i + 1 < len(opts):
                    long_opts.append(opts[i + 1])
                    i += 1
        elif a[:1] in "-+" and len(a) > 1:
            letters = "".join(ch for ch in a[1:] if ch not in "csi")
            takes = sum(1 for ch in a[1:] if ch in "oO")
            args = opts[i + 1 : i + 1 + takes]
            i += takes
            keep = [x for x in args if x not in ("vi", "emacs")]
            if letters and len(keep) == takes:
                short_opts.append(a[0] + letters)
                short_opts.extend(keep)
        i += 1
    return [*long_opts, "--noediting", *short_opts, "-i"]


class Session:
    """One real shell on a pty, driven as described in the module docstring."""

    def __init__(self, parsed: ShellArgs) -> None:
        import pexpect

        self.nonce = secrets.token_hex(8)
        self.dir = tempfile.mkdtemp(prefix="guard-shell-")
        with open(os.path.join(self.dir, "init.sh"), "w") as fh:
            fh.write(init_script(self.nonce, self.dir))
        env = {os.fsdecode(k): os.fsdecode(v) for k, v in original_environ().items()}
        rows, cols = _winsize()
        self.child = pexpect.spawn(
            real_shell(),
            _shell_args(parsed),
            env=env,
            echo=False,
            dimensions=(rows, cols),
            use_poll=True,
        )
        self.fd = self.child.child_fd
        self.state = SessionState()
        self.pending: list[str] = []
        self.raw_out = os.fdopen(os.dup(1), "wb", buffering=0)

    # -- talking to the shell

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                k = os.write(self.fd, view)
            except InterruptedError:
                continue
            view = view[k:]

    def start(self) -> bool:
        """Install the hook and wait for the first ready marker. False if the shell died."""
        path = os.path.join(self.dir, "init.sh")
        self.write(b"builtin source '" + os.fsencode(path) + b"'\n")
        return self.pump(forward_input=False, boot=True)

    def run(self, text: str) -> bool:
        """Run ``text`` at the session's top level; returns False once the shell has exited."""
        with open(os.path.join(self.dir, "cmd"), "wb") as fh:
            fh.write(text.encode("utf-8", "surrogateescape"))
        path = os.fsencode(os.path.join(self.dir, "cmd"))
        self.write(b"\x15__guard_pre; builtin source '" + path + b"'\n")
        return self.pump(forward_input=True)

    def set_status(self, status: int) -> bool:
        """Make ``$?`` in the session ``status`` without running anything the user typed
        (and without a history entry)."""
        self.write(f"\x15(exit {int(status)})\n".encode())
        return self.pump(forward_input=False)

    def send_eof(self) -> bool:
        self.write(b"\x04")
        return self.pump(forward_input=True)

    # -- the byte pump

    def pump(self, forward_input: bool, boot: bool = False) -> bool:
        """Copy bytes until the hook's ready marker. Returns False when the shell exited."""
        sync, ready = sync_marker(self.nonce), ready_marker(self.nonce)
        buf = b""
        synced = False
        boot_out = b""
        in_fd = 0
        raw_saved = _set_raw(in_fd) if forward_input else None
        old_winch = signal.signal(signal.SIGWINCH, self._on_winch)
        try:
            while True:
                fds = [self.fd]
                if forward_input and not synced:
                    fds.append(in_fd)
                try:
                    readable, _, _ = select.select(fds, [], [])
                except InterruptedError:
                    continue
                if self.fd in readable:
                    try:
                        chunk = os.read(self.fd, 65536)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        self._emit(boot_out + buf) if boot else self._emit(buf)
                        return False
                    buf += chunk
                    if not synced:
                        k = buf.find(sync)
                        if k >= 0:
                            out, buf = buf[:k], buf[k + len(sync) :]
                            if boot:
                                boot_out += out
                            else:
                                self._emit(out)
                            synced = True
                            self.write(f"ACK-{self.nonce}\n".encode())
                    if synced:
                        k = buf.find(ready)
                        if k >= 0:
                            out = buf[:k]
                            self._load_state()
                            if boot:
                                self._emit(_drop_prompt(boot_out + out, self.state.ps1))
                            else:
                                self._emit(out)
                            return True
                    # everything but a possible start of a marker goes out now
                    safe = len(buf) - partial_marker_len(buf, (sync, ready))
                    if boot:
                        boot_out += buf[:safe]
                    else:
                        self._emit(buf[:safe])
                    buf = buf[safe:]
                if forward_input and not synced and in_fd in readable:
                    try:
                        data = os.read(in_fd, 4096)
                    except OSError:
                        data = b""
                    if data:
                        self.write(data)
                    else:
                        forward_input = False
        finally:
            signal.signal(signal.SIGWINCH, old_winch)
            if raw_saved is not None:
                _restore(in_fd, raw_saved)

    def _emit(self, data: bytes) -> None:
        if data:
            try:
                self.raw_out.write(data)
            except OSError:
                pass

    def _on_winch(self, signum: int, frame: object) -> None:
        rows, cols = _winsize()
        try:
            self.child.setwinsize(rows, cols)
        except OSError:
            pass

    def _load_state(self) -> None:
        try:
            with open(os.path.join(self.dir, "state"), "rb") as fh:
                self.state = parse_state(fh.read())
        except OSError:
            pass
        try:
            with open(os.path.join(self.dir, "typeahead"), "rb") as fh:
                typed = fh.read().decode("utf-8", "surrogateescape")
        except OSError:
            typed = ""
        if typed:
            self.pending.extend(typed.splitlines())

    def exit_status(self) -> int:
        try:
            self.child.close(force=True)
        except Exception:  # noqa: BLE001
            pass
        if self.child.signalstatus is not None:
            return 128 + int(self.child.signalstatus)
        return int(self.child.exitstatus or 0)

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------- terminal helpers


def _winsize() -> tuple[int, int]:
    try:
        size = os.get_terminal_size(0)
        return size.lines, size.columns
    except OSError:
        return 24, 80


def _set_raw(fd: int) -> list | None:
    try:
        import termios
        import tty

        saved = termios.tcgetattr(fd)
        tty.setraw(fd)
        return saved
    except Exception:  # noqa: BLE001 - not a terminal
        return None


def _restore(fd: int, saved: list) -> None:
    try:
        import termios

        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    except Exception:  # noqa: BLE001
        pass


_ANSI_MARKERS = re.compile(r"[\x01\x02]")


def _drop_prompt(out: bytes, prompt: str) -> bytes:
    """Remove the start-up prompt the shell printed before the hook was installed."""
    p = _ANSI_MARKERS.sub("", prompt).encode("utf-8", "surrogateescape")
    if p and out.endswith(p):
        return out[: -len(p)]
    return out


# --------------------------------------------------------------------------- the loop


def _read_line(prompt: str, session: Session) -> str:
    """One line from the user (or from lines typed ahead while the last command ran)."""
    if session.pending:
        line = session.pending.pop(0)
        session._emit((strip_prompt_markers(prompt) + line + "\n").encode("utf-8", "surrogateescape"))
        return line
    # ^C interrupts the line being typed (KeyboardInterrupt) only while the user is typing
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return input(prompt)
    finally:
        signal.signal(signal.SIGINT, old)


def read_command(session: Session) -> str | None:
    """A complete command (possibly several lines), "" after Ctrl-C, None on Ctrl-D."""
    lines: list[str] = []
    while True:
        prompt = session.state.ps1 if not lines else session.state.ps2
        try:
            line = _read_line(prompt, session)
        except KeyboardInterrupt:
            session._emit(b"\n")
            return ""
        except EOFError:
            if lines:
                session._emit(b"\n")
                return ""
            return None
        lines.append(line)
        text = "\n".join(lines) + "\n"
        if is_complete(text):
            return text


def _setup_readline() -> None:
    try:
        import readline  # noqa: F401 - makes input() editable with history
    except Exception:  # noqa: BLE001
        pass


def interactive_session(parsed: ShellArgs) -> int:
    """Run the interactive guard loop; returns the session's exit status."""

    try:
        session = Session(parsed)
    except Exception as exc:  # noqa: BLE001 - no session: the failure policy decides
        decision = failure_decision(f"cannot start the interactive session: {exc}", os.environ)
        say(decision.message or "")
        if decision.action == "refuse":
            return REFUSED_STATUS
        return launch([os.fsencode(a) for a in parsed.options], None)
    _setup_readline()
    # Like an interactive bash: ^C while typing drops the line (see _read_line); SIGINT at any
    # other time, ^Z, ^\ and background-tty signals neither stop nor kill the session (while a
    # command runs the terminal is raw and those keys reach the command instead).
    for name in ("SIGINT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGQUIT"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    for sig in (signal.SIGHUP, signal.SIGTERM):  # end through ``finally``: no temp files left
        signal.signal(sig, _exit_on_signal)
    try:
        alive = session.start()
        while alive:
            text = read_command(session)
            if text is None:
                alive = session.send_eof()
                continue
            if not text.strip():
                continue
            st = session.state
            decision = decide_in(text, st)
            if decision.message:
                session._emit((decision.message.rstrip("\n") + "\n").replace("\n", "\r\n").encode())
            if on_trial(decision):
                record_refusal(text, decision, st.cwd)
            if decision.action == "refuse":
                record_refusal(text, decision, st.cwd)
                alive = session.set_status(REFUSED_STATUS)
                continue
            alive = session.run(text)
        return session.exit_status()
    finally:
        try:
            session.child.close(force=True)
        except Exception:  # noqa: BLE001
            pass
        session.cleanup()


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(interactive_session(ShellArgs("stdin")))
