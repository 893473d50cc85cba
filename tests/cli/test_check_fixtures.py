"""Every labelled fixture through the real CLI (`guard check --jsonl`), as an operator runs it."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO, guard_bin

FIXTURES = sorted((REPO / "fixtures" / "commands").glob("*.jsonl"))


def _run(rows: list[dict]) -> dict[str, dict]:
    lines = "".join(
        json.dumps({"id": r["id"], "command": r["command"], "cwd": r.get("cwd", "/workspace/app"),
                    "env": {"HOME": "/root", **r.get("env", {})}}) + "\n"
        for r in rows
    )
    p = subprocess.run([guard_bin(), "check", "--jsonl", "--tree", "/workspace"], input=lines,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    return {o["id"]: o for o in map(json.loads, p.stdout.splitlines())}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_file(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
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
    rows = [json.loads(line) for p in FIXTURES for line in p.read_text().splitlines() if line.strip()]
    counts = Counter((r["expect"], r.get("category")) for r in rows)
    assert len(rows) >= 400
    assert counts[("allow", None)] >= 150
    for cat in ("create", "mutate", "absent", "publish", "read-probe", "token-search"):
        assert counts[("refuse", cat)] >= 5, cat
