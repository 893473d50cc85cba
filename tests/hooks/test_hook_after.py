"""The post-tool hook on each host's payload: the output as the host hands it over (Claude Code's
tool_response or PostToolUseFailure error, Gemini CLI's llmContent wrapper, Copilot CLI's
toolResult, the OpenCode plugin's output) is explained in the host's own form, and an ordinary
output gets no answer. Payload shapes are those the published clients sent in tests/clients."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from guard.hooks import fastjson
from tests.conftest import guard_bin

FAIL = "Cloning into 'private'...\nfatal: could not read Username for 'http://127.0.0.1:9': terminal prompts disabled"
CMD = "git clone http://127.0.0.1:9/private.git"
GEMINI_WRAPPED = f"<untrusted_context>\nOutput: {FAIL}\nExit Code: 128\nProcess Group PGID: 77\n</untrusted_context>"

PAYLOADS = {
    "claude": {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": CMD},
               "error": f"Exit code 128\n{FAIL}", "session_id": "s1", "cwd": "/tmp"},
    "codex": {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": CMD},
              "tool_response": f"Process exited with code 128\nOutput:\n{FAIL}\n", "session_id": "s1", "cwd": "/tmp"},
    "gemini": {"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "tool_input": {"command": CMD},
               "tool_response": {"llmContent": GEMINI_WRAPPED, "returnDisplay": FAIL}, "session_id": "s1", "cwd": "/tmp"},
    "copilot": {"toolName": "bash", "toolArgs": json.dumps({"command": CMD}), "sessionId": "s1", "cwd": "/tmp",
                "toolResult": {"resultType": "success", "textResultForLlm": FAIL + "\n<exited with exit code 128>"}},
    "opencode": {"event": "after", "tool": "bash", "command": CMD, "cwd": "/tmp", "sessionID": "s1", "output": FAIL},
}


def hook(host: str, payload: dict, tmp_path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    log = tmp_path / "audit.jsonl"
    env.update(GIT_TERMINAL_PROMPT="0", GUARD_TREE=str(tmp_path / "tree"), GUARD_AUDIT_LOG=str(log), GUARD_SERVER="0",
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    got = subprocess.run([guard_bin(), "hook", host], input=json.dumps(payload), capture_output=True, text=True,
                         env=env, timeout=60)
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return got, records


@pytest.mark.parametrize("host", sorted(PAYLOADS))
def test_the_credential_failure_is_explained_in_the_hosts_form(host: str, tmp_path) -> None:
    got, records = hook(host, PAYLOADS[host], tmp_path)
    assert got.returncode == 0, got.stderr
    answer = json.loads(got.stdout)
    text = (answer.get("hookSpecificOutput", {}).get("additionalContext") or answer.get("additionalContext")
            or answer.get("explanation"))
    assert text and text.startswith("[guard] git could not authenticate") and 'git_clone(url="http://127.0.0.1:9/private.git")' in text
    if host in ("claude", "codex", "gemini"):
        event = {"claude": "PostToolUseFailure", "codex": "PostToolUse", "gemini": "AfterTool"}[host]
        assert answer["hookSpecificOutput"]["hookEventName"] == event
    assert [(r["kind"], r["session"]) for r in records] == [("annotation", "s1")]


@pytest.mark.parametrize("host", sorted(PAYLOADS))
def test_an_ordinary_output_gets_no_answer(host: str, tmp_path) -> None:
    payload = json.loads(json.dumps(PAYLOADS[host]).replace("terminal prompts disabled", "done").replace(
        "could not read Username", "all good"))
    got, records = hook(host, payload, tmp_path)
    assert got.returncode == 0 and got.stdout.strip() in ("", "{}") and records == []


def test_fastjson_matches_json() -> None:
    docs = ['{"a": [1, -2.5e3, null, true, false, "x\\u00e9\\n\\ud83d\\ude00"], "b": {}}', " [] ", '"s"']
    for doc in docs:
        assert fastjson.loads(doc) == json.loads(doc)
    for bad in ("", "{", "{} x", "nul", "[1,]"):
        with pytest.raises(ValueError):
            fastjson.loads(bad)
    obj = {"a": [1, 2.5, None, True, False, 'q"\\\n\u00e9'], "b": {"c": []}}
    assert fastjson.dumps(obj) == json.dumps(obj, ensure_ascii=False)
    assert fastjson.dumps(obj, ensure_ascii=True) == json.dumps(obj)
