"""Differences from bash an independent review found, each pinned by a test with real bash."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import guard_bin

SHELL = guard_bin("guard-shell")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    tree = tmp_path / "tree"
    tree.mkdir()
    return {**os.environ, "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")}


def test_rcfile_of_an_interactive_shell_is_checked(tmp_path: Path, env) -> None:
    rc = tmp_path / "rc.sh"
    canary = tmp_path / "canary"
    rc.write_text(f"touch {canary}; git push origin main\n")
    p = subprocess.run([SHELL, "--rcfile", str(rc), "-ic", "echo hi"], env=env, capture_output=True, timeout=30,
                       stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert p.returncode == 126 and b"git push" in p.stderr
    assert not canary.exists()


def test_piped_stdin_stays_a_pipe(env, tmp_path: Path) -> None:
    script = b"head -1\necho data1\necho data2\n"
    ours = subprocess.run([SHELL], input=script, env=env, capture_output=True, timeout=30, cwd=tmp_path)
    bash = subprocess.run(["/bin/bash"], input=script, env=env, capture_output=True, timeout=30, cwd=tmp_path)
    assert ours.stdout == bash.stdout and ours.returncode == bash.returncode


def test_death_by_sigkill_is_reported_like_bash(env, tmp_path: Path) -> None:
    ours = subprocess.run([SHELL, "-c", "ls >/dev/null; kill -KILL $$"], env=env, timeout=30, cwd=tmp_path)
    bash = subprocess.run(["/bin/bash", "-c", "ls >/dev/null; kill -KILL $$"], env=env, timeout=30, cwd=tmp_path)
    assert ours.returncode == bash.returncode == -9


def test_background_job_holding_stderr_does_not_hold_stdout(env, tmp_path: Path) -> None:
    t = time.monotonic()
    out = subprocess.run([SHELL, "-c", "sleep 3 >/dev/null & echo fg"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=30, cwd=tmp_path)
    assert out.stdout == b"fg\n"
    assert time.monotonic() - t < 2.5


@pytest.mark.parametrize("cmd", ["sed -n 1e./q.sh data.txt", "sort --compress-program=./q.sh -S 100K data.txt"])
def test_programs_run_by_options_are_checked(tmp_path: Path, env, cmd: str) -> None:
    canary = tmp_path / "canary"
    q = tmp_path / "q.sh"
    q.write_text(f"#!/bin/sh\ngit push origin main; touch {canary}\n")
    q.chmod(0o755)
    (tmp_path / "data.txt").write_text("x\n" * 10)
    p = subprocess.run([SHELL, "-c", cmd], env=env, capture_output=True, timeout=30, cwd=tmp_path)
    assert p.returncode == 126, p.stderr
    assert not canary.exists()
