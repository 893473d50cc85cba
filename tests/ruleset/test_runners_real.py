"""The catalogue's command runners (rules/programs/runners.yaml) against the real programs.

Each ``runs:`` example is run for real, with a stand-in ``git`` first on PATH that logs the
argv it gets: what the real program ran must be what the example says, and what guard's
resolver reads from the same command line. A program not installed here, or one that cannot
run its command in this sandbox (no privilege for a real-time policy, no such group), is
skipped with the reason; CI installs what Debian packages.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from guard.context import Context
from guard.engine import analyze

CATALOGUE = Path(__file__).resolve().parents[2] / "rules" / "programs" / "runners.yaml"
# Package runners: a command that is not installed is looked up as a package in a registry
# (npx git fetches the npm package "git"); only their shell-line forms (npx -c) run here.
FETCHERS = frozenset({"npx", "npm", "pnpm", "yarn", "bun", "bunx", "uvx", "pipx", "uv", "poetry", "conda"})


def _examples() -> list[tuple[str, str, str | None]]:
    out = []
    for spec in yaml.safe_load(CATALOGUE.read_text())["programs"]:
        names = spec["program"] if isinstance(spec["program"], list) else [spec["program"]]
        for ex in spec["runs"]["examples"]:
            out.append((names[0], ex["command"], ex["runs"]))
    return out


@pytest.mark.parametrize(("program", "command", "runs"), _examples(), ids=lambda x: str(x)[:40])
def test_the_real_program_runs_what_the_catalogue_says(program: str, command: str, runs: str | None,
                                                       tmp_path: Path) -> None:
    if not runs or not runs.startswith("git ") or "…" in runs:
        pytest.skip("runs nothing, or a command only known when it runs")
    if program in FETCHERS and not any(o in shlex.split(command) for o in ("-c", "--call")):
        pytest.skip(f"{program} would fetch a package named after the command from a registry")
    real = shutil.which(program)
    if real is None:
        pytest.skip(f"{program} is not installed here")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "argv.log"
    stand_in = bin_ / "git"
    stand_in.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(log))}\n')
    stand_in.chmod(0o755)
    (tmp_path / "x").mkdir()
    # the program by its path: `time` is also bash's keyword, `exec` its builtin
    ran = shlex.quote(real) + command[len(command.split(" ", 1)[0]):]
    proc = subprocess.run(["bash", "-c", ran.replace("/tmp/x", str(tmp_path / "x"))], cwd=tmp_path,
                          env={"PATH": f"{bin_}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    if not log.exists():
        pytest.skip(f"{program} could not run its command here: {proc.stderr.strip()[:200]}")
    assert log.read_text().splitlines() == shlex.split(runs)[1:], proc.stderr
    v = analyze(ran, Context(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"}))
    gits = [i.argv[1:] for i in v.invocations if i.program == "git"]
    assert gits == [tuple(shlex.split(runs)[1:])]
