"""``GUARD_FAIL=closed`` refuses whenever a budget cut the analysis short or guard could not
decide, in every front (issue 37, findings 3 and 7): ``guard check`` (one command and
``--jsonl``), ``guard hook`` for each host, and guard-shell's ``-c``, script, stdin and
interactive modes. Under the default (open) the same commands are allowed with a note, and a hook
that cannot decide exits with one line on stderr, never a traceback.

Two budgets are used: the size budget (a command past 1.2 million characters is not analysed),
and the expansion step budget (``${a//0*1/x}`` on 30,000 characters stops and says so), which
fits in one argument for ``-c``.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pexpect
import pytest
import shellkit

from tests.conftest import guard_bin

BIG = "git push origin main; #" + "a" * 1_300_000  # past the size budget
STEPS = "a=$(printf %030000d 0); b=${a//0*1/x}; touch ran"  # past the expansion step budget
DENY = {
    "claude": '"permissionDecision": "deny"',
    "codex": '"permissionDecision": "deny"',
    "gemini": '"decision": "deny"',
    "cursor": '"permission": "deny"',
    "copilot": '"permissionDecision": "deny"',
    "opencode": '"deny": true',
}


def _payload(host: str, command: str, cwd: str) -> dict:
    if host in ("claude", "codex"):
        return {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": cwd}
    if host == "gemini":
        return {"tool_name": "run_shell_command", "tool_input": {"command": command}, "cwd": cwd}
    if host == "cursor":
        return {"hook_event_name": "beforeShellExecution", "command": command, "cwd": cwd}
    if host == "copilot":
        return {"toolName": "bash", "toolArgs": json.dumps({"command": command}), "cwd": cwd}
    return {"tool": "bash", "command": command, "cwd": cwd}


@pytest.fixture
def env(sandbox: dict[str, Path]) -> dict[str, str]:
    return shellkit.base_env(sandbox["home"], sandbox["tree"], GUARD_SERVER="off",
                             XDG_CACHE_HOME=str(sandbox["home"] / "cache"))


def _run(args: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(args, input=stdin, env=env, cwd=cwd, capture_output=True, timeout=180)


@pytest.mark.parametrize("mode", ["closed", "open"])
def test_check_jsonl_past_the_size_budget(env: dict[str, str], sandbox: dict[str, Path], mode: str) -> None:
    env = dict(env, GUARD_FAIL=mode)
    line = json.dumps({"id": 1, "command": BIG}).encode() + b"\n"
    r = _run([guard_bin(), "check", "--jsonl"], env, sandbox["scratch"], line)
    answer = json.loads(r.stdout)
    assert "input too large" in answer["unresolved"][0]
    assert answer["verdict"] == ("refuse" if mode == "closed" else "allow")
    if mode == "closed":
        assert answer["message"].startswith("guard: refusing the command (GUARD_FAIL=closed): ")


@pytest.mark.parametrize("mode", ["closed", "open"])
def test_check_past_the_step_budget(env: dict[str, str], sandbox: dict[str, Path], mode: str) -> None:
    r = _run([guard_bin(), "check", "--", STEPS], dict(env, GUARD_FAIL=mode), sandbox["scratch"])
    out = r.stdout.decode()
    if mode == "closed":
        assert r.returncode == 1 and "GUARD_FAIL=closed" in out and "step budget" in out, out
    else:
        assert r.returncode == 0 and out.startswith("allow (unresolved:") and "step budget" in out, out


@pytest.mark.parametrize("host", sorted(DENY))
def test_every_hook_denies_past_the_size_budget_when_closed(env: dict[str, str], sandbox: dict[str, Path],
                                                           host: str) -> None:
    payload = json.dumps(_payload(host, BIG, str(sandbox["scratch"]))).encode()
    closed = _run([guard_bin(), "hook", host], dict(env, GUARD_FAIL="closed"), sandbox["scratch"], payload)
    assert closed.returncode == 0 and DENY[host] in closed.stdout.decode(), closed
    opened = _run([guard_bin(), "hook", host], env, sandbox["scratch"], payload)
    assert opened.returncode == 0 and DENY[host] not in opened.stdout.decode()


@pytest.mark.parametrize("host", sorted(DENY))
def test_a_hook_that_cannot_decide_denies_when_closed_and_says_one_line_when_open(
        env: dict[str, str], sandbox: dict[str, Path], host: str) -> None:
    deep = _payload(host, "ls", str(sandbox["scratch"]))
    raw = json.dumps(deep)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    closed = _run([guard_bin(), "hook", host], dict(env, GUARD_FAIL="closed"), sandbox["scratch"], raw.encode())
    assert closed.returncode == 0 and DENY[host] in closed.stdout.decode(), closed
    assert b"Traceback" not in closed.stderr
    opened = _run([guard_bin(), "hook", host], env, sandbox["scratch"], raw.encode())
    err = opened.stderr.decode()
    assert opened.returncode == 1 and err.count("\n") == 1 and err.startswith(f"guard: hook {host}: "), err
    assert DENY[host] not in opened.stdout.decode()


@pytest.mark.parametrize("host", sorted(DENY))
def test_a_lone_surrogate_gets_a_decision(env: dict[str, str], sandbox: dict[str, Path], host: str) -> None:
    """``\\ud800`` in the command: the host can only run U+FFFD there; git push is refused."""
    payload = json.dumps(_payload(host, "git push origin main \ud800", str(sandbox["tree"]))).encode()
    (sandbox["tree"] / "app").mkdir()
    payload = payload.replace(json.dumps(str(sandbox["tree"])).encode()[1:-1],
                              json.dumps(str(sandbox["tree"] / "app")).encode()[1:-1])
    for mode in ("closed", "open"):
        r = _run([guard_bin(), "hook", host], dict(env, GUARD_FAIL=mode), sandbox["scratch"], payload)
        assert r.returncode == 0 and DENY[host] in r.stdout.decode(), r
        assert "Refused: git push" in r.stdout.decode() and b"internal error" not in r.stderr


@pytest.mark.parametrize("mode", ["closed", "open"])
def test_guard_shell_c_past_the_step_budget(env: dict[str, str], sandbox: dict[str, Path], mode: str) -> None:
    start = time.monotonic()
    r = _run([shellkit.real_guard_shell(), "-c", STEPS], dict(env, GUARD_FAIL=mode), sandbox["scratch"])
    took = time.monotonic() - start
    ran = (sandbox["scratch"] / "ran").exists()
    assert took < 5, f"{took:.1f} s: the budget, not the 10 s analysis timeout, must stop it"
    if mode == "closed":
        assert r.returncode == 126 and not ran and b"step budget" in r.stderr, r
    else:
        assert r.returncode == 0 and ran and not r.stderr, r


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_guard_shell_script_and_stdin_past_the_size_budget(env: dict[str, str], sandbox: dict[str, Path],
                                                            how: str) -> None:
    text = ("touch ran; " + BIG + "\n").encode()
    script = sandbox["scratch"] / "big.sh"
    script.write_bytes(text)
    args = [shellkit.real_guard_shell(), *([str(script)] if how == "script" else [])]
    r = _run(args, dict(env, GUARD_FAIL="closed"), sandbox["scratch"], b"" if how == "script" else text)
    assert r.returncode == 126 and not (sandbox["scratch"] / "ran").exists(), r.stderr[:300]
    assert b"GUARD_FAIL=closed" in r.stderr and b"input too large" in r.stderr


def test_guard_shell_interactive_past_the_step_budget(env: dict[str, str], sandbox: dict[str, Path]) -> None:
    prompt = "PS1>> "
    child = pexpect.spawn(shellkit.real_guard_shell(), ["--norc"],
                          env=dict(env, GUARD_FAIL="closed", TERM="xterm", PS1=prompt),
                          cwd=str(sandbox["scratch"]), encoding="utf-8", timeout=60, dimensions=(40, 200))
    try:
        child.expect_exact(prompt)
        child.sendline(STEPS)
        child.expect_exact(prompt)
        said = child.before
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert "GUARD_FAIL=closed" in said and "step budget" in said, said
    assert not (sandbox["scratch"] / "ran").exists()
