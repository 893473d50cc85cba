"""The fleet fixture (fixtures/audit/fleet.jsonl, made by make_fleet.py through the real engine)
reads cleanly and gives a report with something in every section."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from audit_records import FORBIDDEN

from guard.audit.reports import report

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "fixtures" / "audit" / "fleet.jsonl"


@pytest.fixture(scope="module")
def fleet() -> list[dict]:
    if not FLEET.exists():
        pytest.skip("fixtures/audit/fleet.jsonl not generated (fixtures/audit/make_fleet.py)")
    return [json.loads(line) for line in FLEET.read_text().splitlines()]


def test_fixture_is_a_multi_agent_multi_day_log(fleet: list[dict]) -> None:
    assert len({r["id"] for r in fleet}) == len(fleet)
    assert [(r["ts"], r["id"]) for r in fleet] == sorted((r["ts"], r["id"]) for r in fleet)
    assert len({r["agent"] for r in fleet}) >= 4
    assert len({(r["agent"], r["thread"]) for r in fleet}) >= 6
    assert len({r["ts"][:10] for r in fleet}) >= 5
    refusals = [r for r in fleet if r["verdict"] == "refuse"]
    assert len(refusals) >= 40, "the engine refused too little: regenerate once it works"
    assert all(r["rule"] and r["category"] for r in refusals)
    assert {r["kind"] for r in fleet} == {"refusal", "annotation"}


def test_secrets_typed_by_agents_were_redacted_on_the_way_in(fleet: list[dict]) -> None:
    text = FLEET.read_text()
    for secret in ("R4nd0mT0k3nV4lu3", "hunter2pass"):
        assert secret not in text
    assert "ghp_[REDACTED]" in text


def test_report_from_the_fixture(
    fleet: list[dict], capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    rules = tmp_path / "rules.txt"
    fired = sorted({r["rule"] for r in fleet if r["rule"]})
    rules.write_text("\n".join([*fired, "never-used-rule"]) + "\n")
    assert report.main([str(FLEET), "--json", "--rules-list", str(rules)]) == 0
    data = json.loads(capsysbinary.readouterr().out)
    assert data["summary"]["malformed"] == 0 and data["summary"]["records"] == len(fleet)
    assert data["top"]["rule"] and data["top"]["category"] and data["top"]["command"]
    assert data["retries"]["wasted"] > 0
    assert data["never_fired"]["rules"] == ["never-used-rule"]
    assert len(data["per_day"]) == 7


def test_fixture_report_is_inert_on_a_terminal(fleet: list[dict]) -> None:
    assert any("\x1b" in r["command"] for r in fleet), "the fixture carries one hostile command"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from guard.audit.reports.report import main; sys.exit(main(sys.argv[1:]))",
            str(FLEET),
        ],
        capture_output=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0
    assert FORBIDDEN.search(proc.stdout) is None and FORBIDDEN.search(proc.stderr) is None
