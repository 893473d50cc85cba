"""The hostile corpus (fixtures/hostile/commands.jsonl) through every output path of guard: no
output repeats a credential of the command, holds a raw control character (ESC, BEL, C1, a bidi
override or isolate, a zero-width character, a lone surrogate), or a message past the cap
(``guard.text.display.MESSAGE_MAX``; issue 37, findings 2, 4, 5, 7 and 8).

The paths: ``guard check`` (text, ``--json``, ``--jsonl``), ``guard explain`` (text, ``--json``),
``guard hook`` for each host (stdout and stderr), the audit log those hooks write, ``guard audit``
over that log (text, ``--csv``, ``--records``, ``--html``) and guard-shell's stderr (real bash)
for the commands it refuses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guard.text.display import MESSAGE_MAX
from tests.conftest import REPO, guard_bin

CORPUS: list[dict[str, Any]] = [
    json.loads(line) for line in (REPO / "fixtures" / "hostile" / "commands.jsonl").read_text().splitlines()
]
HOSTS = ("claude", "codex", "gemini", "cursor", "copilot", "opencode")
# What no output may hold raw: C0 but newline and tab, DEL, C1, bidi overrides and isolates,
# zero-width characters, lone surrogates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _payload(host: str, command: str, cwd: str) -> dict[str, Any]:
    if host in ("claude", "codex"):
        return {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": cwd, "session_id": "s1"}
    if host == "gemini":
        return {"tool_name": "run_shell_command", "tool_input": {"command": command}, "cwd": cwd}
    if host == "cursor":
        return {"hook_event_name": "beforeShellExecution", "command": command, "cwd": cwd}
    if host == "copilot":
        return {"toolName": "bash", "toolArgs": json.dumps({"command": command}), "cwd": cwd}
    return {"tool": "bash", "command": command, "cwd": cwd, "sessionID": "s1"}


def _run(args: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> str:
    p = subprocess.run(args, input=stdin, env=env, cwd=cwd, capture_output=True, timeout=120)
    return p.stdout.decode("utf-8", "surrogateescape") + "\n" + p.stderr.decode("utf-8", "surrogateescape")


def _messages(obj: Any) -> list[str]:
    """The message fields of an answer (check's ``message``, every host's reason fields)."""
    keys = {"message", "permissionDecisionReason", "reason", "user_message", "agent_message"}
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in keys and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_messages(v))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(_messages(v))
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], str]:
    """Every path's output for every case, keyed by (case name, path)."""
    base = tmp_path_factory.mktemp("hostile")
    tree = base / "tree"
    (tree / "app").mkdir(parents=True)
    log = base / "audit.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_TREE=str(tree), GUARD_SERVER="off", GUARD_AUDIT_LOG=str(log), GUARD_CHECK_RECORDS="1",
               XDG_CACHE_HOME=str(base / "cache"), HOME=str(base))
    cwd = tree / "app"
    out: dict[tuple[str, str], str] = {}
    jsonl = "".join(json.dumps({"id": c["name"], "command": c["command"]}) + "\n" for c in CORPUS).encode()
    answers = subprocess.run([guard_bin(), "check", "--jsonl"], input=jsonl, env=env, cwd=cwd,
                             capture_output=True, timeout=300)
    for line in answers.stdout.decode("utf-8", "surrogateescape").splitlines():
        out[(json.loads(line)["id"], "check --jsonl")] = line
    refused = {json.loads(line)["id"] for line in answers.stdout.decode().splitlines()
               if json.loads(line)["verdict"] == "refuse"}
    for case in CORPUS:
        name, command = case["name"], case["command"]
        encodable = "\ud800" not in command  # argv cannot carry a lone surrogate: JSON paths only
        if encodable:
            out[(name, "check")] = _run([guard_bin(), "check", "--", command], env, cwd)
            out[(name, "check --json")] = _run([guard_bin(), "check", "--json", "--", command], env, cwd)
            out[(name, "explain")] = _run([guard_bin(), "explain", "--", command], env, cwd)
            out[(name, "explain --json")] = _run([guard_bin(), "explain", "--json", "--", command], env, cwd)
            if name in refused:  # an allowed command would run: only refusals reach real bash
                out[(name, "guard-shell -c")] = _run([guard_bin("guard-shell"), "-c", command], env, cwd)
        for host in HOSTS:
            payload = json.dumps(_payload(host, command, str(cwd))).encode()
            out[(name, f"hook {host}")] = _run([guard_bin(), "hook", host], env, cwd, payload)
    audit_log = log.read_bytes().decode("utf-8", "surrogateescape") if log.exists() else ""
    reports = {f"audit {opt}".strip(): _run([guard_bin(), "audit", str(log), *([opt] if opt else [])], env, cwd)
               for opt in ("", "--csv", "--records")}
    html = base / "report.html"
    _run([guard_bin(), "audit", str(log), "--html", str(html)], env, cwd)
    reports["audit --html"] = html.read_text(encoding="utf-8", errors="surrogateescape") if html.exists() else ""
    for case in CORPUS:  # each case is looked for in the outputs that gather all of them
        out[(case["name"], "audit log")] = audit_log
        for path, text in reports.items():
            out[(case["name"], path)] = text
    return out


PATHS = ("check", "check --json", "check --jsonl", "explain", "explain --json", "guard-shell -c",
         *(f"hook {h}" for h in HOSTS), "audit log", "audit", "audit --csv", "audit --records", "audit --html")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_no_output_repeats_a_secret_or_a_control(outputs: dict[tuple[str, str], str], case: dict[str, Any],
                                                 path: str) -> None:
    text = outputs.get((case["name"], path))
    if text is None:
        pytest.skip(f"{path} does not take this command (allowed, or not expressible as argv)")
    for secret in case["secrets"]:
        assert secret not in text, f"{path} repeats {secret!r}"
    raw = RAW.search(text)
    assert raw is None, f"{path} holds a raw {raw.group(0)!r} at {raw.start()}"
    if path in ("check --json", "check --jsonl", "explain --json") or path.startswith("hook "):
        for line in text.splitlines():
            if line.startswith("{"):
                for m in _messages(json.loads(line)):
                    assert len(m) <= MESSAGE_MAX, f"{path}: a message of {len(m)} characters"
    if path == "check" and text.startswith("Refused"):
        assert len(text.splitlines()[0]) <= MESSAGE_MAX


def test_the_corpus_reaches_every_path(outputs: dict[tuple[str, str], str]) -> None:
    """A test that cannot fail is a defect: each path was taken, refusals reached guard-shell,
    the hooks wrote the audit log, and the secrets were there to be leaked."""
    assert {p for _, p in outputs} == set(PATHS)
    assert sum(1 for _, p in outputs if p == "guard-shell -c") >= 15
    assert "refusal" in outputs[(CORPUS[0]["name"], "audit log")]
    assert any("Refused" in outputs[(c["name"], "hook claude")] for c in CORPUS)
    assert all(s in c["command"].replace("\\\n", "").replace("'", "") for c in CORPUS for s in c["secrets"])
