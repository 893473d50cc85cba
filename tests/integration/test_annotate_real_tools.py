"""Real git through ``guard annotate`` against a loopback git smart-HTTP server: nesting, the
audit log, and the conditions a note needs. Every build tool and version, and the recorded
fixtures, are in test_annotate_tools.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_annotate_gitserver import GitServer, git_server_fixture  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "stderr"
PREFIX = b"[guard] "


def guard_annotate(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "guard.cli.annotate", "--", *args],
        env=env, cwd=cwd, capture_output=True, timeout=timeout,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.pop("GUARD_ANNOTATING", None)
    e.update(
        GIT_TERMINAL_PROMPT="0",
        GUARD_TREE=str(tmp_path / "tree"),
        GUARD_AUDIT_LOG=str(tmp_path / "audit.jsonl"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        PYTHONPATH=str(REPO),
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(tmp_path / "home"),
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "tree").mkdir()
    return e


def annotations(stderr: bytes) -> list[bytes]:
    return [line for line in stderr.split(b"\n") if line.startswith(PREFIX)]


def tool(name: str) -> str | None:
    """The tool's path when it is installed and runs (a rustup proxy with no toolchain does not)."""
    path = os.environ.get(f"GUARD_TEST_{name.upper()}") or shutil.which(name)
    if path is None:
        return None
    try:
        ok = subprocess.run([path, "--version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return path if ok else None


def assert_one(result: subprocess.CompletedProcess, rule_words: bytes, tool_name: bytes) -> bytes:
    found = annotations(result.stderr)
    assert len(found) == 1, result.stderr.decode(errors="replace")
    assert rule_words in found[0] and tool_name in found[0]
    return found[0]


def audit_rules(env: dict[str, str]) -> list[str]:
    path = Path(env["GUARD_AUDIT_LOG"])
    if not path.exists():
        return []
    return [json.loads(line).get("rule") for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- git


def test_git_clone_private_prints_real_error_and_one_annotation(git_server: GitServer, env, tmp_path: Path) -> None:
    url = git_server.url("private.git")
    r = guard_annotate(["git", "clone", url, str(tmp_path / "out")], env, tmp_path)
    assert r.returncode == 128
    assert b"fatal: could not read Username for 'http://127.0.0.1:" in r.stderr
    line = assert_one(r, b"no git credential, by design", b'git_clone(url="' + url.encode() + b'")')
    # the annotation comes after git's own error, on its own line
    assert r.stderr.index(b"terminal prompts disabled") < r.stderr.index(line)
    assert not (tmp_path / "out").exists()
    assert "git-terminal-prompts-disabled" in audit_rules(env)


def test_git_with_a_wrong_token_on_gitlab_gets_gitlabs_note(git_server: GitServer, env, tmp_path: Path) -> None:
    """GitLab's 401 body reaches git's stderr as "remote: HTTP Basic: Access denied"; the GitLab
    note replaces the generic one, once, and names the repository without the token."""
    url = git_server.url("gitlab-private.git")
    with_token = url.replace("http://", "http://oauth2:glpat-wrong@")
    r = guard_annotate(["git", "ls-remote", with_token], env, tmp_path)
    assert r.returncode == 128
    assert b"remote: HTTP Basic: Access denied" in r.stderr and b"fatal: Authentication failed for" in r.stderr
    line = assert_one(r, b"no GitLab token, by design", b'git_clone(url="' + url.encode() + b'")')
    assert b"glpat-wrong" not in line and b"glab_mr_create" in line
    assert audit_rules(env) == ["gitlab-http-basic-denied"]


def test_git_clone_public_stays_quiet(git_server: GitServer, env, tmp_path: Path) -> None:
    r = guard_annotate(["git", "clone", git_server.url("public.git"), str(tmp_path / "pub")], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert annotations(r.stderr) == []
    assert (tmp_path / "pub" / "README").read_text() == "public\n"
    assert audit_rules(env) == []


def test_git_through_nested_guards_annotates_once(git_server: GitServer, env, tmp_path: Path) -> None:
    inner = [sys.executable, "-m", "guard.cli.annotate", "--", "git", "ls-remote", git_server.url("private.git")]
    r = guard_annotate(inner, env, tmp_path)
    assert r.returncode == 128
    assert len(annotations(r.stderr)) == 1
    # an environment scrubbed between the two guards still gives one annotation
    scrubbed = ["env", "-u", "GUARD_ANNOTATING", *inner]
    r2 = guard_annotate(scrubbed, env, tmp_path)
    assert len(annotations(r2.stderr)) == 1, r2.stderr


def test_git_without_prompt_env_is_not_annotated(git_server: GitServer, env, tmp_path: Path) -> None:
    env = {**env, "GIT_TERMINAL_PROMPT": "1", "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false"}
    r = guard_annotate(["git", "ls-remote", git_server.url("private.git")], env, tmp_path)
    assert r.returncode != 0
    assert annotations(r.stderr) == []


def test_git_status_in_tree_explains_missing_git(env, tmp_path: Path) -> None:
    tree_dir = tmp_path / "tree" / "proj"
    tree_dir.mkdir()
    env = {**env, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    r = guard_annotate(["git", "rev-parse", "HEAD"], env, tree_dir)
    assert r.returncode == 128 and b"not a git repository" in r.stderr
    assert_one(r, b"no .git by design", b"changes_since")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    r2 = guard_annotate(["git", "rev-parse", "HEAD"], env, outside)
    assert b"not a git repository" in r2.stderr and annotations(r2.stderr) == []


def git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()
    return out[-1] if out else "?"


def test_guard_shell_annotates_a_literal_git_command_it_runs_without_bash(git_server: GitServer, env,
                                                                          tmp_path: Path) -> None:
    """`git ls-remote URL` is one program and literal words: guard-shell spawns git itself, as
    bash would have exec'd it (guard.shell.simple_exec), and still relays and annotates its stderr."""
    shell = Path(sys.executable).with_name("guard-shell")
    if not shell.exists():
        pytest.skip("guard-shell is not installed beside this Python")
    env = {k: v for k, v in env.items() if k not in ("GUARD_REAL_SHELL", "SHLVL")}
    env["GUARD_SERVER"] = "0"
    url = git_server.url("private.git")
    argv = [str(shell), "-c", f"git ls-remote {url}"]
    log = tmp_path / "strace.log"
    if shutil.which("strace"):
        argv = ["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(log), *argv]
    r = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=90)
    assert r.returncode == 128, r.stderr
    assert_one(r, b"no git credential, by design", b'git_clone(url="' + url.encode() + b'")')
    if log.exists() and log.read_text():
        execs = [ln.split('execve("', 1)[1].split('"', 1)[0] for ln in log.read_text().splitlines()
                 if 'execve("' in ln and ln.rstrip().endswith("= 0")]
        assert "/bin/bash" not in execs and any(e.endswith("/git") for e in execs), execs
