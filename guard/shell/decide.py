"""What every guard-shell mode (``-c``, script, stream, interactive) does with one command:
decide it, record a refusal, and launch the real shell.

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
from guard.shell import simple_exec
from guard.shell.launch import original_environ, reset_signals
from guard.system import sysenv

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported where it is used: not on guard-shell -c's path
    from collections.abc import Mapping

    from guard.shell.session import SessionState

REFUSED_STATUS = 126
DEFAULT_REAL_SHELL = "/bin/bash"
# The analysis of one command gets this many seconds; past it the guard's own failure policy
# applies (GUARD_FAIL). A constant on purpose: nothing an agent sets can shorten it.
ANALYSIS_TIMEOUT = 10.0


def analysis_text(raw: str) -> str:
    """Text for the analyser: undecodable bytes (kept as surrogates in argv) become U+FFFD.

    The real shell always gets the original bytes; only the analysis sees this copy.
    """
    try:
        raw.encode("utf-8")
        return raw
    except UnicodeEncodeError:
        return sysenv.fsencode(raw).decode("utf-8", "replace")


# --------------------------------------------------------------------------- decision


class Decision:
    """What to do with one command: ``action`` is ``"run"`` or ``"refuse"``.

    ``message`` is printed on stderr (the refusal text, or the one-line internal-error notice
    when the guard itself failed). ``verdict`` is the engine's Verdict when there was one.
    """

    __slots__ = ("action", "message", "verdict", "error", "plain")

    def __init__(self, action: str, message: str | None = None, verdict: object | None = None,
                 error: str | None = None, plain: bool = False) -> None:
        self.action, self.message, self.verdict, self.error = action, message, verdict, error
        # plain: passed the pre-check (a listed program that runs nothing else): nothing it prints
        # can need an annotation, so the real shell is exec'd without the relay
        self.plain = plain

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Decision) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return f"Decision({self.action!r}, {self.message!r}, plain={self.plain!r})"


class _AnalysisTimeout(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _AnalysisTimeout(f"analysis took longer than {ANALYSIS_TIMEOUT:g}s")


def _analyze_bounded(command: str, context: object) -> object:
    from guard.engine import analyze

    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, ANALYSIS_TIMEOUT)
    saved = _detach_stdin()
    try:
        return analyze(command, context)  # type: ignore[arg-type]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        _reattach_stdin(saved)


def _detach_stdin() -> int:
    """Put ``/dev/null`` on fd 0 while the analysis runs: stdin is the command's (a pipe, the
    rest of a script, the terminal), and nothing the analysis opens as ``/dev/stdin``,
    ``/dev/fd/0`` or ``/proc/self/fd/0`` may take a byte of it. Returns the saved copy (-1:
    nothing to restore)."""
    try:
        saved = posix.dup(0)  # non-inheritable: nothing started meanwhile gets it
    except OSError:
        return -1
    try:
        null = posix.open("/dev/null", posix.O_RDONLY)
        posix.dup2(null, 0)
        posix.close(null)
    except OSError:
        posix.close(saved)
        return -1
    return saved


def _reattach_stdin(saved: int) -> None:
    if saved >= 0:
        try:
            posix.dup2(saved, 0)
        finally:
            posix.close(saved)


def reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    detail = text[0] if text else ""
    name = type(exc).__name__
    if isinstance(exc, _AnalysisTimeout):
        return detail
    return f"{name}: {detail}"[:200] if detail else name


def fail_closed(env: "Mapping[str, str]") -> bool:
    return env.get("GUARD_FAIL", "").strip().lower() == "closed"


def failure_decision(reason: str, env: "Mapping[str, str]") -> Decision:
    """The guard could not decide: fail open (run, one line) unless ``GUARD_FAIL=closed``."""
    from guard.text.display import message

    reason = message(reason, 300)  # an exception's text may repeat the command
    if fail_closed(env):
        return Decision(
            "refuse", f"guard: internal error, refusing the command (GUARD_FAIL=closed): {reason}", error=reason
        )
    return Decision("run", f"guard: internal error, running the command unchecked: {reason}", error=reason)


def decide(
    command: str,
    cwd: str | None = None,
    aliases: dict[str, str] | None = None,
    functions: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    startup: tuple[str, ...] = (),
) -> Decision:
    """Analyse ``command`` and say whether to run it. Never raises.

    ``startup``: files the shell reads first whose definitions are the command's state (the
    profiles of a login shell).

    A command that ``guard.shell.precheck`` proves harmless (one plain simple command of a listed
    program, nothing shadowing its name) runs without loading the analysis.
    """
    base_env = sysenv.environ() if env is None else env
    if passes_precheck(command, base_env, aliases, functions):
        return Decision("run", plain=True)
    try:
        from guard.context import Context

        ctx = Context.from_environ(cwd=cwd, env=env, aliases=aliases or {}, functions=functions or {},
                                   startup_files=startup)
        verdict = _analyze_bounded(analysis_text(command), ctx)
        kind = getattr(verdict, "verdict", None)
        if kind == "allow":
            if fail_closed(base_env):
                from guard.ir import over_budget

                cut = over_budget(verdict)  # type: ignore[arg-type]
                if cut is not None:  # a budget stopped the analysis: not a decision
                    from guard.text.display import message as tidy

                    return Decision("refuse", f"guard: refusing the command (GUARD_FAIL=closed): {tidy(cut, 300)}",
                                    verdict=verdict, error=cut)
            if getattr(verdict, "action", None) == "warn":  # a rule on trial: run, and say the route
                return Decision("run", getattr(verdict, "message", None), verdict=verdict)
            return Decision("run", verdict=verdict)
        if kind == "refuse":
            message = getattr(verdict, "message", None) or "guard: command refused"
            return Decision("refuse", message, verdict=verdict)
        return failure_decision(f"the engine returned no verdict ({kind!r})", base_env)
    except (Exception, RecursionError, MemoryError, _AnalysisTimeout) as exc:  # noqa: B014
        return failure_decision(reason(exc), base_env)


def decide_in(command: str, state: "SessionState") -> Decision:
    """``decide`` for a line of a live session (stdin stream or terminal): with the cwd,
    aliases, functions and variables its real shell had after the last command."""
    from guard.shell.session import analysis_env

    return decide(command, cwd=state.cwd, aliases=dict(state.aliases), functions=dict(state.functions),
                  env=analysis_env(state))


def passes_precheck(
    command: str,
    env: "Mapping[str, str]",
    aliases: dict[str, str] | None,
    functions: dict[str, str] | None,
) -> bool:
    try:
        from guard.shell.precheck import trivially_allowed

        shadowed = {*(aliases or {}), *(functions or {})}
        return bool(trivially_allowed(command, env=env, shadowed=shadowed))
    except Exception:  # noqa: BLE001 - no pre-check: the full analysis decides
        return False


# --------------------------------------------------------------------------- audit


def on_trial(decision: Decision) -> bool:
    """Whether a rule on trial (warn, observe) matched a command that runs: it is logged too."""
    return decision.action == "run" and getattr(decision.verdict, "action", None) in ("warn", "observe")


def record_refusal(command: str, decision: Decision, cwd: str | None, environ: dict[str, str] | None = None,
                   client: str | None = None) -> None:
    """Append the refusal (or what a rule on trial would have refused) to the audit log. A
    logging failure never changes the verdict."""
    try:
        from guard.audit import log

        env = dict(sysenv.environ() if environ is None else environ)
        v = decision.verdict
        matched = getattr(v, "matched", None)
        via = list(getattr(matched, "via", ()) or ())
        trial = on_trial(decision)
        record = log.build_record(
            "trial" if trial else "refusal",
            command,
            cwd=cwd or "",
            env=env,
            verdict="allow" if trial else "refuse",
            action=log.TAKEN[v.action] if trial else "refused",  # type: ignore[union-attr]
            category=getattr(v, "category", None) or ("internal-error" if decision.error else None),
            rule=getattr(v, "rule", None),
            tool=getattr(v, "tool", None),
            via=via,
        )
        from guard.shell import hostwrap

        # the agent host (claude-code, codex, …): its wrapper, GUARD_CLIENT, else its variables
        client = client or env.get("GUARD_CLIENT") or hostwrap.client(env)
        session = env.get("GUARD_SESSION") or hostwrap.session(env)
        if client or session:
            record = hostwrap.identify(record, client, session)
        log.append_record(record, env)
    except Exception as exc:  # noqa: BLE001 - the log must never stop the shell
        say(f"guard: warning: could not write the audit log: {reason(exc)}")


# --------------------------------------------------------------------------- running


def say(line: str) -> None:
    try:
        posix.write(2, (line.rstrip("\n") + "\n").encode("utf-8", "surrogateescape"))
    except OSError:
        pass


# --------------------------------------------------------------------------- a served -c command


def served_reply() -> "tuple[bytes, bytes] | None":
    """The server's reply to the request the launcher sent (``guard.shell.launch.send_early``), or
    None. The stderr relay is imported first, while the worker analyses: most analysed commands
    run under it, and its import then does not wait for the reply."""
    try:
        import guard.act.relay  # noqa: F401
    except Exception:  # noqa: BLE001 - launch reports a broken relay in its own way
        pass
    from guard.shell import client

    return client.receive(launcher.pending)  # type: ignore[arg-type]


def replied(reply: "tuple[bytes, bytes]") -> Decision:
    """The decision a server's reply carries; what the worker printed goes to stderr now."""
    action, said = reply
    view = memoryview(said)
    while view:
        try:
            view = view[posix.write(2, view) :]
        except InterruptedError:
            continue
        except OSError:
            break
    if action == b"refuse":
        return Decision("refuse")
    return Decision("run", plain=action == b"plain")


