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
# Issue 34: a catch-all's refusals are answered by the rule for what the invocation does (its
# pointer), never with another verdict or category; these are the only rule changes allowed.
REFINED = {
    "git-mutate": {"git-discard-files", "git-unstage", "git-branch-create", "git-branch-delete", "git-update",
                   "git-remote-update", "git-tag-write", "git-cherry-pick"},
    "git-absent": {"git-stash-save", "git-stash-restore", "git-reset-hard", "git-reset-files"},
    "git-log": {"git-file-history", "git-log-file"},
    "git-read-probe": {"git-grep"},
    "git-push": {"git-push-tag", "git-push-delete", "git-push-delete-refspec"},
}
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
            same_rule = v.rule == old["rule"] or (old["rule"] in REFINED and v.rule in REFINED[old["rule"]])
            if [v.verdict, v.category] != [old["verdict"], old["category"]] or not same_rule:
                changed.append(f"{path.name}:{row['id']} {old['verdict']}/{old['category']}/{old['rule']} -> "
                               f"{v.verdict}/{v.category}/{v.rule}: {row['command'][:100]!r}")
    assert compared > 1000
    assert not changed, "\n".join(changed)
