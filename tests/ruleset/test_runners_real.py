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
import tempfile
from collections.abc import Iterator
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


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A scratch folder every user can enter: a program that changes its root or its user
    (chroot --userspec) must still reach the stand-in, which pytest's private tmp_path hides."""
    d = Path(tempfile.mkdtemp(prefix="guard-runners-"))
    d.chmod(0o1777)  # the stand-in may run as another user and write its log here
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize(("program", "command", "runs"), _examples(), ids=lambda x: str(x)[:40])
def test_the_real_program_runs_what_the_catalogue_says(program: str, command: str, runs: str | None,
                                                       open_dir: Path) -> None:
    if not runs or not runs.startswith("git ") or "…" in runs:
        pytest.skip("runs nothing, or a command only known when it runs")
    if program in FETCHERS and not any(o in shlex.split(command) for o in ("-c", "--call")):
        pytest.skip(f"{program} would fetch a package named after the command from a registry")
    real = shutil.which(program)
    if real is None:
        pytest.skip(f"{program} is not installed here")
    tmp_path = open_dir
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "argv.log"
    stand_in = bin_ / "git"
    stand_in.write_text(f'#!/bin/sh\n{{ pwd; printf "%s\\n" "$@"; }} > {shlex.quote(str(log))}\n')
    stand_in.chmod(0o755)
    (tmp_path / "x").mkdir()
    # the program by its path: `time` is also bash's keyword, `exec` its builtin
    ran = (shlex.quote(real) + command[len(command.split(" ", 1)[0]):]).replace("/tmp/x", str(tmp_path / "x"))
    (tmp_path / "x" / "f").write_text("")
    # on stdin, the names of files to watch (entr); -z in its examples makes it exit after one run
    proc = subprocess.run(["bash", "-c", ran], cwd=tmp_path, input=f"{tmp_path}/x/f\n",
                          env={"PATH": f"{bin_}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    if not log.exists():
        pytest.skip(f"{program} could not run its command here: {proc.stderr.strip()[:200]}")
    cwd, *argv = log.read_text().splitlines()
    assert argv == shlex.split(runs)[1:], proc.stderr
    # guard reads the same command line: the same argv, in the folder it really ran in
    v = analyze(ran, Context(cwd=str(tmp_path), trees=("/workspace",), env={"HOME": "/root"}))
    gits = [(i.argv[1:], i.cwd) for i in v.invocations if i.program == "git"]
    assert gits == [(tuple(argv), cwd)]
