"""``guard doctor`` against the real clients on PATH: it fails while a client has no working
guard, names an untrusted Codex hook as such, sees a guard file inside the tree, and passes once
``guard install`` has put guard in front of each client."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.clients import harness


def _env(tmp_path: Path) -> dict[str, str]:
    dirs = []
    for name in harness.PINS:
        launcher, why = harness.installed(name)
        if launcher is None:
            pytest.skip(why)
        dirs.append(str(launcher.parent))
    home, tree = tmp_path / "home", tmp_path / "tree"
    home.mkdir()
    tree.mkdir()
    return {"PATH": ":".join([*dirs, os.environ["PATH"]]), "HOME": str(home), "GUARD_TREE": str(tree),
            "GUARD_AUDIT_LOG": "off", "GUARD_SERVER": "0", "SHELL": "/bin/bash", "LANG": "C.UTF-8"}


def guard(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(harness.BIN / "guard"), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=240)


def test_doctor_before_and_after_install(tmp_path: Path) -> None:
    env = _env(tmp_path)
    cwd = tmp_path / "home"
    before = guard(env, "doctor", cwd=cwd)
    assert before.returncode == 1, before.stdout + before.stderr
    assert before.stdout.count("NO working guard in front of this client") == 5
    assert guard(env, "install", "codex", "--untrusted", cwd=cwd).returncode == 0
    untrusted = guard(env, "doctor", cwd=cwd)
    assert "NOT trusted (Codex skips it)" in untrusted.stdout and untrusted.returncode == 1
    for host in ("claude", "codex", "gemini", "opencode", "copilot"):
        done = guard(env, "install", host, cwd=cwd)
        assert done.returncode == 0, done.stdout + done.stderr
    after = guard(env, "doctor", cwd=cwd)
    assert after.returncode == 0, after.stdout + after.stderr
    assert after.stdout.count("=> guard is in front") == 5
    assert after.stdout.count("git push in ") >= 5 and "not refused" not in after.stdout
    # a hook file someone put into the tree is named
    (tmp_path / "tree" / ".github" / "hooks").mkdir(parents=True)
    (tmp_path / "tree" / ".github" / "hooks" / "guard.json").write_text('{"bash": "guard hook copilot"}')
    warned = guard(env, "doctor", cwd=cwd)
    assert "a guard file inside the tree" in warned.stdout


def test_doctor_sees_the_shell_placement(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env["CLAUDE_CODE_SHELL"] = str(harness.BIN / "guard-bash")
    out = guard(env, "doctor", cwd=tmp_path / "home")
    claude = out.stdout.split("codex (")[0]
    assert "guard-bash ($CLAUDE_CODE_SHELL" in claude and "shell placement: git push in" in claude
    assert "=> guard is in front" in claude
