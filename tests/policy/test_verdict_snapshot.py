"""Reading argv from program specs changed no verdict: every labelled fixture gives the verdict,
category and rule recorded (in verdicts-before.jsonl) from the code that read git and gh in
Python, before the specs existed."""

from __future__ import annotations

import json
from pathlib import Path

from guard.context import Context
from guard.engine import analyze
from tests.conftest import REPO

SNAPSHOT = Path(__file__).with_name("verdicts-before.jsonl")
PROJECTS = str(REPO / "fixtures" / "projects")


def _fill(s: str) -> str:
    return s.replace("{projects}", PROJECTS)


def test_every_labelled_fixture_keeps_its_recorded_verdict_and_rule() -> None:
    before = {(r["file"], r["id"]): r for r in map(json.loads, SNAPSHOT.read_text(encoding="utf-8").splitlines())}
    compared = 0
    changed = []
    for path in sorted((REPO / "fixtures" / "commands").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            old = before.get((path.name, row["id"]))
            if old is None or old["command"] != row["command"]:
                continue  # a fixture added or edited since the snapshot: its own test judges it
            env = {"HOME": "/root", **{k: _fill(v) for k, v in row.get("env", {}).items()}}
            ctx = Context.from_environ(cwd=_fill(row.get("cwd", "/workspace/app")),
                                       trees=(_fill(row.get("tree", "/workspace")),), env=env)
            v = analyze(_fill(row["command"]), ctx)
            compared += 1
            if [v.verdict, v.category, v.rule] != [old["verdict"], old["category"], old["rule"]]:
                changed.append(f"{path.name}:{row['id']} {old['verdict']}/{old['category']}/{old['rule']} -> "
                               f"{v.verdict}/{v.category}/{v.rule}: {row['command'][:100]!r}")
    assert compared > 1000
    assert not changed, "\n".join(changed)