def run_served(args: "list[str]") -> None:
    """guard-shell ``-c`` for a command whose request the launcher sent: exit with the command's
    status once the server replied, without loading guard.shell.main (its other modes and their
    imports); return when there is no reply, and guard.shell.main decides in-process.

    The launcher sends only a ``-c`` command in its plainest shape (``launch.plain_operand``),
    so the arguments are bash's as given, and the text is the one the server analysed."""
    if not launcher.sent or launcher.not_plain is None or current_dir() is None or "guard.engine" in sys.modules:
        return
    try:
        reply = served_reply()
    except Exception:  # noqa: BLE001 - any trouble: guard.shell.main decides
        return
    if reply is None:
        return
    try:
        decision = replied(reply)
        if decision.action == "refuse":
            status = REFUSED_STATUS
        else:
            status = launch([sysenv.fsencode(a) for a in args], launcher.not_plain, plain=decision.plain)
    except KeyboardInterrupt:
        status = 130
    except Exception as exc:  # noqa: BLE001 - last resort: never a traceback
        status = failed(exc, args)
    exit_now(status)


def current_dir() -> str | None:
    try:
        return posix.getcwd()
    except OSError:
        return sysenv.environ().get("PWD") or None


def failed(exc: BaseException, args: "list[str]") -> int:
    """What guard-shell does when deciding or launching raised: the failure policy's message,
    then its refusal, or the real shell with the arguments as given."""
    decision = failure_decision(reason(exc), sysenv.environ())
    say(decision.message or "")
    if decision.action == "refuse":
        return REFUSED_STATUS
    return exec_real([sysenv.fsencode(real_shell()), *map(sysenv.fsencode, args)], original_environ())


