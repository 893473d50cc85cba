"""Every recorded stderr sample (fixtures/stderr/) replayed through ``guard annotate``.

The program a sample came from is stood in for by an executable of the same name that writes
the recorded bytes to stderr and fails; it is run with the recorded arguments under the real
``guard annotate`` launcher, so the annotator learns the program and its argv from the analysis
as it does in use. Required: stderr is the recorded bytes, byte for byte, followed by exactly
the expected annotation lines (none for a negative), and stdout stays empty.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.act.stderr_fixtures import TMP, Sample, samples

SAMPLES = samples()


def guard_launcher() -> list[str]:
    exe = Path(sys.executable).parent / "guard"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "guard.cli.main"]


@pytest.fixture(scope="module")
def replay_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    (root / "tree" / "proj").mkdir(parents=True)
    (root / "work").mkdir()
    return root


def fake_program(root: Path, sample: Sample) -> Path:
    bindir = root / "bin" / sample.name.replace("/", "_")
    bindir.mkdir(parents=True, exist_ok=True)
    data = bindir / "stderr.bin"
    data.write_bytes(sample.stderr())
    prog = bindir / sample.program
    prog.write_text(f'#!/bin/sh\ncat "{data}" >&2\nexit 1\n')
    prog.chmod(0o755)
    return prog


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_replay_through_guard_annotate(sample: Sample, replay_root: Path, tmp_path: Path) -> None:
    import subprocess

    prog = fake_program(replay_root, sample)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(sample.env, GUARD_TREE=str(replay_root / "tree"), GUARD_AUDIT_LOG=str(tmp_path / "audit.jsonl"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path), HOME=str(tmp_path))
    env.pop("GIT_TERMINAL_PROMPT", None)
    env.update(sample.env)
    cwd = replay_root / ("tree/proj" if sample.in_tree else "work")
    os.makedirs(TMP, exist_ok=True)
    argv = [str(prog), *sample.argv[1:]]
    r = subprocess.run([*guard_launcher(), "annotate", "--", *argv], env=env, cwd=cwd,
                       capture_output=True, timeout=120)
    body = sample.stderr()
    expected = body + b"".join(line.encode() + b"\n" for line in sample.expected_lines)
    assert r.returncode == 1
    assert r.stdout == b""
    assert r.stderr[: len(body)] == body, "the program's stderr was changed"
    assert r.stderr[len(body) :].decode(errors="replace").splitlines() == sample.expected_lines
    assert r.stderr == expected
