"""The labels of fixtures/commands/expansion.jsonl that depend on what bash runs, checked against
real bash: each fixture with ``runs`` is run by bash with a logging ``git`` stub first on PATH,
and the stub must have been run with those arguments. A fixture that names the interpreter it
``needs`` (lua, tclsh, expect, Rscript, julia, deno, bun) is skipped where that is not installed
(R and Julia: not installed by CI; Bun and Deno: from npm into .tools/runtimes)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

BASH = shutil.which("bash")
ROWS = [json.loads(x) for x in (REPO / "fixtures" / "commands" / "expansion.jsonl").read_text().splitlines() if x]
RUNS = [r for r in ROWS if r.get("runs")]
# Bun and Deno come from their npm packages (.ci/run installs them here); the rest from the system.
RUNTIMES = REPO / ".tools" / "runtimes" / "node_modules" / ".bin"


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("row", RUNS, ids=[r["id"] for r in RUNS])
def test_bash_really_runs_what_the_label_says(row: dict, tmp_path: Path) -> None:
    path = f"/usr/bin:/bin:{RUNTIMES}"
    found = shutil.which(row["needs"], path=path) if row.get("needs") else None
    if row.get("needs") and found is None:
        pytest.skip(f"{row['needs']} is not installed: the label is checked where it is")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "log"
    stub = stubs / "git"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "git $*" >> {log}\n')
    stub.chmod(0o755)
    work = tmp_path / "ws" / "app"
    work.mkdir(parents=True)
    env = {"PATH": f"{stubs}:{path}", "HOME": str(tmp_path), "LC_ALL": "C", "DENO_NO_UPDATE_CHECK": "1"}
    subprocess.run([BASH, "--norc", "--noprofile", "-c", row["command"]], cwd=work, env=env, timeout=60,
                   stdin=subprocess.DEVNULL, capture_output=True)
    ran = log.read_text().splitlines() if log.exists() else []
    assert row["runs"] in ran, (row["command"], ran)


def test_every_family_has_a_must_allow_neighbour() -> None:
    families = {r["family"] for r in ROWS}
    for fam in families:
        verdicts = {r["expect"] for r in ROWS if r["family"] == fam}
        assert verdicts == {"allow", "refuse"}, fam
