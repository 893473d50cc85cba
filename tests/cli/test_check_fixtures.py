"""Every labelled fixture through the real CLI (`guard check --jsonl`), as an operator runs it."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO, guard_bin

FIXTURES = sorted((REPO / "fixtures" / "commands").glob("*.jsonl"))


PROJECTS = str(REPO / "fixtures" / "projects")


def _fill(value):
    """``{projects}`` in a fixture stands for the fixture projects folder."""
    if isinstance(value, str):
        return value.replace("{projects}", PROJECTS)
    if isinstance(value, dict):
        return {k: _fill(v) for k, v in value.items()}
    return value


def _run(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for tree in sorted({r.get("tree", "/workspace") for r in rows}):
        batch = [r for r in rows if r.get("tree", "/workspace") == tree]
        lines = "".join(
            json.dumps({"id": r["id"], "command": _fill(r["command"]), "cwd": _fill(r.get("cwd", "/workspace/app")),
                        "env": _fill({"HOME": "/root", **r.get("env", {})})}) + "\n"
            for r in batch
        )
        p = subprocess.run([guard_bin(), "check", "--jsonl", "--tree", _fill(tree)], input=lines,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr
        out.update({o["id"]: o for o in map(json.loads, p.stdout.splitlines())})
    return out


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_file(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    out = _run(rows)
    wrong = []
    for r in rows:
        o = out[r["id"]]
        good = o["verdict"] == r["expect"] and (r["expect"] == "allow" or o["category"] == r.get("category"))
        if not good:
            wrong.append(f"{r['id']} expected {r['expect']}/{r.get('category')} got {o['verdict']}/{o.get('category')} "
                         f"({o.get('rule')}): {r['command'][:100]!r}")
    assert not wrong, "\n".join(wrong)


def test_labelled_fixtures_cover_every_category_and_both_verdicts() -> None:
    rows = [json.loads(line) for p in FIXTURES for line in p.read_text(encoding="utf-8").split("\n") if line.strip()]
    counts = Counter((r["expect"], r.get("category")) for r in rows)
    assert len(rows) >= 400
    assert counts[("allow", None)] >= 150
    for cat in ("create", "mutate", "absent", "publish", "read-probe", "token-search"):
        assert counts[("refuse", cat)] >= 5, cat
