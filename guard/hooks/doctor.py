"""``guard doctor``: for each agent client found on PATH, whether guard is really in front of it.

For each client: the shell it will actually run (by that client's own rule, not ``$SHELL``) and
whether that shell is guard; guard's pre-tool hook (installed, trusted where the host asks for
trust, its program present); guard files inside the tree (which every agent would see); and
whether a ``git push`` in the tree is refused through that placement now: the installed hook
command is run with the payload the host would send, and a guard shell is asked by the analysis
it runs. Exit 1 when an installed client has no working guard in front of it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from typing import Any

from guard.hooks import install as inst

PROBE = "git push origin feature"
# client: (program on PATH, guard install HOST, the payload its pre-tool hook gets)
CLIENTS: dict[str, tuple[str, str]] = {
    "claude-code": ("claude", "claude"),
    "codex": ("codex", "codex"),
    "gemini-cli": ("gemini", "gemini"),
    "opencode": ("opencode", "opencode"),
    "copilot-cli": ("copilot", "copilot"),
}
# what each tree would hold if a hook had been installed into it
TREE_FILES = (".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json", ".gemini/settings.json",
              ".github/hooks/guard.json", ".opencode/plugin/guard.js", ".cursor/hooks.json")


def is_guard_shell(path: str | None) -> bool:
    if not path:
        return False
    real = os.path.realpath(path)
    if os.path.basename(real) in ("guard-shell", "guard-bash"):
        return True
    try:
        with open(real, "rb") as fh:
            return b"guard-shell" in fh.read(400)
    except OSError:
        return False


def _executable(path: str | None) -> bool:
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)  # type: ignore[arg-type]


def shell_of(client: str, env: dict[str, str]) -> tuple[str | None, str]:
    """The shell the client runs its shell tool with, and the rule that picks it."""
    path = env.get("PATH")
    if client == "claude-code":
        for var in ("CLAUDE_CODE_SHELL", "SHELL"):
            v = env.get(var)
            if v and ("bash" in v or "zsh" in v) and _executable(v):
                return v, f"${var} (its path names bash or zsh)"
        return shutil.which("bash", path=path) or "/bin/bash", "bash from PATH ($SHELL not taken)"
    if client == "codex":
        try:
            import pwd

            login = pwd.getpwuid(os.getuid()).pw_shell
        except (KeyError, ImportError):
            login = ""
        if os.path.basename(login) in ("bash", "zsh", "sh") and _executable(login):
            return login, "the login shell in the password database"
        return shutil.which("bash", path=path), "bash from PATH (the login shell is not one Codex knows)"
    if client == "gemini-cli":
        return shutil.which("bash", path=path), "bash from PATH"
    if client == "opencode":
        v = env.get("SHELL")
        if v and os.path.basename(v) not in ("fish", "nu") and _executable(v):
            return v, "$SHELL"
        return shutil.which("bash", path=path), "bash from PATH"
    return "/bin/bash", "/bin/bash by its absolute path"


def _pre_commands(spec: inst.Spec, path: str) -> list[str]:
    """guard's pre-tool commands in the host's file at ``path``."""
    if spec.host == "opencode":
        try:
            text = open(path, encoding="utf-8").read()
        except OSError:
            return []
        if inst.PLUGIN_MARKER not in text:
            return []
        start = text.find("process.env.GUARD_LAUNCHER || ")
        launcher = json.loads(text[start + 30 : text.index(";", start)]) if start >= 0 else "guard"
        return [f"{shlex.quote(launcher)} hook opencode"]
    try:
        data = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError):
        return []
    event = "preToolUse" if spec.host == "copilot" else spec.event
    out = []
    for item in (data.get("hooks") or {}).get(event) or []:
        for h in item.get("hooks", [item]) if isinstance(item, dict) else []:
            for key in ("command", "bash"):
                if inst.is_guard_command(h.get(key), spec.host):
                    out.append(h[key])
    return out


def _payload(host: str, tree: str) -> dict[str, Any]:
    if host == "gemini":
        return {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": {"command": PROBE},
                "cwd": tree, "session_id": "guard-doctor"}
    if host == "copilot":
        return {"toolName": "bash", "toolArgs": json.dumps({"command": PROBE}), "cwd": tree, "sessionId": "guard-doctor"}
    if host == "opencode":
        return {"tool": "bash", "command": PROBE, "cwd": tree, "sessionID": "guard-doctor"}
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": PROBE}, "cwd": tree,
            "session_id": "guard-doctor"}


def hook_refuses(command: str, host: str, tree: str, env: dict[str, str]) -> tuple[bool, str]:
    """Run the installed hook command the way the host does (``sh -c``, the payload on stdin)."""
    probe_env = dict(env, GUARD_AUDIT_LOG="off")
    try:
        got = subprocess.run(["sh", "-c", command], input=json.dumps(_payload(host, tree)), capture_output=True,
                             text=True, timeout=20, env=probe_env, cwd=tree if os.path.isdir(tree) else "/")
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"the hook did not answer: {e}"
    out = got.stdout
    if '"deny"' in out or '"deny": true' in out:
        return True, "refused"
    return False, f"not refused (exit {got.returncode}: {(got.stderr or out).strip()[:200]})"


def shell_refuses(tree: str, env: dict[str, str]) -> bool:
    from guard.shell.decide import decide

    d = decide(PROBE, cwd=tree, env=dict(env, GUARD_AUDIT_LOG="off"))
    return d.action == "refuse"


def examine(client: str, env: dict[str, str], trees: list[str], cwd: str) -> tuple[bool, list[str]]:
    program, host = CLIENTS[client]
    spec = inst.SPECS[host]
    lines = [f"{client} ({shutil.which(program, path=env.get('PATH'))})"]
    tree = trees[0] if trees else "/workspace"
    shell, rule = shell_of(client, env)
    guarded_shell = is_guard_shell(shell)
    lines.append(f"  shell: {shell} ({rule}){': guard' if guarded_shell else ': not guard'}")
    works = False
    if guarded_shell:
        ok = shell_refuses(tree, env)
        works = works or ok
        lines.append(f"  shell placement: git push in {tree} {'is refused' if ok else 'is NOT refused'}")
    home = env.get("HOME") or os.path.expanduser("~")
    for scope in ("user", "project"):
        try:
            path = inst.target_path(spec, scope, home, cwd, dict(env, GUARD_TREE="/nonexistent-for-doctor"))
        except inst.InstallError:
            continue
        commands = _pre_commands(spec, path) if os.path.exists(path) else []
        if not commands:
            lines.append(f"  hook ({scope}): none in {path}")
            continue
        note = ""
        if host == "codex":
            trusted = _codex_trusted(path, cwd, env)
            note = {True: ", trusted", False: ", NOT trusted (Codex skips it)", None: ", trust unknown"}[trusted]
            if trusted is False:
                lines.append(f"  hook ({scope}): {path}{note}")
                continue
        ok, said = hook_refuses(commands[0], host, tree, env)
        works = works or ok
        lines.append(f"  hook ({scope}): {path}{note}; git push in {tree}: {said}")
    for root in trees:
        for rel in TREE_FILES:
            p = os.path.join(root, rel)
            if os.path.exists(p) and "guard" in _head(p):
                lines.append(f"  WARNING: a guard file inside the tree: {p} (every agent sees it)")
    lines.append(f"  => {'guard is in front' if works else 'NO working guard in front of this client'}")
    return works, lines


def _head(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(20000)
    except OSError:
        return ""


def _codex_trusted(path: str, cwd: str, env: dict[str, str]) -> bool | None:
    """Codex's own view of guard's hooks (its app server's hooks/list), without changing it."""
    codex = inst._codex_program(env)
    if codex is None:
        return None
    try:
        listing = inst.codex_hooks_list(codex, cwd, env)
    except (OSError, ValueError):
        return None
    if listing is None:
        return None
    hooks = [h for e in listing.get("data", []) for h in e.get("hooks", [])
             if h.get("sourcePath") == path and inst.is_guard_command(h.get("command"), "codex")
             and h.get("eventName") == "preToolUse"]
    return bool(hooks) and all(h.get("trustStatus") in ("trusted", "managed") for h in hooks)


def rules_line(env: dict[str, str]) -> str:
    """What the rules in effect do here: how many refuse, and every rule on trial (warn,
    observe), which lets its commands run: an operator sees a weaker guard at once."""
    from guard.context import Context
    from guard.engine import rules_for
    from guard.ruleset.actions import effective, mode_of

    rs = rules_for(Context.from_environ(env=env))
    mode, note = mode_of(env.get("GUARD_MODE"))
    actions = [(r.id, effective(r, rs.config, mode)[0]) for r in rs.rules if r.verdict != "allow"]
    trial = [f"{rid} ({a})" for rid, a in actions if a != "refuse"]
    line = f"rules: {sum(a == 'refuse' for _, a in actions)} refuse"
    line += f"; on trial, not refusing: {', '.join(trial)}" if trial else "; none on trial"
    return line + (f" ({note})" if note else "")


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: guard doctor  (each agent client on PATH: its shell, guard's hooks, a git push probe)")
        return 0
    env = dict(os.environ)
    trees = inst.tree_roots(env)
    cwd = os.getcwd()
    print(rules_line(env))
    found = [c for c, (prog, _) in CLIENTS.items() if shutil.which(prog, path=env.get("PATH"))]
    if not found:
        print("guard doctor: no agent client (claude, codex, gemini, opencode, copilot) on PATH")
        return 0
    status = 0
    for client in found:
        works, lines = examine(client, env, trees, cwd)
        print("\n".join(lines))
        if not works:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
