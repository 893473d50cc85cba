"""`guard install HOST` / `guard uninstall HOST` on settings files that already hold the user's
own hooks and settings: install is idempotent and keeps everything else, uninstall removes
exactly what install added, `--print` writes nothing. Run as the real `guard` command with
HOME and the project folder in a temporary directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import guard_bin

USER_FILES = {
    "claude": (".claude/settings.json", {
        "model": "opus", "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/lint-bash"}]}],
                  "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}),
    "codex": (".codex/hooks.json", {
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh",
                                                                "timeout": 5}]}],
                  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "ctx.sh"}]}]}}),
    "gemini": (".gemini/settings.json", {
        "theme": "GitHub", "general": {"vimMode": True},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"name": "fmt", "type": "command",
                                                                       "command": "fmt.sh", "timeout": 5000}]}]}}),
    "cursor": (".cursor/hooks.json", {
        "version": 1, "hooks": {"beforeShellExecution": [{"command": "./audit.sh"}],
                                "afterFileEdit": [{"command": "prettier --write"}]}}),
}


def run(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["HOME"] = str(home)
    env.pop("CODEX_HOME", None)
    env.pop("COPILOT_HOME", None)
    env["GUARD_TREE"] = str(home.parent / "tree")  # not where install writes
    if args[:2] == ["install", "codex"]:  # Codex's trust is recorded by Codex: proven in tests/clients
        args = [*args, "--untrusted"]
    return subprocess.run([guard_bin(), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "proj").mkdir()
    return tmp_path / "home"


def guard_items(settings: dict, event: str) -> list[dict]:
    found = []
    for item in settings.get("hooks", {}).get(event, []):
        for h in item.get("hooks", [item]):
            if " hook " in h.get("command", ""):
                found.append(h)
    return found


EVENTS = {"claude": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool", "cursor": "beforeShellExecution"}
# the events guard adds to, per host: before the tool, and after it
ALL_EVENTS = {"claude": ("PreToolUse", "PostToolUse", "PostToolUseFailure"), "codex": ("PreToolUse", "PostToolUse"),
              "gemini": ("BeforeTool", "AfterTool"), "cursor": ("beforeShellExecution",)}


@pytest.mark.parametrize("host", sorted(USER_FILES))
def test_install_twice_keeps_the_users_settings_and_uninstall_restores_them(host: str, home: Path) -> None:
    rel, original = USER_FILES[host]
    path = home / rel
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(original, indent=2) + "\n")
    first = run(["install", host], home, home.parent / "proj")
    assert first.returncode == 0, first.stderr
    once = json.loads(path.read_text())
    second = run(["install", host], home, home.parent / "proj")
    assert second.returncode == 0
    assert json.loads(path.read_text()) == once  # idempotent
    # everything the user had is still there, in order; guard's entry is added once
    without = json.loads(json.dumps(once))
    items = without["hooks"][EVENTS[host]]
    assert items[:-1] == original["hooks"][EVENTS[host]]
    assert {k: v for k, v in without.items() if k != "hooks"} == {k: v for k, v in original.items() if k != "hooks"}
    assert {k: v for k, v in without["hooks"].items() if k not in ALL_EVENTS[host]} == {
        k: v for k, v in original["hooks"].items() if k not in ALL_EVENTS[host]}
    for event in ALL_EVENTS[host][1:]:  # the post-tool hooks: guard's only
        assert len(guard_items(once, event)) == 1
    ours = guard_items(once, EVENTS[host])
    assert len(ours) == 1
    assert ours[0]["command"] == f"{guard_bin()} hook {host}"
    removed = run(["uninstall", host], home, home.parent / "proj")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(path.read_text()) == original


def test_units_and_fail_closed_per_host(home: Path) -> None:
    proj = home.parent / "proj"
    for host in EVENTS:
        assert run(["install", host], home, proj).returncode == 0
    claude = guard_items(json.loads((home / ".claude/settings.json").read_text()), "PreToolUse")[0]
    assert claude["timeout"] == 10 and "onFailure" not in claude  # seconds; Claude Code has no onFailure
    gemini = guard_items(json.loads((home / ".gemini/settings.json").read_text()), "BeforeTool")[0]
    assert gemini["timeout"] == 10000  # milliseconds
    cursor_file = json.loads((home / ".cursor/hooks.json").read_text())
    assert cursor_file["version"] == 1
    assert cursor_file["hooks"]["beforeShellExecution"] == [
        {"command": f"{guard_bin()} hook cursor", "timeout": 10, "failClosed": True}]
    codex = json.loads((home / ".codex/hooks.json").read_text())
    assert codex["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    out = run(["install", "claude"], home, proj).stdout
    assert "not fail-closed" in out and "10 s" in out and "CLAUDE_CODE_SHELL=" in out
    codex_out = run(["install", "codex"], home, proj).stdout
    assert "NOT ACTIVE until trusted" in codex_out


def test_fail_closed_wraps_the_pre_tool_command(home: Path, tmp_path: Path) -> None:
    """--fail-closed: the pre-tool command answers the host's refusal itself when guard is missing,
    fails or is slow; the post-tool one stays plain (an explanation is never worth a refusal)."""
    proj = home.parent / "proj"
    link = tmp_path / "bin" / "guard"
    link.parent.mkdir()
    link.symlink_to(guard_bin())
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(HOME=str(home), GUARD_TREE=str(tmp_path / "tree"))
    out = subprocess.run([str(link), "install", "claude", "--fail-closed"], capture_output=True, text=True, env=env,
                         cwd=proj, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "fail-closed: the pre-tool command refuses by itself" in out.stdout
    settings = json.loads((home / ".claude/settings.json").read_text())
    pre = guard_items(settings, "PreToolUse")
    assert pre and pre[0]["command"].startswith("sh -c ")
    assert guard_items(settings, "PostToolUse")[0]["command"] == f"{link} hook claude"
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "s",
                          "tool_input": {"command": "git push origin feature"}, "cwd": str(proj)})
    link.unlink()  # guard missing
    got = subprocess.run(["sh", "-c", pre[0]["command"]], input=payload, capture_output=True, text=True, timeout=30)
    answer = json.loads(got.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "guard could not check" in answer["permissionDecisionReason"]
    # and installing again (or uninstalling) recognises the wrapped entry as guard's
    link.symlink_to(guard_bin())
    assert subprocess.run([str(link), "uninstall", "claude"], env=env, cwd=proj, timeout=60).returncode == 0
    assert "hooks" not in json.loads((home / ".claude/settings.json").read_text())


def test_nothing_is_written_inside_the_tree(home: Path, tmp_path: Path) -> None:
    proj = home.parent / "proj"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(HOME=str(home), GUARD_TREE=str(proj))
    for host in ("claude", "copilot", "opencode", "gemini"):
        out = subprocess.run([guard_bin(), "install", host, "--scope", "project"], capture_output=True, text=True,
                             env=env, cwd=proj, timeout=60)
        assert out.returncode == 1 and "inside the shared tree" in out.stderr, out
    assert list(proj.iterdir()) == []


def test_install_into_a_missing_file_and_uninstall_leaves_no_trace(home: Path) -> None:
    proj = home.parent / "proj"
    assert run(["install", "claude", "--scope", "project"], home, proj).returncode == 0
    path = proj / ".claude/settings.json"
    assert set(json.loads(path.read_text())) == {"hooks"}
    assert run(["uninstall", "claude", "--scope", "project"], home, proj).returncode == 0
    assert json.loads(path.read_text()) == {}
    again = run(["uninstall", "claude", "--scope", "project"], home, proj)
    assert again.returncode == 0 and "no claude hook" in again.stdout


def test_print_writes_nothing(home: Path) -> None:
    out = run(["install", "gemini", "--print"], home, home.parent / "proj")
    assert out.returncode == 0
    assert '"timeout": 10000' in out.stdout and str(home / ".gemini/settings.json") in out.stdout
    assert not (home / ".gemini").exists()


def test_a_file_that_is_not_json_is_left_alone(home: Path) -> None:
    path = home / ".claude/settings.json"
    path.parent.mkdir()
    path.write_text("{ // my comments\n}")
    out = run(["install", "claude"], home, home.parent / "proj")
    assert out.returncode == 1 and "not valid JSON" in out.stderr and len(out.stderr.splitlines()) == 1
    assert path.read_text() == "{ // my comments\n}"


def test_copilot_file_of_its_own(home: Path) -> None:
    """User level by default: $COPILOT_HOME/hooks (~/.copilot/hooks), which Copilot CLI loads with
    no trust step; a repository's .github/hooks only with --scope project, outside the tree."""
    proj = home.parent / "proj"
    out = run(["install", "copilot"], home, proj)
    assert out.returncode == 0, out.stderr
    data = json.loads((home / ".copilot/hooks/guard.json").read_text())
    item = {"type": "command", "bash": f"{guard_bin()} hook copilot", "timeoutSec": 10}
    assert data == {"version": 1, "hooks": {"preToolUse": [item], "postToolUse": [item], "postToolUseFailure": [item]}}
    assert run(["install", "copilot"], home, proj).returncode == 0
    assert not (proj / ".github").exists()
    assert run(["install", "copilot", "--scope", "project"], home, proj).returncode == 0
    (proj / ".github/hooks/other.json").write_text("{}")
    assert run(["uninstall", "copilot", "--scope", "project"], home, proj).returncode == 0
    assert sorted(p.name for p in (proj / ".github/hooks").iterdir()) == ["other.json"]
    assert run(["uninstall", "copilot"], home, proj).returncode == 0
    assert not (home / ".copilot/hooks/guard.json").exists()


