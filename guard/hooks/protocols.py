"""Each host's hook protocol: where its payload keeps the shell command, the working directory
and the session id, and what it reads back for a refusal, an allowed command and bad input.

Field names follow each host's published hook reference:

- Claude Code: ``PreToolUse`` with ``tool_name: "Bash"``, ``tool_input.command``, ``cwd``,
  ``session_id``; a refusal is ``hookSpecificOutput.permissionDecision: "deny"`` with exit 0;
  ``additionalContext`` carries guard's structured answer.
- Codex: the same event, with a generated schema that rejects unknown fields (an output it
  rejects lets the command run), so only ``hookEventName``, ``permissionDecision`` and a
  non-empty ``permissionDecisionReason`` are written.
- Gemini CLI: ``BeforeTool`` with ``tool_name: "run_shell_command"``; ``{"decision": "deny",
  "reason": …}``.
- Cursor: ``beforeShellExecution`` with top-level ``command``, ``cwd``, ``conversation_id``;
  ``{"permission": "deny", "user_message": …, "agent_message": …}``.
- GitHub Copilot CLI: ``preToolUse`` with ``toolName: "bash"`` and ``toolArgs`` a JSON string;
  ``{"permissionDecision": "deny", "permissionDecisionReason": …}``.
- OpenCode: guard's own plugin (``opencode.js``) sends ``{"tool", "command", "cwd",
  "sessionID"}`` and throws the message when the answer is ``{"deny": true}``.

An allowed command gets no decision at all: never an ``allow``, which in several hosts would
skip the user's own permission rules. Every host documents exit 0 with that as "go on".
"""

from __future__ import annotations

from guard.hooks import fastjson as json
from guard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import; a hook runs before every command
    from collections.abc import Callable, Mapping
    from typing import Any


class Malformed(ValueError):
    """The payload is not what the host's protocol describes."""


@dataclass(frozen=True)
class Call:
    """What a host asks about: one shell command, where it runs, and the session asking."""

    command: str
    cwd: str | None = None
    session: str | None = None


@dataclass(frozen=True)
class Answer:
    """What to print on stdout (may be empty) and the exit status."""

    stdout: str
    status: int = 0


@dataclass(frozen=True)
class Refusal:
    """guard's refusal as a host is told about it."""

    message: str
    structured: Mapping[str, Any]


@dataclass(frozen=True)
class Host:
    name: str  # recorded in the audit log as ``client``
    read: Callable[[Mapping[str, Any]], Call | None]  # None: not a shell tool, no decision
    deny: Callable[[Refusal], Answer]
    allow: Answer  # no decision: the host's own permission flow goes on
    malformed_status: int  # the host's documented non-blocking exit for a failed hook
    # a warning the model reads while the command runs (a rule in warn), where the host's
    # protocol has such a form; None: it goes to the hook's stderr, and the command runs
    notice: Callable[[str], Answer] | None = None


def _obj(payload: object) -> Mapping[str, Any]:
    if not isinstance(payload, dict):
        raise Malformed("expected a JSON object")
    return payload


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{field} is not a string")
    return value


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _dumps(obj: object) -> str:
    from guard.text.display import json_inert

    # C1 controls, bidi overrides and lone surrogates as JSON escapes: the same strings to the
    # host, nothing raw for a terminal that shows the hook's output
    return json_inert(json.dumps(obj, ensure_ascii=False))


def _context(r: Refusal) -> str:
    return _dumps({"guard": dict(r.structured)})


# --------------------------------------------------------------------------- readers


def _tool_input_reader(tool: str) -> Callable[[Mapping[str, Any]], Call | None]:
    """Claude Code, Codex and Gemini CLI: ``tool_name`` / ``tool_input.command``."""

    def read(payload: Mapping[str, Any]) -> Call | None:
        p = _obj(payload)
        name = p.get("tool_name")
        if not isinstance(name, str):
            raise Malformed("tool_name is missing")
        if name != tool:
            return None
        ti = p.get("tool_input")
        if not isinstance(ti, dict):
            raise Malformed("tool_input is not an object")
        return Call(_text(ti.get("command"), "tool_input.command"), _opt(p.get("cwd")), _opt(p.get("session_id")))

    return read


