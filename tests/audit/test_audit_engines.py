"""Both engines give today's report byte for byte.

``golden/`` holds what ``guard audit`` printed before the DuckDB engine existed (the commit that
added it ran the previous code to write them), for the fleet fixture and for a messy log folder
made from it: collector envelopes (Vector, Fluent Bit, OTLP), CRLF and padded lines, duplicate
copies in other files and in gzip, times with an offset and without one, a bad time, malformed
and torn lines, a number where a name belongs, terminal escapes and a lone surrogate, bytes that
are not UTF-8.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path("tests/audit/golden")
FLEET = Path("fixtures/audit/fleet.jsonl")
RULES = ["--rules-list", str(GOLDEN / "rules.txt")]

CASES = [
    ("fleet.txt", [str(FLEET), *RULES]),
    ("fleet.json", [str(FLEET), *RULES, "--json"]),
    ("fleet.csv", [str(FLEET), "--csv"]),
    ("fleet.records.jsonl", [str(FLEET), "--records"]),
    (
        "fleet-agent.txt",
        [str(FLEET), *RULES, "--agent", "claude-*", "--since", "2026-03-03", "--until", "2026-03-06"],
    ),
    ("fleet-window.json", [str(FLEET), *RULES, "--window", "0.5", "--top", "3", "--json"]),
    ("fleet-refuse-git.txt", [str(FLEET), *RULES, "--rule", "git-*", "--kind", "refusal", "--top", "25"]),
    ("messy.txt", [str(GOLDEN / "messy"), *RULES]),
    ("messy.json", [str(GOLDEN / "messy"), *RULES, "--json"]),
    ("messy.csv", [str(GOLDEN / "messy"), "--csv"]),
    ("messy.records.jsonl", [str(GOLDEN / "messy"), "--records"]),
]


def engines() -> list[str]:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return ["python"]
    return ["python", "duckdb"]


def audit(engine: str, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "guard.cli", "audit", "--engine", engine, *argv],
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.parametrize("engine", ["python", "duckdb"])
@pytest.mark.parametrize(("golden", "argv"), CASES, ids=[c[0] for c in CASES])
def test_same_report_as_before(engine: str, golden: str, argv: list[str]) -> None:
    if engine not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    proc = audit(engine, argv)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == (REPO / GOLDEN / golden).read_bytes()
    expected_err = (REPO / GOLDEN / "messy.err").read_bytes() if golden.startswith("messy") else b""
    assert proc.stderr == expected_err


def test_large_inputs_are_read_in_pieces_with_their_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A big file, a gzip file and standard input are each cut into pieces DuckDB reads whole;
    line numbers, copies and torn lines come out as the Python engine gives them."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import gzip
    import io

    from audit_records import record

    from guard.audit import duck, report

    monkeypatch.setattr(duck, "PIECE", 2000)
    lines = [json.dumps(record(i * 7.0, id=f"r{i:04d}", agent=f"a{i % 3}")) for i in range(300)]
    lines[150] = '{"id": "torn", "ts": "2026-01-0'
    text = "\n".join(lines) + "\n" + lines[10] + "\n" + lines[20][:30]  # a copy, then a torn last line
    (tmp_path / "big.jsonl").write_text(text)
    with gzip.open(tmp_path / "big.jsonl.gz", "wt") as f:
        f.write(text[: len(text) // 2])
    stdin = text.encode()
    outputs = {}
    for engine in ("python", "duckdb"):
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        try:
            assert report.main([str(tmp_path / "big.jsonl"), "-", str(tmp_path / "big.jsonl.gz"),
                                "--json", "--engine", engine]) == 0  # fmt: skip
        finally:
            sys.stdin = sys.__stdin__
        outputs[engine] = capsysbinary.readouterr()
    assert outputs["duckdb"] == outputs["python"]
    data = json.loads(outputs["duckdb"].out)
    assert data["summary"]["records"] == 299 and data["summary"]["malformed"] >= 3
    assert outputs["duckdb"].err.decode().endswith("(first at " + str(tmp_path / "big.jsonl") + ":151)\n")


def test_lines_sql_reads_and_lines_it_leaves_to_python(tmp_path: Path) -> None:
    """Lines near the edge of what the SQL reader takes (escapes in values and in keys, lone
    surrogates, NUL, trailing commas, numbers and objects where a name belongs, nested objects
    with our field names, spaces around colons, CRLF): the same report, records and CSV."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    base = '"verdict":"refuse","kind":"refusal","category":"publish","agent":"a","thread":"t"'
    lines = [
        '{"id":"e01","ts":"TS",BASE,"rule":"git-push","command":"echo \\u001b[31mred \\u00e9"}',
        '{"id":"e02","ts":"TS",BASE,"rule":"git-push","command":"x \\ud800 y"}',
        '{"id":"e03","ts":"TS",BASE,"rule":"git-push","command":"nul \\u0000 here"}',
        '{"id":"e04","ts":"TS",BASE,"r\\u0075le":"escaped-key"}',
        '{"id":"e05","ts":"TS",BASE,"rule":"git-push",}',
        '{"id":"e06","ts":"TS",BASE,"rule":5}',
        '{"id":"e07","ts":"TS",BASE,"rule" : {"a": 1}}',
        '{"id":"e08","ts":"TS",BASE,"x":{"rule":"inner"},"rule":7}',
        '{"id":"e09","ts":"TS",BASE,"rule" :  "spaced"}\r',
        '{"id":"e10","ts":"TS",BASE,"rule":"q\\"uote","command":"say \\"hi\\""}',
        '{"id":"e11","ts":"TS","verdict":"refuse","rule":null,"agent":"","thread":"t"}',
        '{"id":"e12","ts":"TS","kind":"refusal","verdict":true,"rule":"r"}',
        '{"id":"e13","ts":"2026-03-02T10:00:13Z",BASE,"rule":"other-time"}',
        '{"id":"e14","ts":"TS",BASE,"rule":"git-push","x":[1,]}',
        '{"id":"e15","ts":"TS",BASE,"rule":"git-push","x":NaN}',
    ]
    lines = [
        line.replace("TS", f"2026-03-02T10:00:{n:02d}.000Z").replace("BASE", base) for n, line in enumerate(lines, 1)
    ]
    (tmp_path / "edge.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    for extra in ([], ["--json"], ["--records"], ["--csv"]):
        got = {e: audit(e, [str(tmp_path / "edge.jsonl"), *RULES, *extra]) for e in engines()}
        assert got["duckdb"].returncode == got["python"].returncode == 0, got["duckdb"].stderr
        assert got["duckdb"].stdout == got["python"].stdout, extra
        assert got["duckdb"].stderr == got["python"].stderr, extra
    data = json.loads(audit("duckdb", [str(tmp_path / "edge.jsonl"), "--json"]).stdout)
    assert data["summary"]["records"] == 13 and data["summary"]["malformed"] == 2  # e05 and e14
