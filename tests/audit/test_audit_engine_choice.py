"""Which engine reads the logs: DuckDB when installed, never on the command path; without it,
small logs still work and large ones say how to install it. And ``--sql``: the queries printed
are the ones the report runs, so they give the same figures over a warehouse table."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from audit_records import record, write_jsonl

from guard.audit.reports import report

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "fixtures" / "audit" / "fleet.jsonl"


def needs_duckdb() -> None:
    pytest.importorskip("duckdb", reason="DuckDB is not installed (pip install 'guard[audit]')")


def test_the_command_path_never_loads_duckdb(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    code = (
        "import sys, os\n"
        "from guard.context import Context\n"
        "from guard.engine import analyze\n"
        "from guard import record\nfrom guard.shell import main\nfrom guard.cli import check\n"
        "ctx = Context.from_environ()\n"
        "for c in ('git push origin main', 'ls -la', 'bash -c \"git commit -am x\"'):\n"
        "    analyze(c, ctx)\n"
        "from guard.audit.log import append_record, build_record\n"
        "append_record(build_record('refusal', 'git push', cwd='/', env=os.environ, verdict='refuse',"
        " category='publish', rule='git-push', tool='git_push', via=[]), os.environ)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('duckdb', '_duckdb')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GUARD_AUDIT_LOG": str(log)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert log.read_text().count("\n") == 1


def test_without_duckdb_small_logs_work_and_large_ones_name_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setattr(report, "_has_duckdb", lambda: False)
    log = write_jsonl(tmp_path / "a.jsonl", [record(i * 60.0) for i in range(50)])
    assert report.main([str(log), "--json"]) == 0
    assert json.loads(capsysbinary.readouterr().out)["summary"]["records"] == 50

    monkeypatch.setattr(report, "PYTHON_MAX_BYTES", log.stat().st_size - 1)
    assert report.main([str(log)]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b""
    assert err.decode().splitlines() == [
        "guard audit: 1 MB of logs needs the DuckDB engine: pip install 'guard[audit]'"
        " (or --engine python, which holds every record in memory)"
    ]
    assert report.main([str(log), "--engine", "python", "--json"]) == 0  # asked for: it waits
    assert json.loads(capsysbinary.readouterr().out)["summary"]["records"] == 50
    assert report.main([str(log), "--engine", "duckdb"]) == 2
    assert (
        b"--engine duckdb: DuckDB is not installed: pip install 'guard[audit]'"
        in capsysbinary.readouterr().err
    )

    # Standard input has no size to look at: it is counted as it is read.
    sys.stdin = io.TextIOWrapper(io.BytesIO(log.read_bytes()))
    try:
        assert report.main(["-"]) == 2
    finally:
        sys.stdin = sys.__stdin__
    assert (
        b"guard audit: standard input: more than 1 MB of logs needs the DuckDB engine"
        in capsysbinary.readouterr().err
    )


def test_auto_uses_duckdb_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    needs_duckdb()
    seen = []
    from guard.audit.reports import duck

    real = duck.DuckEngine.__init__

    def spy(self, *a, **k):  # type: ignore[no-untyped-def]
        seen.append(True)
        real(self, *a, **k)

    monkeypatch.setattr(duck.DuckEngine, "__init__", spy)
    monkeypatch.delenv("GUARD_AUDIT_ENGINE", raising=False)
    assert report.main([str(FLEET), "--json"]) == 0
    assert seen == [True]


def test_sql_runs_where_the_logs_live(capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path) -> None:
    """Load the fixture into a table of the printed schema in a DuckDB of its own, run the
    printed statements one by one, and get the report's figures."""
    needs_duckdb()
    import duckdb

    rules = tmp_path / "rules.txt"
    rules.write_text("git-push\ngit-mutate\n")
    argv = [str(FLEET), "--agent", "claude-*", "--window", "5", "--top", "4", "--rules-list", str(rules)]
    assert report.main([*argv, "--json", "--engine", "python"]) == 0
    expected = json.loads(capsysbinary.readouterr().out)
    assert report.main([*argv, "--sql"]) == 0
    sql = capsysbinary.readouterr().out.decode()
    assert "CREATE TABLE guard_audit (" in sql and "$top" not in sql and "$window_s" not in sql

    con = duckdb.connect()
    statements = [s.strip() for s in sql.split(";") if s.strip() and not _comment_only(s)]
    con.execute(statements[0])  # the table
    con.execute(
        "INSERT INTO guard_audit BY NAME SELECT * FROM read_json(?, format = 'newline_delimited', columns = ?)",
        [str(FLEET), {r[0]: r[1] for r in con.execute("DESCRIBE guard_audit").fetchall()}],
    )
    results = [con.execute(s).fetchall() for s in statements[1:]]
    summary, rules_top, categories, commands, retries, fired, per_day = results[-7:]
    s = expected["summary"]
    assert summary == [(s["records"], s["refusals"], s["first"], s["last"], s["agents"], s["threads"])]
    assert [{"key": k, "count": c} for k, c in rules_top] == expected["top"]["rule"]
    assert [{"key": k, "count": c} for k, c in categories] == expected["top"]["category"]
    assert sum(c for _, c in commands) == s["refusals"]
    r = expected["retries"]
    assert [(t[0], t[1], t[2], t[3], t[5], t[6], t[7]) for t in retries] == [
        (t["agent"], t["thread"], t["refusals"], t["runs"], t["wasted"], t["longest"], t["top_category"])
        for t in r["threads"]
    ]
    assert sum(t[5] for t in retries) == r["wasted"] and sum(t[4] for t in retries) == r["runs_with_retries"]
    assert sorted({"git-push", "git-mutate"} - {x for (x,) in fired}) == expected["never_fired"]["rules"]
    assert [(d, a, b) for d, a, b in per_day if a or b] == [
        (d, x["refusals"], x["annotations"])
        for d, x in zip(_days(expected), expected["per_day"], strict=True)
        if x["refusals"] or x["annotations"]
    ]


def _days(data: dict) -> list[int]:
    from datetime import date

    return [(date.fromisoformat(x["day"]) - date(1970, 1, 1)).days for x in data["per_day"]]


def _comment_only(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def test_sql_needs_no_log_and_shows_the_filters(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert (
        report.main(["--sql", "--since", "2026-03-03", "--rule", "git-*", "--rule", "gh-?r", "/nonexistent"])
        == 0
    )
    sql = capsysbinary.readouterr().out.decode()
    assert (
        "CREATE VIEW kept AS SELECT * FROM records WHERE coalesce(kind, '') <> 'trial'"
        " AND t >= epoch(TIMESTAMPTZ '2026-03-03T00:00:00.000000+00:00')"
        " AND (coalesce(rule, '') GLOB 'git-*' OR coalesce(rule, '') GLOB 'gh-?r');"
    ) in sql
    assert report.main(["--sql", "--agent", "o'brien"]) == 0
    assert "GLOB 'o''brien'" in capsysbinary.readouterr().out.decode()