def test_a_file_guard_did_not_write_is_not_replaced(home: Path) -> None:
    proj = home.parent / "proj"
    path = proj / ".opencode/plugin/guard.js"
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({})\n")
    assert run(["install", "opencode", "--scope", "project"], home, proj).returncode == 1
    assert run(["uninstall", "opencode", "--scope", "project"], home, proj).returncode == 1
    assert path.read_text() == "export const Mine = async () => ({})\n"


# ---------------------------------------------------------------------- the OpenCode plugin, run by node


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_opencode_plugin_throws_guards_refusal_and_lets_allowed_commands_run(home: Path, tmp_path: Path) -> None:
    proj = home.parent / "proj"
    assert run(["install", "opencode"], home, proj).returncode == 0
    plugin = home / ".config/opencode/plugin/guard.js"
    assert "guard-opencode-plugin" in plugin.read_text()
    driver = tmp_path / "drive.mjs"
    driver.write_text(
        f"import {{ GuardPlugin }} from {json.dumps(str(plugin))};\n"
        "const hooks = await GuardPlugin({ directory: '/workspace/app' });\n"
        "const before = hooks['tool.execute.before'];\n"
        "for (const command of ['git push origin feat', 'ls -la', 'git status']) {\n"
        "  const output = { args: { command } };\n"
        "  try { await before({ tool: 'bash', sessionID: 'ses_1', callID: 'c' }, output);"
        " console.log('ran', command); }\n"
        "  catch (e) { console.log('refused', command, '::', e.message.split('.')[0]); }\n"
        "}\n"
        "await before({ tool: 'edit', sessionID: 'ses_1' }, { args: { command: 'git push' } });\n"
        "console.log('edit untouched');\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_TREE="/workspace", GUARD_AUDIT_LOG=str(tmp_path / "audit.jsonl"), GUARD_SERVER="0")
    out = subprocess.run([NODE, str(driver)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "refused git push origin feat :: Refused: git push",
        "ran ls -la",
        "refused git status :: Refused: git status",
        "edit untouched",
    ]
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(r["client"], r["session"]) for r in records] == [("opencode", "ses_1")] * 2
    # guard missing: the plugin warns and lets the command through, unless GUARD_FAIL=closed
    env["GUARD_LAUNCHER"] = str(tmp_path / "no-such-guard")
    out = subprocess.run([NODE, str(driver)], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.splitlines()[0] == "ran git push origin feat" and "could not check" in out.stderr
    env["GUARD_FAIL"] = "closed"
    out = subprocess.run([NODE, str(driver)], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.splitlines()[1].startswith("refused ls -la :: guard could not check the command")
