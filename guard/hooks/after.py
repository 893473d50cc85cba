"""Post-tool hooks: guard's annotation rules on the output a host hands its post-tool hook, and
the explanation sent back in the form that host shows the model.

- Claude Code and Codex: ``PostToolUse`` with ``tool_response``; the answer is
  ``hookSpecificOutput.additionalContext``. Claude Code calls ``PostToolUseFailure`` instead
  (with ``error``) when the command exits non-zero, which is when there is something to explain.
- Gemini CLI: ``AfterTool`` with ``tool_response`` (``llmContent``); the same answer under
  ``hookEventName: "AfterTool"``.
- Copilot CLI: ``postToolUse`` with ``toolResult`` (``textResultForLlm``); ``additionalContext``.
- OpenCode: guard's plugin (``tool.execute.after``) sends ``{"event": "after", "output"}`` and
  appends ``explanation`` to the tool's output.

Nothing recognised: no answer at all, as for an allowed command.
"""

from __future__ import annotations

from guard.hooks import fastjson as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from guard.hooks.protocols import Host

# the payload keys that hold a shell tool's result, per host (None: not a post-tool payload)
_AFTER_EVENTS = {"PostToolUse", "PostToolUseFailure", "AfterTool", "postToolUse", "postToolUseFailure", "after"}


class Output:
    __slots__ = ("command", "text", "status", "cwd", "session", "event")

    def __init__(self, command: str, text: str, status: int, cwd: str | None, session: str | None,
                 event: str = "") -> None:
        self.command, self.text, self.status, self.cwd, self.session = command, text, status, cwd, session
        self.event = event


def event_of(payload: object) -> str:
    if not isinstance(payload, dict):
        return ""
    got = payload.get("hook_event_name") or payload.get("hookEventName") or payload.get("event")
    return got if isinstance(got, str) else ""


def _unwrap_gemini(text: str) -> tuple[str, int | None]:
    """Gemini CLI's shell result: ``<untrusted_context>`` around ``Output: …``, ``Exit Code: N``
    and ``Process Group PGID: N`` lines; the output as the command wrote it, and its status."""
    status = None
    lines = []
    for line in text.replace("<untrusted_context>", "").replace("</untrusted_context>", "").split("\n"):
        if line.startswith("Exit Code: ") and line[11:].strip().isdigit():
            status = int(line[11:].strip())
            continue
        if line.startswith(("Process Group PGID: ", "Background PIDs: ", "Signal: ", "Error: (none)")):
            continue
        if line.startswith("Output: "):
            line = line[8:]
        lines.append(line)
    return "\n".join(lines).strip("\n"), status


def is_after(payload: object) -> bool:
    """Whether ``payload`` is a post-tool call (each host names its event differently)."""
    if not isinstance(payload, dict):
        return False
    event = payload.get("hook_event_name") or payload.get("hookEventName") or payload.get("event")
    if event in _AFTER_EVENTS:
        return True
    return "toolResult" in payload or "tool_response" in payload


def _texts(value: Any, out: list[str], depth: int = 0) -> None:
    """Every string in a tool result, in order (stdout, stderr, llmContent, textResultForLlm…)."""
    if depth > 6:
        return
    if isinstance(value, str):
        if value:
            out.append(value)
    elif isinstance(value, dict):
        for key, v in value.items():
            if key in ("returnDisplay", "display", "title", "metadata", "toolTelemetry", "sessionLog"):
                continue  # what the person sees, repeating what the model gets
            _texts(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _texts(v, out, depth + 1)


def _status(result: Any) -> int:
    if isinstance(result, dict):
        for key in ("exit_code", "exitCode", "returnCode", "code"):
            v = result.get(key)
            if isinstance(v, int):
                return v
        if result.get("resultType") == "failure" or result.get("error"):
            return 1
    return 1  # unknown: the annotation rules only explain failures they recognise anyway


def read(host: Host, payload: Mapping[str, Any]) -> Output | None:
    """The command and its output, or None when the call is not the host's shell tool."""
    p = dict(payload)
    if host.name == "opencode":
        if p.get("tool") != "bash":
            return None
        cmd = p.get("command")
        return Output(cmd, str(p.get("output") or ""), 1, p.get("cwd"), p.get("sessionID")) if isinstance(cmd, str) else None
    if host.name == "copilot-cli":
        if p.get("toolName") != "bash":
            return None
        args = p.get("toolArgs")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                return None
        cmd = args.get("command") if isinstance(args, dict) else None
        result = p.get("toolResult")
        session = p.get("sessionId") or p.get("session_id")
    else:
        shell = {"claude-code": "Bash", "codex": "Bash", "gemini-cli": "run_shell_command"}.get(host.name)
        if p.get("tool_name") != shell:
            return None
        ti = p.get("tool_input")
        cmd = ti.get("command") if isinstance(ti, dict) else None
        result = p.get("tool_response")
        if result is None and "error" in p:  # Claude Code's PostToolUseFailure
            result = {"error": p.get("error")}
        session = p.get("session_id")
    if not isinstance(cmd, str):
        return None
    parts: list[str] = []
    _texts(result, parts)
    text, status = "\n".join(parts), _status(result)
    if host.name == "gemini-cli":
        text, said = _unwrap_gemini(text)
        status = said if said is not None else status
    return Output(cmd, text, status, p.get("cwd") if isinstance(p.get("cwd"), str) else None,
                  session if isinstance(session, str) else None, event_of(p))


def explanation(out: Output, cwd: str, env: Mapping[str, str], client: str) -> str:
    """guard's annotations of the output, one ``[guard] …`` line each; empty when none fired.
    Each one is logged with the host and session, as guard-shell logs its own."""
    from guard.act.prefilter import sink_for_run

    def audit(records: list[dict[str, Any]]) -> None:
        from guard.audit.log import append_record
        from guard.shell.hostwrap import identify

        for rec in records:
            try:
                append_record(identify(rec, client, out.session), env)
            except Exception:  # noqa: BLE001 - the log never changes the answer
                pass

    def with_audit(ann: Any) -> None:
        ann._audit = audit

    # the annotator itself (rules, re, RE2) is built only when the output holds a needle of a rule
    sink = sink_for_run(["bash", "-c", out.command], env, on_build=with_audit, cwd=cwd, command=out.command)
    sink.feed(out.text.encode("utf-8", "replace"))
    return sink.finish(out.status).decode("utf-8", "replace").strip()


def answer_text(host: Host, text: str, event: str = "") -> str:
    """The host's post-tool answer carrying ``text`` to the model."""
    if host.name == "opencode":
        return json.dumps({"explanation": text}, ensure_ascii=False)
    if host.name == "copilot-cli":
        return json.dumps({"additionalContext": text}, ensure_ascii=False)
    if host.name == "cursor":
        return json.dumps({"agent_message": text}, ensure_ascii=False)
    if host.name == "gemini-cli":
        event = "AfterTool"
    elif event not in ("PostToolUse", "PostToolUseFailure"):
        event = "PostToolUse"
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, ensure_ascii=False)
