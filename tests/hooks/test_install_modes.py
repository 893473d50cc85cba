"""What ``guard install`` and the audit log create, whatever the umask (issue 37, finding 9): a
symlinked settings file stays a link (its target is edited, and uninstall leaves the link too),
folders and files get explicit modes, and the audit log is the user's alone (0600, folder 0700).
Run as the real ``guard`` command under ``umask 000``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from tests.conftest import guard_bin


def run(args: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([guard_bin(), *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=60, preexec_fn=lambda: os.umask(0))


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUARD_", "XDG_"))}
    env.update(HOME=str(home), **extra)
    return env


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def test_a_symlinked_settings_file_stays_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "dotfiles").mkdir(parents=True)
    (home / ".claude").mkdir()
    target = home / "dotfiles" / "claude.json"
    user = {"model": "opus", "permissions": {"allow": ["Bash(npm test:*)"]}}
    target.write_text(json.dumps(user))
    link = home / ".claude" / "settings.json"
    link.symlink_to(target)
    r = run(["install", "claude"], _env(home), tmp_path)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    installed = json.loads(target.read_text())
    assert installed["model"] == "opus" and "PreToolUse" in installed["hooks"]
    r = run(["uninstall", "claude"], _env(home), tmp_path)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and json.loads(target.read_text()) == user


def test_install_under_umask_000_creates_folders_0755_and_files_0644(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    r = run(["install", "claude"], _env(home), tmp_path)
    assert r.returncode == 0, r.stderr
    assert _mode(home / ".claude") == 0o755
    assert _mode(home / ".claude" / "settings.json") == 0o644
    assert not [p for p in (home / ".claude").iterdir() if p.name != "settings.json"]  # no temporary left


def test_the_audit_log_is_created_0600_in_a_0700_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "tree" / "app").mkdir(parents=True)
    log = home / "state" / "guard" / "audit.jsonl"
    env = _env(home, GUARD_TREE=str(home / "tree"), GUARD_SERVER="off", GUARD_AUDIT_LOG=str(log))
    payload = {"tool_name": "Bash", "tool_input": {"command": "git push origin main"}, "cwd": str(home / "tree" / "app")}
    r = run(["hook", "claude"], env, tmp_path, json.dumps(payload))
    assert '"deny"' in r.stdout, r.stderr
    assert log.exists() and _mode(log) == 0o600
    assert _mode(log.parent) == 0o700
