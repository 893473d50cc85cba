"""A login shell (``-l``, Codex's ``-lc``) reads /etc/profile and the user's profile first: what
they define is the command's state; what they run is the machine's own set-up and is not
judged. Real guard-shell against real bash."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import guard_bin
from tests.hosts.test_wrappers import stop_server


@pytest.fixture
def login(tmp_path: Path) -> Iterator[dict]:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text(
        'alias gp="git push"\n'
        "export GIT_BRANCH=$(git rev-parse --abbrev-ref HEAD 2>/dev/null)\n"  # top-level git: set-up
        ". ~/.bashrc\n")
    (home / ".bashrc").write_text("deploy() { git push origin main; }\nGREETING=hello\n")
    tree = tmp_path / "ws"
    (tree / "app").mkdir(parents=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "GUARD_TREE": str(tree),
           "GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl"), "XDG_RUNTIME_DIR": str(tmp_path / "run"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    (tmp_path / "run").mkdir(mode=0o700)
    yield {"env": env, "cwd": tree / "app"}
    stop_server(env)


def run(shell: str, args: list[str], login: dict) -> subprocess.CompletedProcess:
    return subprocess.run([shell, *args], capture_output=True, env=login["env"], cwd=login["cwd"],
                          stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize("cmd, what", [("gp", "git push (via alias gp)"), ("deploy", "git push (via function deploy)")])
def test_profile_definitions_are_the_state_of_a_login_shell(login: dict, cmd: str, what: str) -> None:
    p = run(guard_bin("guard-shell"), ["-lc", cmd], login)
    assert p.returncode == 126 and p.stderr.decode().startswith(f"Refused: {what}.")
    # not a login shell, or --noprofile: bash reads no profile, so neither does guard
    for args in (["-c", cmd], ["--noprofile", "-lc", cmd]):
        ours, bash = run(guard_bin("guard-shell"), args, login), run("/bin/bash", args, login)
        assert (ours.returncode, ours.stdout, ours.stderr) == (bash.returncode, bash.stdout, bash.stderr)


def test_what_a_profile_runs_is_not_judged(login: dict) -> None:
    for cmd in ("echo $GREETING", "type deploy | head -1", "cat /etc/hostname >/dev/null; echo ok"):
        ours, bash = run(guard_bin("guard-shell"), ["-lc", cmd], login), run("/bin/bash", ["-lc", cmd], login)
        assert (ours.returncode, ours.stdout, ours.stderr) == (bash.returncode, bash.stdout, bash.stderr), cmd
        assert ours.returncode == 0


def test_audit_records_the_command_not_the_profile(login: dict) -> None:
    run(guard_bin("guard-shell"), ["-lc", "gp origin feat"], login)
    log = Path(login["env"]["GUARD_AUDIT_LOG"]).read_text().splitlines()
    assert len(log) == 1 and '"command":"gp origin feat"' in log[0]