def exit_now(status: int) -> None:
    """Flush and leave without the interpreter's teardown (about 1.5 ms on every command that
    ran under the relay): nothing is left to clean up once the real shell has exited."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream has nothing to flush
            pass
    posix._exit(status & 0xFF)


def real_shell() -> str:
    return sysenv.environ().get("GUARD_REAL_SHELL") or DEFAULT_REAL_SHELL


def exec_real(argv: list[bytes], env: dict[bytes, bytes]) -> int:
    shell = argv[0]
    reset_signals()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    try:
        posix.execve(shell, argv, env)
    except OSError as exc:
        say(f"guard: {sysenv.fsdecode(shell)}: {exc.strerror}")
        return 127 if isinstance(exc, FileNotFoundError) else REFUSED_STATUS
    return REFUSED_STATUS  # not reached


def _relay_runner(env: dict[bytes, bytes]) -> object | None:
    """The stderr relay's ``run`` when it would annotate the command's stderr, else None (exec
    directly: a guard outside already relays it, stderr is /dev/null or closed, or the relay is
    broken).

    The only switch between the two ways of running an allowed command.
    """
    try:
        from guard.act import relay

        if not relay.annotates(env.get(relay.MARKER.encode()) == b"1"):
            return None
    except Exception:  # noqa: BLE001 - broken: exec instead
        return None
    return getattr(relay, "run", None)


def launch(args: list[bytes], command: str | None, plain: bool = False, verdict: object | None = None) -> int:
    """Run the real shell with bash arguments ``args`` and return its status.

    ``$0`` of the real shell is its own path (``GUARD_REAL_SHELL``), as when it is called by
    that path. Under the relay a death by signal is mirrored; with exec this does not return.
    """
    shell = sysenv.fsencode(real_shell())
    env = original_environ()
    run = None if plain else _relay_runner(env)
    direct = _simple(args, command, env, run is not None)
    if type(direct) is int:
        return direct  # type: ignore[return-value]
    if run is None:
        if direct is not None:  # the exec bash would make; a failed one is bash's to report
            reset_signals()
            try:
                simple_exec.execute(*direct)  # type: ignore[misc]
            except OSError:
                pass
        return exec_real([shell, *args], env)
    reset_signals()
    argv, run_env, exec_path = [shell, *args], env, None
    if direct is not None:
        exec_path, argv, run_env = direct  # type: ignore[misc]
    return int(
        run(  # type: ignore[operator]
            [sysenv.fsdecode(a) for a in argv],
            {sysenv.fsdecode(k): sysenv.fsdecode(v) for k, v in run_env.items()},
            command=command,
            mirror_signal=True,
            verdict=verdict,  # what classify knew: the annotator's programs, argv and tree
            exec_path=None if exec_path is None else sysenv.fsdecode(exec_path),
        )
    )


def _simple(args: list[bytes], command: str | None, env: dict[bytes, bytes], spawned: bool) -> object | None:
    """What ``guard.shell.simple_exec`` says bash would do at once with ``-c command``: a status, the
    (path, argv, environment) of the exec it would make, or None (bash runs it). A program to
    be spawned rather than exec'd must be one whose exec will not fail: a failed one cannot be
    handed back to bash then."""
    if command is None or len(args) < 2 or args[0] != b"-c":
        return None
    try:
        found = simple_exec.target([sysenv.fsdecode(a) for a in args], command, env, launcher.duplicated)
        if spawned and type(found) is tuple and not simple_exec.kernel_runs(found[0]):
            return None
    except Exception:  # noqa: BLE001 - anything odd: bash runs it
        return None
    return found

