"""`guard hook HOST` per host, as the host calls it: the recorded payload on stdin of a real
`guard` process, its stdout parsed as the host would, its exit status, and the audit line.

Each host gets a refused command, an allowed one and a malformed payload (fixtures/hooks/).
Codex's answer and recorded input are validated against the schemas Codex generates.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, guard_bin

FIXTURES = REPO / "fixtures" / "hooks"
HOSTS = ("claude", "codex", "gemini", "cursor", "copilot", "opencode")
CLIENT = {"claude": "claude-code", "codex": "codex", "gemini": "gemini-cli", "cursor": "cursor",
          "copilot": "copilot-cli", "opencode": "opencode"}
SESSION = {"claude": "2f1c0c3e-7a51-4a4e-9d53-0c1b5e0b7c11", "codex": "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b",
           "gemini": "c5d2e1f0-1111-4222-8333-944455556666", "cursor": "conv-7d1e", "copilot": None,
           "opencode": "ses_5f3a"}


def run_hook(host: str, payload: bytes, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, list]:
    log = tmp_path / "audit.jsonl"
    full = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    full.update(GUARD_TREE="/workspace", GUARD_AUDIT_LOG=str(log), GUARD_SERVER="0")
    full.update(env)
    proc = subprocess.run([guard_bin(), "hook", host], input=payload, capture_output=True, env=full, timeout=60)
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return proc, records


def payload(host: str, name: str) -> bytes:
    return (FIXTURES / host / f"{name}.json").read_bytes()


# ---------------------------------------------------------------------- a small JSON Schema check


def schema_errors(value: Any, schema: dict, root: dict, where: str = "$") -> list[str]:
    """The draft-07 keywords Codex's generated schemas use: $ref, allOf, type, enum, const,
    properties, required, additionalProperties."""
    errors: list[str] = []
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return schema_errors(value, target, root, where)
    for sub in schema.get("allOf", []):
        errors += schema_errors(value, sub, root, where)
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        ok = {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}
        if not any(isinstance(value, ok[t]) and not (t != "boolean" and isinstance(value, bool)) for t in names):
            errors.append(f"{where}: {value!r} is not {types}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} not in {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} != {schema['const']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing {key}")
        for key, item in value.items():
            if key in props:
                errors += schema_errors(item, props[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unknown field {key}")
    return errors


def codex_schema(kind: str) -> dict:
    return json.loads((FIXTURES / "codex" / f"pre-tool-use.command.{kind}.schema.json").read_text())


def test_schema_check_rejects_what_codex_rejects() -> None:
    schema = codex_schema("output")
    bad = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                  "permissionDecisionReason": "x", "reasonCode": 3}}
    assert schema_errors(bad, schema, schema) == ["$.hookSpecificOutput: unknown field reasonCode"]
    assert schema_errors({"decision": "block"}, schema, schema) == ["$: unknown field decision"]


# ---------------------------------------------------------------------- refusals


def denial(host: str, out: dict) -> str:
    """The reason text from a host's denial, asserting the protocol's exact shape."""
    if host in ("claude", "codex"):
        assert set(out) == {"hookSpecificOutput"}
        spec = out["hookSpecificOutput"]
        keys = {"hookEventName", "permissionDecision", "permissionDecisionReason"}
        assert set(spec) == (keys | {"additionalContext"} if host == "claude" else keys)
        assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "deny"
        return spec["permissionDecisionReason"]
    if host == "gemini":
        assert set(out) == {"decision", "reason"} and out["decision"] == "deny"
        return out["reason"]
    if host == "cursor":
        assert set(out) == {"permission", "user_message", "agent_message"} and out["permission"] == "deny"
        assert out["user_message"] == out["agent_message"]
        return out["agent_message"]
    if host == "copilot":
        assert set(out) == {"permissionDecision", "permissionDecisionReason"}
        assert out["permissionDecision"] == "deny"
        return out["permissionDecisionReason"]
    assert out["deny"] is True
    return out["message"]


@pytest.mark.parametrize("host", HOSTS)
def test_refused_command_is_denied_in_the_hosts_protocol(host: str, tmp_path: Path) -> None:
    proc, records = run_hook(host, payload(host, "refused"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    out = json.loads(proc.stdout)
    reason = denial(host, out)
    # guard's own message, naming what the agent wrote and the tool with its arguments
    assert reason.startswith("Refused: git push (via variable G).")
    assert 'git_push(prefix="app", branch="feature")' in reason  # the branch the command names
    if host == "codex":
        schema = codex_schema("output")
        assert schema_errors(out, schema, schema) == []
    assert len(records) == 1
    rec = records[0]
    assert rec["command"] == "G=git; $G push origin feature"
    assert (rec["client"], rec["session"], rec["cwd"]) == (CLIENT[host], SESSION[host], "/workspace/app")
    assert (rec["category"], rec["rule"], rec["tool"]) == ("publish", "git-push", "git_push")


def test_claude_denial_carries_the_structured_answer(tmp_path: Path) -> None:
    proc, _ = run_hook("claude", payload("claude", "refused"), tmp_path)
    context = json.loads(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])["guard"]
    assert context["tool"] == "git_push"
    assert context["arguments"] == {"prefix": "app", "branch": "feature"}
    assert context["matched"] == {"program": "git", "argv": ["git", "push", "origin", "feature"],
                                  "via": ["variable G"]}
    assert (context["category"], context["rule"]) == ("publish", "git-push")


def test_opencode_denial_carries_the_structured_answer(tmp_path: Path) -> None:
    proc, _ = run_hook("opencode", payload("opencode", "refused"), tmp_path)
    assert json.loads(proc.stdout)["guard"]["arguments"] == {"prefix": "app", "branch": "feature"}


def test_session_id_fills_the_thread_only_when_guard_thread_is_unset(tmp_path: Path) -> None:
    _, records = run_hook("claude", payload("claude", "refused"), tmp_path)
    assert records[0]["thread"] == SESSION["claude"]
    (tmp_path / "b").mkdir()
    _, records = run_hook("claude", payload("claude", "refused"), tmp_path / "b", GUARD_THREAD="feat-login",
                          GUARD_AGENT="claude-a")
    assert (records[0]["thread"], records[0]["agent"], records[0]["session"]) == ("feat-login", "claude-a",
                                                                                   SESSION["claude"])


def test_cwd_comes_from_the_payload(tmp_path: Path) -> None:
    data = json.loads(payload("claude", "refused"))
    data["tool_input"]["command"] = "git status"
    data["cwd"] = "/tmp"  # outside the tree: a read probe there is ordinary git
    proc, records = run_hook("claude", json.dumps(data).encode(), tmp_path)
    assert (proc.returncode, proc.stdout, records) == (0, b"", [])
    data["cwd"] = "/workspace/app"
    proc, records = run_hook("claude", json.dumps(data).encode(), tmp_path)
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


# ---------------------------------------------------------------------- allowed: no decision


NO_DECISION = {"claude": b"", "codex": b"", "gemini": b"{}\n", "cursor": b"{}\n", "copilot": b"", "opencode": b"{}\n"}


@pytest.mark.parametrize("host", HOSTS)
def test_allowed_command_gets_no_decision(host: str, tmp_path: Path) -> None:
    proc, records = run_hook(host, payload(host, "allowed"), tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr, records) == (0, NO_DECISION[host], b"", [])
    if proc.stdout:
        assert "allow" not in json.loads(proc.stdout).values()


def test_other_tools_get_no_decision(tmp_path: Path) -> None:
    proc, _ = run_hook("claude", payload("claude", "other-tool"), tmp_path)
    assert (proc.returncode, proc.stdout) == (0, b"")
    for host, body in (("gemini", {"tool_name": "read_file", "tool_input": {"path": "x"}}),
                       ("copilot", {"toolName": "view", "toolArgs": "{}"}),
                       ("opencode", {"tool": "edit", "command": "git push"})):
        proc, _ = run_hook(host, json.dumps(body).encode(), tmp_path)
        assert (proc.returncode, proc.stdout) == (0, NO_DECISION[host])


# ---------------------------------------------------------------------- malformed


@pytest.mark.parametrize("host", HOSTS)
def test_malformed_payload_costs_one_line_and_the_non_blocking_exit(host: str, tmp_path: Path) -> None:
    proc, records = run_hook(host, payload(host, "malformed"), tmp_path)
    assert proc.returncode == 1  # each host documents a non-0/non-2 exit as "hook failed, go on"
    assert proc.stdout == b"" and records == []
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"guard: hook {host}: ") and "Traceback" not in lines[0]


@pytest.mark.parametrize("data", [b"", b"\xff\xfe garbage", b"[]", b"null", b'{"tool_name": 3}', b"{" * 5000])
def test_hostile_payloads(data: bytes, tmp_path: Path) -> None:
    proc, _ = run_hook("claude", data, tmp_path)
    assert proc.returncode == 1 and proc.stdout == b""
    assert len(proc.stderr.splitlines()) == 1


def test_unknown_host_is_a_usage_error(tmp_path: Path) -> None:
    proc, _ = run_hook("vim", b"{}", tmp_path)
    assert proc.returncode == 2 and b"usage: guard hook claude|codex" in proc.stderr


def test_recorded_codex_input_matches_codex_input_schema() -> None:
    schema = codex_schema("input")
    for name in ("refused", "allowed"):
        assert schema_errors(json.loads(payload("codex", name)), schema, schema) == []


def test_hostile_text_in_the_command_is_kept_out_of_the_protocol(tmp_path: Path) -> None:
    data = json.loads(payload("codex", "refused"))
    data["tool_input"]["command"] = 'git push "}\n{\\"x\\": 1}\x1b[2J"'
    proc, records = run_hook("codex", json.dumps(data).encode(), tmp_path)
    out = json.loads(proc.stdout)  # one JSON object, whatever the command held
    schema = codex_schema("output")
    assert schema_errors(out, schema, schema) == []
    assert proc.stdout.count(b"\n") == 1
    assert records[0]["command"] == data["tool_input"]["command"]


def test_the_analysis_server_answers_the_same_and_logs_once(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    env = {"GUARD_SERVER": "1", "XDG_RUNTIME_DIR": str(run_dir)}
    try:
        answers = []
        for i in range(4):  # the first call starts the server; later ones are answered by it
            proc, records = run_hook("claude", payload("claude", "refused"), tmp_path, **env)
            answers.append(proc.stdout)
            assert len(records) == i + 1
            assert (records[-1]["client"], records[-1]["session"]) == ("claude-code", SESSION["claude"])
            proc, _ = run_hook("claude", payload("claude", "allowed"), tmp_path, **env)
            assert (proc.returncode, proc.stdout) == (0, b"")
        assert len(set(answers)) == 1
    finally:
        from guard.shell import client

        path = client.socket_path({"XDG_RUNTIME_DIR": str(run_dir)})
        if path:
            client.stop_server(path)