def _cursor_read(payload: Mapping[str, Any]) -> Call | None:
    p = _obj(payload)
    event = p.get("hook_event_name")
    if event is not None and event != "beforeShellExecution":
        return None
    session = _opt(p.get("conversation_id")) or _opt(p.get("session_id"))
    return Call(_text(p.get("command"), "command"), _opt(p.get("cwd")), session)


def _copilot_read(payload: Mapping[str, Any]) -> Call | None:
    p = _obj(payload)
    name = p.get("toolName")
    if not isinstance(name, str):
        raise Malformed("toolName is missing")
    if name != "bash":
        return None
    raw = p.get("toolArgs")
    if isinstance(raw, str):  # a JSON string inside the JSON payload
        try:
            args = json.loads(raw)
        except ValueError as e:
            raise Malformed(f"toolArgs is not JSON: {e}") from None
    else:
        args = raw
    if not isinstance(args, dict):
        raise Malformed("toolArgs is not an object")
    session = _opt(p.get("sessionId")) or _opt(p.get("session_id"))
    return Call(_text(args.get("command"), "toolArgs.command"), _opt(p.get("cwd")), session)


def _opencode_read(payload: Mapping[str, Any]) -> Call | None:
    p = _obj(payload)
    if p.get("tool") != "bash":
        return None
    return Call(_text(p.get("command"), "command"), _opt(p.get("cwd")), _opt(p.get("sessionID")))


# --------------------------------------------------------------------------- answers


def _claude_notice(message: str) -> Answer:
    """No decision (the host's own permission flow goes on), and context the model reads."""
    return Answer(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": message}},
                             ensure_ascii=False))


def _claude_deny(r: Refusal) -> Answer:
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": r.message,
            "additionalContext": _context(r),
        }
    }
    return Answer(_dumps(out))


def _codex_deny(r: Refusal) -> Answer:
    # The fields of pre-tool-use.command.output.schema.json's hookSpecificOutput that every
    # schema version has; anything else makes Codex discard the answer and run the command.
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            # Codex adds ". Command: CMD" to the reason: without a final period of its own it reads
            # "… gh_pr_create. Command: git push origin feature"
            "permissionDecisionReason": r.message.strip().rstrip(".") or "refused by guard",
        }
    }
    return Answer(_dumps(out))


def _gemini_deny(r: Refusal) -> Answer:
    return Answer(_dumps({"decision": "deny", "reason": r.message}))


def _cursor_deny(r: Refusal) -> Answer:
    return Answer(_dumps({"permission": "deny", "user_message": r.message, "agent_message": r.message}))


def _copilot_deny(r: Refusal) -> Answer:
    return Answer(_dumps({"permissionDecision": "deny", "permissionDecisionReason": r.message}))


def _opencode_deny(r: Refusal) -> Answer:
    return Answer(_dumps({"deny": True, "message": r.message, "guard": dict(r.structured)}))


HOSTS: dict[str, Host] = {
    "claude": Host("claude-code", _tool_input_reader("Bash"), _claude_deny, Answer(""), 1, _claude_notice),
    "codex": Host("codex", _tool_input_reader("Bash"), _codex_deny, Answer(""), 1),
    # Gemini parses stdout as JSON on exit 0: an empty object is "no decision".
    "gemini": Host("gemini-cli", _tool_input_reader("run_shell_command"), _gemini_deny, Answer("{}"), 1),
    # Cursor: no "permission" key is no objection; an explicit "allow" would auto-run the command.
    "cursor": Host("cursor", _cursor_read, _cursor_deny, Answer("{}"), 1),
    "copilot": Host("copilot-cli", _copilot_read, _copilot_deny, Answer(""), 1),
    "opencode": Host("opencode", _opencode_read, _opencode_deny, Answer("{}"), 1),
}
