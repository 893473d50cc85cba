"""``guard hook HOST``: one hook call of an agent host.

Reads the host's JSON payload on stdin, runs the analysis ``guard check`` runs (cwd from the
payload, tree and rules from the environment and config), writes a refusal to the audit log with
the host's name and session id, and answers in the host's protocol (``guard.hooks.protocols``).
An allowed command gets no decision. Input the protocol does not describe costs one line on
stderr and the host's non-blocking exit status; nothing here prints a traceback.
"""

from __future__ import annotations

import os
import sys

from guard.hooks import fastjson as json
from guard.hooks.protocols import HOSTS, Answer, Call, Host, Malformed, Refusal

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import; a hook runs before every command
    from collections.abc import Mapping
    from typing import Any

EXIT_USAGE = 2
MAX_PAYLOAD = 8 * 1024 * 1024  # bytes of stdin read at most
STRUCTURED = {"claude-code", "opencode"}  # hosts whose refusal carries guard's answer as data

_ARG_PATTERN = r'(\w+)=("(?:[^"\\]|\\.)*"|\[[^\]]*\]|[^,()]+)'  # compiled on a refusal: re costs ms


def usage() -> str:
    return "guard: usage: guard hook " + "|".join(HOSTS) + "  (reads the host's JSON payload on stdin)"


def tool_arguments(message: str, tool: str | None) -> dict[str, Any]:
    """The arguments of ``tool(…)`` as the refusal message spells them (from the rules' tool
    templates), so a host can call the tool without parsing prose."""
    if not tool:
        return {}
    at = message.find(tool + "(")
    if at < 0:
        return {}
    depth, start = 0, at + len(tool)
    end = start
    for end in range(start, len(message)):
        ch = message[end]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0:
                break
    import re

    out: dict[str, Any] = {}
    for key, raw in re.findall(_ARG_PATTERN, message[start + 1 : end]):
        raw = raw.strip()
        if raw.startswith('"'):
            try:
                out[key] = json.loads(raw)
            except ValueError:
                out[key] = raw.strip('"')
        else:
            out[key] = raw
    return out


def structured(verdict: object, message: str, command: str = "") -> dict[str, Any]:
    """guard's answer as data: category, rule, the tool and its arguments, what was matched."""
    tool = getattr(verdict, "tool", None)
    out: dict[str, Any] = {
        "verdict": "refuse",
        "category": getattr(verdict, "category", None),
        "rule": getattr(verdict, "rule", None),
        "tool": tool,
        "arguments": tool_arguments(message, tool),
    }
    matched = getattr(verdict, "matched", None)
    if matched is not None:
        from guard.text.display import elide, inert
        from guard.text.redact import redact, redact_argv, redact_known, secrets_in

        secrets = secrets_in(command)

        # what the matched invocation said, as a message would repeat it: no credential, no
        # control character, no word past the cap
        out["matched"] = {
            "program": inert(matched.program),
            "argv": [elide(inert(redact_known(a.replace("\x00", "…"), secrets)), 200)
                     for a in redact_argv(matched.argv[:32])],
            "via": [elide(inert(redact(redact_known(v, secrets))), 200) for v in matched.via],
        }
    return out


def read_payload(stream: Any) -> Any:
    data = stream.read(MAX_PAYLOAD + 1)
    if len(data) > MAX_PAYLOAD:
        raise Malformed(f"payload larger than {MAX_PAYLOAD} bytes")
    if not data.strip():
        raise Malformed("empty payload")
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except ValueError as e:
        raise Malformed(f"not JSON ({e})") from None


def record(host: Host, call: Call, decision: Any, cwd: str, env: Mapping[str, str]) -> None:
    """The refusal in the audit log, with the host's name (``client``) and session id."""
    try:
        from guard.audit import log

        v = decision.verdict
        matched = getattr(v, "matched", None)
        trial = decision.action != "refuse"  # a rule on trial (warn, observe) matched; the command runs
        rec = log.build_record(
            "trial" if trial else "refusal",
            call.command,
            cwd=cwd,
            env=env,
            verdict="allow" if trial else "refuse",
            action=log.TAKEN[v.action] if trial else "refused",
            category=getattr(v, "category", None) or ("internal-error" if decision.error else None),
            rule=getattr(v, "rule", None),
            tool=getattr(v, "tool", None),
            via=list(getattr(matched, "via", ()) or ()),
        )
        from guard.shell.hostwrap import identify

        log.append_record(identify(rec, host.name, call.session), env)
    except Exception as exc:  # noqa: BLE001 - the log never changes the answer
        print(f"guard: warning: could not write the audit log: {type(exc).__name__}: {exc}", file=sys.stderr)


