"""``guard rules diff``: an upgraded rule set replayed on a corpus names exactly the commands whose
verdict, category or tool it changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "fixtures" / "audit" / "fleet.jsonl"
LABELLED = REPO / "fixtures" / "commands" / "labelled.jsonl"
EXTRA_RULE = """\
rules:
  - id: no-pytest-here
    category: mutate
    message: "Refused: {what}. Tests run in CI."
    match: {program: pytest}
    examples:
      refuse: ["pytest -q"]
"""


def guard(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guard.cli.main", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        input=stdin,
        timeout=300,
    )


@pytest.fixture(scope="module")
def upgrade(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Today's rules/ as ``old``; ``new``: the same tree with git-push pointing to another tool,
    plus a file adding a rule that refuses pytest."""
    root = tmp_path_factory.mktemp("rules")
    old, new = root / "old", root / "new"
    shutil.copytree(REPO / "rules", old)
    shutil.copytree(REPO / "rules", new)
    publish = new / "commands" / "publish.yaml"
    text = publish.read_text()
    marker = "  - id: git-push\n    category: publish\n    tool: git_push\n"
    assert marker in text
    publish.write_text(text.replace(marker, marker.replace("tool: git_push", "tool: git_commit")))
    extra = root / "extra.yaml"
    extra.write_text(EXTRA_RULE)
    sample = root / "sample.jsonl"
    envelope = {"timestamp": "2026-03-02T10:00:00Z", "message": json.dumps(
        {"id": "x1", "ts": "2026-03-02T10:00:00.000Z", "kind": "refusal", "verdict": "refuse",
         "command": "pytest tests/ -x", "cwd": "/workspace/svc"})}  # fmt: skip
    sample.write_text(
        "\n".join([
            json.dumps({"command": "pytest -q", "cwd": "/workspace/app"}),
            json.dumps({"command": "pytest -q", "cwd": "/workspace/app"}),  # twice: counted twice
            json.dumps({"command": "python -m pytest"}),  # not the program pytest: unchanged
            json.dumps(envelope),
            json.dumps({"command": "ls -la"}),
            "not json",
        ]) + "\n"
    )  # fmt: skip
    return {"old": old, "new": new, "extra": extra, "sample": sample}


def old_verdicts(corpus: list[Path]) -> dict[tuple[str, str], dict]:
    """What today's rules say of each command, asked of the engine as guard check asks it."""
    cases = []
    for path in corpus:
        for line in path.read_text().splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if "message" in obj and "command" not in obj:
                obj = json.loads(obj["message"])
            if isinstance(obj.get("command"), str):
                role = {"GUARD_ROLE": obj["role"]} if obj.get("role") else {}
                env = {"HOME": "/root", **obj.get("env", {}), **role}
                cases.append(
                    (obj["command"], obj.get("cwd") or "/workspace/app", json.dumps([env, obj.get("tree")]))
                )
    from guard.context import Context
    from guard.engine import analyze

    out = {}
    for c, cwd, extra in sorted(set(cases)):
        env, tree = json.loads(extra)
        ctx = Context.from_environ(cwd=cwd, env=env, trees=(tree,) if tree else None)
        v = analyze(c, ctx)
        programs = {inv.program for inv in v.invocations}
        seen = sum(1 for x in cases if x[:2] == (c, cwd))
        out[(c, cwd)] = {
            "verdict": v.verdict,
            "rule": v.rule,
            "tool": v.tool,
            "programs": programs,
            "seen": seen,
        }
    return out


def test_upgrade_names_exactly_the_commands_it_changes(upgrade: dict[str, Path]) -> None:
    corpus = [FLEET, LABELLED, upgrade["sample"]]
    proc = guard(
        "rules", "diff", "--old", str(upgrade["old"]), "--new", str(upgrade["new"]), str(upgrade["extra"]),
        "--commands", *map(str, corpus), "--json",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # something changes
    data = json.loads(proc.stdout)
    before = old_verdicts(corpus)
    pushes = {k for k, v in before.items() if v["rule"] == "git-push"}
    pytests = {k for k, v in before.items() if v["verdict"] == "allow" and "pytest" in v["programs"]}
    assert {("pytest -q", "/workspace/app"), ("pytest tests/ -x", "/workspace/svc")} <= pytests
    assert ("python -m pytest", "/workspace/app") not in pytests

    groups = {g["rule"]: g for g in data["by_rule"]}
    assert set(groups) == {"git-push", "no-pytest-here"}
    push = groups["git-push"]
    assert {(c["command"], c["cwd"]) for c in push["changes"]} == pushes
    assert all(c["old"]["tool"] == "git_push" and c["new"]["tool"] == "git_commit" for c in push["changes"])
    assert {c["kind"] for c in push["changes"]} == {"category or tool changed"}
    new_rule = groups["no-pytest-here"]
    assert {(c["command"], c["cwd"]) for c in new_rule["changes"]} == pytests
    assert {c["kind"] for c in new_rule["changes"]} == {"newly refused"}
    assert {(c["command"], c["cwd"]): c["count"] for c in new_rule["changes"]} == {
        k: before[k]["seen"] for k in pytests
    }
    assert before[("pytest -q", "/workspace/app")]["seen"] >= 2  # twice in the sample, counted twice
    assert data["newly_refused"] == len(pytests) and data["no_longer_refused"] == 0
    assert data["changed"] == len(pushes) + len(pytests) and data["skipped_lines"] == 1

    # The same upgrade, backwards: what stops being refused.
    back = guard("rules", "diff", "--old", str(upgrade["new"]), str(upgrade["extra"]), "--new", str(upgrade["old"]),
                 "--commands", str(upgrade["sample"]), "--json")  # fmt: skip
    assert json.loads(back.stdout)["no_longer_refused"] == 2


def test_text_report_and_no_change(upgrade: dict[str, Path]) -> None:
    proc = guard("rules", "diff", "--new", str(upgrade["extra"]), "--commands", str(upgrade["sample"]))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "guard rules diff: 4 commands (5 occurrences) replayed; 2 change: 2 newly refused, 0 no longer"
        " refused, 0 with another category or tool"
    )
    assert "no-pytest-here: 2 commands, 3 occurrences" in lines
    assert "       2  pytest -q" in lines
    same = guard("rules", "diff", "--old", str(upgrade["old"]), "--new", str(upgrade["old"]),
                 "--commands", str(FLEET))  # fmt: skip
    assert same.returncode == 0 and " 0 change" in same.stdout


def test_bad_input_is_one_line(upgrade: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules:\n  - id: x\n    category: nonsense\n    match: {program: ls}\n")
    for argv, start in (
        (["--new", str(tmp_path / "missing"), "--commands", str(FLEET)], "guard rules diff: "),
        (["--new", str(broken), "--commands", str(FLEET)], "guard rules diff: "),
        (["--new", str(upgrade["extra"])], "guard rules diff: --commands FILE… is needed"),
        (
            ["--new", str(upgrade["extra"]), "--commands", str(tmp_path / "nope.jsonl")],
            "guard rules diff: cannot read",
        ),
    ):
        proc = guard("rules", "diff", *argv)
        assert proc.returncode == 2 and proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(start), proc.stderr
