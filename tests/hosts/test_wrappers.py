"""guard-shell as ``$SHELL`` behind the hosts' own command wrappers, over real bash.

Harnesses: plain ``-c CMD``, Codex ``-lc CMD``, Claude Code's ``-c -l "source SNAP && eval
'CMD' \\< /dev/null && pwd -P >| CWDFILE"`` without a snapshot and with a small, a medium and a
large one (made by real bash with Claude Code's snapshot format, tests/hosts/snapshots.py), and
Codex's ``-lc ". SNAP && CMD"`` with the three snapshots.

- Allowed commands, sampled from the shared corpus (those whose every program only reads):
  stdout, stderr, exit status and Claude Code's cwd file are byte-identical to plain bash
  running the same wrapper string.
- Refused commands from the corpus: refused through every wrapper (exit 126, nothing run), with
  the message ``guard check`` gives for the bare command, naming what the agent wrote; the
  audit line records the inner command and the host.
- The snapshot's own aliases and functions (``gp``, ``gpush``) are refused where they are
  called, and defining them refuses nothing.
- Claude Code's snapshot creation script runs through guard-shell and writes the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHARED, guard_bin
from tests.hosts import snapshots

SIZES = [s for s in ("small", "medium", "large") if snapshots.available(s)]
SAMPLE = int(os.environ.get("GUARD_WRAPPER_SAMPLE", "20"))
REFUSED_SAMPLE = int(os.environ.get("GUARD_WRAPPER_REFUSED", "10"))
# programs that only read; a command qualifies when every invocation is one of these
READERS = frozenset("""ls cat echo printf pwd cd wc head tail grep egrep fgrep sort uniq tr cut true false
test [ [[ basename dirname seq expr which type nl tac rev realpath readlink stat file du""".split())
FAKE_TOOLS = ("git", "gh", "curl")  # stand-ins that say so if a refused command ever ran


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    base = tmp_path_factory.mktemp("hosts")
    home = base / "home"
    (home / ".codex" / "shell_snapshots").mkdir(parents=True)
    snaps = {}
    for size in SIZES:
        made = snapshots.make(size, base / "snaps")
        codex = home / ".codex" / "shell_snapshots" / f"{size}.sh"
        shutil.copy(made, codex)
        snaps[size] = (str(made), str(codex))
    tree = base / "ws"
    work = tree / "app"
    (work / "src").mkdir(parents=True)
    (work / "README.md").write_text("# app\nline two\n")
    (work / "src" / "main.py").write_text("print('hi')\n")
    fakebin = base / "fakebin"
    fakebin.mkdir()
    for tool in FAKE_TOOLS:
        p = fakebin / tool
        p.write_text(f"#!/bin/sh\necho 'RAN {tool}' \"$@\"\n")
        p.chmod(0o755)
    env = {
        "PATH": f"{fakebin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
        "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(base / "audit.jsonl"), "GUARD_REAL_SHELL": "/bin/bash",
        "XDG_CACHE_HOME": str(base / "cache"), "XDG_RUNTIME_DIR": str(base / "run"),
    }
    (base / "run").mkdir(mode=0o700)
    yield {"base": base, "home": home, "tree": tree, "work": work, "snaps": snaps, "env": env}
    stop_server(env)


def stop_server(env: dict) -> None:
    """Stop the analysis server the runs under ``env`` started (its socket is in their
    XDG_RUNTIME_DIR), so no test leaves one behind."""
    from guard.shell import client

    path = client.socket_path(env)
    if path:
        client.stop_server(path)


def harnesses(world: dict) -> list[tuple[str, str | None, object]]:
    """(name, the client the audit log names, build) where build(cmd, cwd_file) is the argv
    after the shell."""
    out: list[tuple[str, str | None, object]] = [
        ("plain -c", None, lambda c, f: ["-c", c]),
        ("codex -lc", None, lambda c, f: ["-lc", c]),
        ("claude, no snapshot", "claude-code", lambda c, f: ["-c", "-l", snapshots.claude_wrapper(None, c, f)]),
    ]
    for size, (claude_snap, codex_snap) in world["snaps"].items():
        out.append((f"claude {size}", "claude-code",
                    lambda c, f, s=claude_snap: ["-c", "-l", snapshots.claude_wrapper(s, c, f)]))
        out.append((f"codex {size}", "codex",
                    lambda c, f, s=codex_snap: ["-lc", snapshots.codex_snapshot_wrapper(s, c)]))
    return out


def run(shell: str, args: list[str], world: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([shell, *args], capture_output=True, env=world["env"], cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=60)


# ---------------------------------------------------------------------- corpus samples


def _corpus() -> list[str]:
    path = SHARED / "corpus" / "agent-commands.jsonl"
    if not path.exists():
        pytest.skip("shared corpus not available beside the checkout")
    return [json.loads(line)["command"] for line in path.read_text().splitlines() if line.strip()]


def _verdicts(commands: list[str], cwd: str, tree: str) -> list:
    from guard.context import Context
    from guard.engine import analyze

    ctx = Context.from_environ(cwd=cwd, env={"HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}, trees=(tree,))
    return [analyze(c, ctx) for c in commands]


@pytest.fixture(scope="module")
def allowed_sample(world: dict) -> list[str]:
    cands = [c for c in _corpus() if len(c) < 200 and "\n" not in c and "sudo" not in c and "$(" not in c]
    picked = []
    for cmd, v in zip(cands, _verdicts(cands, str(world["work"]), str(world["tree"])), strict=True):
        if v.verdict != "allow" or not v.invocations:
            continue
        if all(i.program in READERS and not i.writes and not i.via for i in v.invocations):
            picked.append(cmd)
        if len(picked) >= SAMPLE:
            break
    return picked


@pytest.fixture(scope="module")
def refused_sample(world: dict) -> list[tuple[str, str]]:
    cands = [c for c in _corpus() if len(c) < 200 and "\n" not in c and c.lstrip().startswith(("git ", "gh "))]
    picked = []
    for cmd, v in zip(cands, _verdicts(cands, str(world["work"]), str(world["tree"])), strict=True):
        if v.verdict == "refuse":
            picked.append((cmd, v.message))
        if len(picked) >= REFUSED_SAMPLE:
            break
    return picked


# ---------------------------------------------------------------------- tests


def test_allowed_commands_are_byte_identical_to_bash_through_every_wrapper(world: dict, allowed_sample) -> None:
    assert len(allowed_sample) >= min(SAMPLE, 20)
    cwd_file = str(world["base"] / "claude-1a2b-cwd")
    mismatches = []
    for name, _, build in harnesses(world):
        for cmd in allowed_sample:
            args = build(cmd, cwd_file)
            results = []
            for shell in ("/bin/bash", guard_bin("guard-shell")):
                if os.path.exists(cwd_file):
                    os.unlink(cwd_file)
                proc = run(shell, args, world, world["work"])
                cwd_text = Path(cwd_file).read_bytes() if os.path.exists(cwd_file) else None
                results.append((proc.returncode, proc.stdout, proc.stderr, cwd_text))
            if results[0] != results[1]:
                mismatches.append((name, cmd, results))
    assert mismatches == []


def test_refused_commands_are_refused_through_every_wrapper(world: dict, refused_sample) -> None:
    assert len(refused_sample) >= min(REFUSED_SAMPLE, 10)
    log = Path(world["env"]["GUARD_AUDIT_LOG"])
    cwd_file = str(world["base"] / "claude-3c4d-cwd")
    for name, client, build in harnesses(world):
        for cmd, message in refused_sample:
            before = log.read_text().splitlines() if log.exists() else []
            proc = run(guard_bin("guard-shell"), build(cmd, cwd_file), world, world["work"])
            assert proc.returncode == 126, (name, cmd, proc.stdout, proc.stderr)
            assert proc.stdout == b"" and b"RAN " not in proc.stderr
            assert proc.stderr.decode() == message + "\n", (name, cmd)  # what the agent wrote, never the wrapper
            new = [json.loads(line) for line in log.read_text().splitlines()[len(before):]]
            assert len(new) == 1 and new[0]["command"] == cmd, (name, cmd, new)
            assert new[0].get("client") == client, (name, cmd)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_definitions_count_where_called(world: dict, size: str) -> None:
    snap = world["snaps"][size][0]
    cwd_file = str(world["base"] / "claude-5e6f-cwd")
    for cmd, expect in (("gp", "Refused: git push (via alias gp)"), ("gs", "Refused: git status (via alias gs)"),
                        ("type gp >/dev/null && echo defined", None), ("ls src", None)):
        proc = run(guard_bin("guard-shell"), ["-c", "-l", snapshots.claude_wrapper(snap, cmd, cwd_file)], world,
                   world["work"])
        if expect is None:
            assert proc.returncode == 0, (cmd, proc.stderr)
        else:
            assert proc.returncode == 126 and proc.stderr.decode().startswith(expect + "."), (cmd, proc.stderr)
    if size == "small":
        proc = run(guard_bin("guard-shell"), ["-c", "-l", snapshots.claude_wrapper(snap, "gpush", cwd_file)],
                   world, world["work"])
        assert proc.stderr.decode().startswith("Refused: git push (via function gpush)")


def test_a_large_snapshot_never_turns_the_analysis_off(world: dict) -> None:
    if "large" not in world["snaps"]:
        pytest.skip("bash-completion's git script is not installed")
    snap = world["snaps"]["large"][0]
    assert os.path.getsize(snap) > 90_000
    cwd_file = str(world["base"] / "claude-7a8b-cwd")
    for cmd in ("git push origin feat", "eval 'git push'", "bash -c 'git commit -am x'"):
        proc = run(guard_bin("guard-shell"), ["-c", "-l", snapshots.claude_wrapper(snap, cmd, cwd_file)], world,
                   world["work"])
        assert proc.returncode == 126, (cmd, proc.stderr)


@pytest.mark.parametrize("size", SIZES)
def test_snapshot_creation_script_writes_the_same_file_through_guard_shell(world: dict, size: str) -> None:
    rc = world["base"] / "snaps" / f"{size}.bashrc"
    out = {}
    for label, shell in (("bash", "/bin/bash"), ("guard", guard_bin("guard-shell"))):
        snap = world["base"] / f"created-{label}-{size}.sh"
        script = snapshots.creation_script(str(rc), str(snap), filter_functions=size != "large")
        proc = run(shell, ["-c", "-l", script], world, world["work"])
        out[label] = (proc.returncode, proc.stdout, proc.stderr, snap.read_bytes())
    assert out["guard"] == out["bash"]
    assert out["bash"][0] == 0