def answer(host: Host, payload: Any, env: Mapping[str, str]) -> Answer:
    """The answer to one payload. Raises ``Malformed`` for input the protocol does not describe."""
    from guard.hooks import after

    if after.is_after(payload):  # a post-tool call: explain the output, never refuse
        out = after.read(host, payload)
        if out is None:
            return host.allow
        cwd = out.cwd if out.cwd and os.path.isabs(out.cwd) else _cwd()
        text = after.explanation(out, cwd, env, host.name)
        return Answer(after.answer_text(host, text, out.event)) if text else host.allow
    call = host.read(payload)
    if call is None:  # not the shell tool: no opinion
        return host.allow
    try:
        call.command.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800"): the host can only run U+FFFD
        from guard.record import replace

        call = replace(call, command=call.command.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
    cwd = call.cwd if call.cwd and os.path.isabs(call.cwd) else _cwd()
    if _plain(call.command, env):
        return host.allow  # one program and plain words that no rule can refuse: as guard-shell does
    served = _served(host, call, cwd, env)
    if served is not None and served[0] != b"refuse":
        said = served[1].decode("utf-8", "replace")
        from guard.ruleset.actions import WARNING

        if said.startswith(WARNING) and host.notice is not None:  # a rule in warn; the server logged it
            return host.notice(said.strip())
        if said:  # a fail-open notice: the host shows stderr in its log
            sys.stderr.write(said)
        return host.allow
    if served is not None and host.name not in STRUCTURED:  # the server's refusal is the whole answer
        from guard.text.display import message as tidy

        return host.deny(Refusal(tidy(served[1].decode("utf-8", "replace").strip() or "guard: command refused"), {}))
    from guard.shell.decide import analysis_text, decide

    # in-process: every command when there is no server; a refusal the server found (and
    # logged) is analysed again here for the structured answer, which the server does not send
    decision = decide(analysis_text(call.command), cwd=cwd, env=dict(env))
    if served is not None:
        from guard.text.display import message as tidy

        text = tidy(served[1].decode("utf-8", "replace").strip() or "guard: command refused")
        return host.deny(Refusal(text, structured(decision.verdict, text, call.command)))
    if decision.action != "refuse":
        trial = getattr(decision.verdict, "action", None)
        if trial in ("warn", "observe"):
            record(host, call, decision, cwd, env)
        if trial == "warn" and decision.message and host.notice is not None:
            return host.notice(decision.message)  # the host's non-blocking context: the model reads it
        if decision.message:
            from guard.text.display import message as tidy

            print(tidy(decision.message), file=sys.stderr)
        return host.allow
    from guard.text.display import message as tidy

    text = tidy(decision.message or "guard: command refused")
    record(host, call, decision, cwd, env)
    return host.deny(Refusal(text, structured(decision.verdict, text, call.command)))


def _plain(command: str, env: Mapping[str, str]) -> bool:
    """guard-shell's pre-check: one program and literal words that no shipped rule can refuse."""
    try:
        from guard.shell.precheck import trivially_allowed

        return bool(trivially_allowed(command, env=env, shadowed=set()))
    except Exception:  # noqa: BLE001 - no pre-check: the analysis decides
        return False


def _served(host: Host, call: Call, cwd: str, env: Mapping[str, str]) -> tuple[bytes, bytes] | None:
    """The analysis server's (action, what it printed) for the command, as guard-shell -c would
    get it; the server's worker logs a refusal with the host and session from GUARD_CLIENT and
    GUARD_SESSION. None: no server (one is started for the next call), or it is turned off."""
    try:
        from guard.shell import client

        if not client.enabled(env) or "\x00" in call.command:
            return None
        wire_env = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
        wire_env[b"GUARD_CLIENT"] = host.name.encode()
        if call.session:
            wire_env[b"GUARD_SESSION"] = os.fsencode(call.session)
        else:
            wire_env.pop(b"GUARD_SESSION", None)
        return client.ask([b"-c", os.fsencode(call.command)], cwd, wire_env)
    except Exception:  # noqa: BLE001 - any trouble: analyse here
        return None


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in HOSTS:
        print(usage(), file=sys.stderr)
        return EXIT_USAGE
    host = HOSTS[argv[0]]
    try:
        result = answer(host, read_payload(sys.stdin.buffer), os.environ)
    except Malformed as e:
        return _undecided(host, argv[0], str(e))
    except (Exception, RecursionError, MemoryError) as e:  # noqa: B014 - a bug in guard: one line, never a traceback
        return _undecided(host, argv[0], f"internal error: {type(e).__name__}: {e}")
    return _write(result)


def _undecided(host: Host, name: str, detail: str) -> int:
    """No decision could be made: the host's deny under ``GUARD_FAIL=closed``, else one line on
    stderr and the host's non-blocking exit status."""
    from guard.text.display import message as tidy

    detail = tidy(detail, 300)
    if os.environ.get("GUARD_FAIL", "").strip().lower() == "closed":
        text = f"guard: hook {name}: {detail}; refusing the command (GUARD_FAIL=closed)"
        return _write(host.deny(Refusal(text, {"verdict": "refuse", "category": "internal-error"})))
    try:
        print(f"guard: hook {name}: {detail}; no decision", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return host.malformed_status


def _write(result: Answer) -> int:
    if result.stdout:
        try:
            sys.stdout.write(result.stdout + "\n")
            sys.stdout.flush()
        except UnicodeEncodeError:  # a lone surrogate left in some field: JSON escapes it
            sys.stdout.buffer.write(result.stdout.encode("utf-8", "backslashreplace") + b"\n")
            sys.stdout.flush()
    return result.status
