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
        [sys.executable, "-m", "guard.cli.main", "audit", "--engine", engine, *argv],
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

    from guard.audit.reports import duck, report
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


# Lines on the edge of what DuckDB's JSON functions take as Python's does: each is read in SQL,
# marked for Python (duck._MARKS), or left whole by SQL, and the report is the same.
FAST_EDGE = [
    '{"id":"f01","ts":"TS",BASE,"rule":"plain"}',
    '{"id":"f02","ts":"TS",BASE,"rule":"git-push",}',  # a trailing comma: malformed to Python
    '{"id":"f03","ts":"TS",BASE,"rule":"git-push","x":[1 , ]}',
    '{"id":"f04","ts":"TS",BASE,"rule":5}',  # a number where a name belongs
    '{"id":"f05","ts":"TS",BASE,"rule":true}',
    '{"id":"f06","ts":"TS",BASE,"rule":{"a":1}}',
    '{"id":"f07","ts":"TS",BASE,"rule":[1,2]}',
    '{"id":"f08","ts":"TS",BASE,"rule":"first","rule":"last"}',  # Python keeps the last
    '{"id":"f09","ts":"TS",BASE,"r\\u0075le":"escaped","rule":"plain"}',
    '{"id":"f10","ts":"TS",BASE,"x":nan}',  # DuckDB reads nan, Python does not
    '{"id":"f11","ts":"TS",BASE,"x":-Inf}',
    '{"id":"f12","ts":"TS",BASE,"x":NaN,"y":-Infinity}',  # both read these
    '{"id":"f13","ts":"TS",BASE,"x":1e999}',
    '{"id":"f14","ts":"TS",BASE,"command":"nul \\u0000 here"}',
    '{"id":"f15","ts":"TS",BASE,"command":"lone \\ud800 surrogate"}',
    '{"id":"f16","ts":"TS",BASE,"command":"pair \\ud83d\\ude00 ok"}',
    '{"id":"f17","ts":"TS",BASE}{"id":"f18","ts":"TS",BASE}',  # two objects on a line
    '[{"id":"f19","ts":"TS",BASE},{"id":"f20","ts":"TS",BASE}]',  # a batch
    '"a string"',
    "5",
    '{"id":21,"ts":"TS",BASE}',  # an id that is a number
    '{"id":"f22","ts":20260302,BASE}',  # a time that is a number (Python would read "20260302")
    '{"id":"f23","ts":"TS","verdict":null,"rule":"null-verdict"}',
    '{"id":"f24","ts":"TS","kind":"refusal","verdict":false,"rule":"false-verdict"}',
    '{"id":"f25","ts":"TS","category":"publish","rule":"no-verdict-nor-kind"}',
    '{"ID":"f26","ts":"TS",BASE}',
    '{"id":"f27","ts":"TS",BASE,"rule":"tab\tinside"}',  # a raw tab in a string: malformed
    '{"id":"f28","ts":"TS",BASE,"rule":"cr"}\r',
    '  {"id":"f29","ts":"TS",BASE,"rule":"padded"}  ',
    'prefix {"id":"f30","ts":"TS",BASE,"rule":"prefixed"}',
    '{"id":"f31","ts":"2026-03-02T10:00:31Z",BASE,"rule":"other-time"}',
    '{"id":"f32","ts":"not a time",BASE}',
    '{"id":"f33","ts":"TS",BASE,"agent":"","thread":"","category":""}',
    '{"id":"f34","ts":"TS",BASE,"agent":7,"thread":true,"category":null}',
    '{"id":"f35","ts":"TS",BASE,"x":{"rule":"nested"},"rule":"top"}',
    '{"id":"f36","ts":"TS",BASE,"rule" : "spaced" , "command" :"c"}',
    '{"id":"f37","ts":"TS",BASE,"command":"say \\"rule\\": 5, [1,]"}',  # the marks' text, quoted
    '{"id":"f38","ts":"TS",BASE,"command":"' + "x" * 100_000 + '"}',  # a long line
    '\ufeff{"id":"f39","ts":"TS",BASE}',
    '{"id":"f40","ts":"TS",BASE,"command":"\\u001b[31mred\\u001b[0m \\u00e9"}',
    '{"timestamp":"TS","message":"{\\"id\\":\\"f41\\",\\"ts\\":\\"TS\\",\\"verdict\\":\\"refuse\\"}"}',
    '{"id":"f42","ts":"TS",BASE,"x":{"rule":5},"rule":"top"}',  # marked for a nested field: Python reads it
    '{"id":"f01","ts":"TS",BASE,"rule":"a copy"}',  # a later copy of f01
    '{"id": "torn", "ts": "2026-03-0',
]


def _edge_lines(lines: list[str]) -> list[str]:
    base = '"verdict":"refuse","kind":"refusal","category":"publish","agent":"a","thread":"t"'
    return [
        line.replace("TS", f"2026-03-02T10:00:{n % 60:02d}.000Z").replace("BASE", base)
        for n, line in enumerate(lines, 1)
    ]


def test_edge_lines_give_the_python_engines_report(tmp_path: Path) -> None:
    """Every kind of line next to the edge of what DuckDB's JSON functions take: the report, its
    JSON and its warnings are the Python engine's, and the lines DuckDB reads as Python does
    were read in SQL (not all sent to Python)."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import gzip
    import io

    from guard.audit.reports import duck

    lines = _edge_lines(FAST_EDGE)
    text = "\n".join(lines) + "\n"
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(text, encoding="utf-8", errors="surrogatepass")
    (logs / "b.jsonl").write_text(text[: len(text) // 3], encoding="utf-8", errors="surrogatepass")  # torn copy
    with gzip.open(logs / "c.jsonl.gz", "wb") as f:
        f.write(text.encode("utf-8", "surrogatepass"))
    (logs / "d.log").write_bytes(b'{"id":"d1","ts":"2026-03-02T11:00:00.000Z","verdict":"refuse","rule":"\xff"}\n')
    for extra in ([], ["--json"], ["--top", "50"]):
        got = {e: audit(e, [str(logs), *RULES, *extra]) for e in engines()}
        assert got["duckdb"].returncode == got["python"].returncode == 0, got["duckdb"].stderr
        assert got["duckdb"].stdout == got["python"].stdout, extra
        assert got["duckdb"].stderr == got["python"].stderr, extra
    a = str(logs / "a.jsonl")
    with duck.DuckEngine([a], io.BytesIO()) as engine:
        in_sql = {r[0] for r in engine.con.execute(SQL_READ).fetchall()}
        to_python = {r[0] for r in engine.con.execute("SELECT lineno FROM parsed WHERE odd IS NOT NULL").fetchall()}
    assert in_sql == {"f01", "f13", "f28", "f31", "f32", "f36", "f38", "f40"}
    assert {2, 3, 4, 5, 8, 9, 10, 11, 12, 14, 15, 17, 18, 21, 22, 24, 29, 33, 34, 37, 41, 42, 44} <= to_python
    assert not in_sql & {f"f{n:02d}" for n in to_python}


# The records SQL read from their lines (the Python reader's have pos 1, 2, …).
SQL_READ = "SELECT id FROM parsed WHERE odd IS NULL AND pos = 0"


def test_marked_lines_are_found_with_their_numbers_and_text(tmp_path: Path) -> None:
    """_MARKS finds each line where DuckDB's JSON reading and Python's part ways, once a line
    however often it matches, with its number and its text as SQL holds it (no CR)."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    from guard.audit.reports import duck

    lines = [
        b'{"id":"a","x":[1,]}',  # 1: trailing comma
        b'{"id":"b","rule":"r"}',
        b'{"id":"c","x":nan,"y":[2 , ],"id":"c2"}\r',  # 3: three marks, CR
        b"",
        b'{"id":"d","x":-INF}',  # 5
        b'{"id":"e","command":"say \\u0000"}',  # 6: a NUL escape
        b'{"id":"f","command":"\\ud83d\\ude00"}',  # 7: a surrogate escape
        b'{"i\\u0064":"g"}',  # 8: an escape in a key
        b'{"id":"h","command":"git commit -m \\u00e9"}',  # an escape in a value
        b'{"id":"i","note":"info nanny","n":5}',  # nan and inf, in words
        b'{"rule" : "x", "id":"j", "rule":"y"}',  # 11: a key of ours twice, spaced
        b'{"ruler":"x","rule":"y"}',
        b'{"id":"l","rule" : 5}',  # 13: a field of ours that is a number
        b'{"id":7,"ts":"x"}',  # 14: an id that is not a string
        b'{"id":"m","verdict":true}',  # 15
        b'{"id":"n","agent":{"a":"b"}}',  # 16: an object
        b'{"id":"o","thread":\t[1]}',  # 17: an array
        b'{"id":"p","rule":null,"note":5,"command":"rule: 5"}',  # null, and numbers not ours
        b'{"id":"k","x":{"a":1,}}',  # 19, the last line, without a newline
    ]
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join(lines))
    found = duck._marked_lines(str(path))
    assert [n for n, _ in found] == [1, 3, 5, 6, 7, 8, 11, 13, 14, 15, 16, 17, 19]
    assert found[1][1] == '{"id":"c","x":nan,"y":[2 , ],"id":"c2"}'
    assert found[-1][1] == lines[-1].decode()
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "clean.jsonl").write_bytes(b"\n".join(lines[1:2] + lines[11:12]) + b"\n")
    assert duck._marked_lines(str(tmp_path / "empty.jsonl")) == []
    assert duck._marked_lines(str(tmp_path / "clean.jsonl")) == []


def test_a_large_log_is_read_into_a_database_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Past MEMORY_DB_BYTES the records go to a database file in the work directory, read as a
    small log is: the edge lines give the Python engine's report."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import io

    from guard.audit.reports import duck, report
    lines = _edge_lines(FAST_EDGE)
    log = tmp_path / "a.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    monkeypatch.setattr(duck, "MEMORY_DB_BYTES", 0)
    outputs = {}
    for engine in ("python", "duckdb"):
        assert report.main([str(log), *RULES, "--json", "--engine", engine]) == 0
        outputs[engine] = capsysbinary.readouterr()
    assert outputs["duckdb"] == outputs["python"]
    with duck.DuckEngine([str(log)], io.BytesIO()) as engine:
        assert engine.con.execute("SELECT database_name FROM duckdb_databases() WHERE path IS NOT NULL").fetchall()
        assert len(engine.con.execute(SQL_READ).fetchall()) == 8  # read in SQL


def test_blank_lines_keep_the_line_numbers_of_those_after_them(tmp_path: Path) -> None:
    """Blank lines give no record, and the line numbers of the lines after them (the first
    malformed one named in the warning) are the Python engine's."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import io

    from guard.audit.reports import duck

    lines = _edge_lines(['{"id":"b1","ts":"TS",BASE}', "", "   ", "\t", '{"id":"b2","ts":"TS",BASE}', "{torn"])
    (tmp_path / "blank.jsonl").write_text("\n".join(lines) + "\n\n")
    (tmp_path / "plain.jsonl").write_text(lines[0].replace("b1", "p1") + "\n")
    got = {e: audit(e, [str(tmp_path), *RULES, "--json"]) for e in engines()}
    assert got["duckdb"].stdout == got["python"].stdout
    assert got["duckdb"].stderr == got["python"].stderr
    assert got["duckdb"].stderr.decode().endswith("blank.jsonl:6)\n")
    with duck.DuckEngine([str(tmp_path)], io.BytesIO()) as engine:
        assert sorted(r[0] for r in engine.con.execute(SQL_READ).fetchall()) == ["b1", "b2", "p1"]


def test_a_file_that_is_a_copy_of_another_adds_only_duplicates(tmp_path: Path) -> None:
    """A collector that shipped a whole file twice (once gzip'd, once through standard input):
    every record of the copies is a duplicate, counted as the Python engine counts them."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import gzip

    from audit_records import record

    lines = [json.dumps(record(i * 11.0, id=f"c{i:04d}", agent=f"a{i % 4}")) for i in range(500)]
    text = "\n".join(lines) + "\n"
    (tmp_path / "one.jsonl").write_text(text)
    (tmp_path / "two.jsonl").write_text(text)
    with gzip.open(tmp_path / "three.jsonl.gz", "wt") as f:
        f.write(text)
    argv = [str(tmp_path / "one.jsonl"), str(tmp_path / "two.jsonl"), "-", str(tmp_path / "three.jsonl.gz"), "--json"]
    got = {}
    for e in engines():
        got[e] = subprocess.run(
            [sys.executable, "-m", "guard.cli.main", "audit", "--engine", e, *argv],
            input=text.encode(), capture_output=True, cwd=REPO, timeout=120,
        )  # fmt: skip
    assert got["duckdb"].stdout == got["python"].stdout
    data = json.loads(got["duckdb"].stdout)
    assert data["summary"]["records"] == 500 and data["summary"]["duplicates"] == 1500


def test_copies_are_found_by_the_hash_of_their_id_and_told_apart_by_the_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The ids read twice are found by their hashes: with a hash that many ids share, the copies
    (in another file, later in the same file, a copy that differs) are still those the Python
    engine finds, and the first copy read is the one kept."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    from audit_records import record

    from guard.audit.reports import duck, report
    lines = [json.dumps(record(i * 13.0, id=f"s{i:04d}", agent=f"a{i % 5}")) for i in range(400)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n" + lines[7] + "\n")
    changed = [json.dumps(record(i * 13.0, id=f"s{i:04d}", agent="the-copy")) for i in range(0, 400, 3)]
    (tmp_path / "b.jsonl").write_text("\n".join(changed) + "\n")
    outputs = {}
    runs = (("python", ""), ("duckdb", ""), ("duckdb-shared", "hash(id) % 3"))
    for engine, macro in runs:
        if macro:
            monkeypatch.setattr(duck, "_MACROS", duck._MACROS.replace("AS hash(id);", f"AS {macro};"))
        argv = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--json", "--engine", engine.split("-")[0]]
        assert report.main(argv) == 0
        outputs[engine] = capsysbinary.readouterr()
    assert outputs["duckdb-shared"] == outputs["duckdb"] == outputs["python"]
    data = json.loads(outputs["duckdb"].out)
    assert data["summary"]["duplicates"] == 1 + len(changed) and data["summary"]["agents"] == 5


def test_a_named_pipe_is_read_once(tmp_path: Path) -> None:
    """A log handed over as a pipe (``guard audit <(zcat log.gz)``) can be read once only: the
    DuckDB engine copies it first, and reports on it as the Python engine does."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import os
    import threading

    from audit_records import record

    text = "\n".join(json.dumps(record(i * 5.0, id=f"p{i:03d}")) for i in range(200)) + "\n"
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    got = {}
    for e in engines():
        writer = threading.Thread(target=fifo.write_text, args=(text,))
        writer.start()
        got[e] = audit(e, [str(fifo), "--json"])
        writer.join()
    assert got["duckdb"].returncode == 0, got["duckdb"].stderr
    assert got["duckdb"].stdout == got["python"].stdout
    assert json.loads(got["duckdb"].stdout)["summary"]["records"] == 200


def test_records_without_an_agent_count_as_the_one_agent_the_retry_table_calls_dash(tmp_path: Path) -> None:
    """An agent or thread that is missing, null, empty, 0 or false is no agent: the retry table
    names it ``-`` and the summary counts all of them as that one agent, in both engines (and a
    ``-`` written as such is the same name)."""
    from audit_records import record

    recs = []
    for n, agent in enumerate([None, "MISSING", "", 0, False, "-", "a1", "a1"]):
        rec = record(n * 30.0, id=f"n{n}", thread=f"t{n % 2}")
        if agent == "MISSING":
            del rec["agent"]
        else:
            rec["agent"] = agent
        recs.append(rec)
    recs[0]["thread"] = None
    recs[1]["thread"] = ""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    got = {e: audit(e, [str(log), "--json"]) for e in engines()}
    for proc in got.values():
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert data["summary"]["agents"] == 2
        # "-" with threads "-" (null, empty), t0 and t1; "a1" with t0 and t1
        assert data["summary"]["threads"] == 5
        named = {t["agent"] for t in data["retries"]["threads"]}
        assert named == {"-", "a1"}
    assert len({p.stdout for p in got.values()}) == 1


def test_retry_runs_are_the_same_when_two_threads_share_a_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The retry runs are worked out per hashed thread; where two threads share a hash (here made
    to, with a hash of two values) the report is still the Python engine's."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    from audit_records import record

    from guard.audit.reports import queries, report
    recs = [
        record(i * 40.0 + (i % 7) * 500, id=f"h{i:04d}", agent=f"a{i % 3}", thread=f"t{i % 4}",
               category=["publish", "mutate"][i % 2])
        for i in range(300)
    ]  # fmt: skip
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    outputs = {}
    for name, engine in (("python", "python"), ("duckdb", "duckdb"), ("shared", "duckdb")):
        if name == "shared":
            shared = queries.RETRIES_BY_HASH.replace(") AS h, t_us", ") % 2 AS h, t_us")
            shared = shared.replace("hash(agent, thread) AS h", "hash(agent, thread) % 2 AS h")
            assert shared.count("% 2 AS h") == 2
            monkeypatch.setattr(queries, "RETRIES_BY_HASH", shared)
        assert report.main([str(log), "--json", "--engine", engine]) == 0
        outputs[name] = capsysbinary.readouterr()
    assert outputs["shared"] == outputs["duckdb"] == outputs["python"]
    assert len(json.loads(outputs["duckdb"].out)["retries"]["threads"]) == 12


def test_retry_runs_with_refusals_at_one_time_are_the_python_engines(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """The retry runs are sorted by time alone (not by time and id): refusals of one thread at
    the same millisecond, their ids in every order and the log's lines shuffled, at the edge of
    the window and past it, give the Python engine's retry table."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import random

    from audit_records import record

    from guard.audit.reports import report

    times = [0.0, 0.0, 0.0, 600.0, 600.0, 1200.001, 1200.001, 5000.0, 5000.0, 5000.0, 5600.0, 9000.0]
    recs = []
    for thread in range(6):
        for k, t in enumerate(times):
            recs.append(record(t + thread * 0.25, id=f"{'zyxwvutsrqpo'[k]}{thread}", thread=f"t{thread}",
                               category=["publish", "mutate", "credential"][(k + thread) % 3]))  # fmt: skip
    random.Random(7).shuffle(recs)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    outputs = {}
    for engine in ("python", "duckdb"):
        assert report.main([str(log), "--json", "--engine", engine]) == 0
        outputs[engine] = capsysbinary.readouterr()
    assert outputs["duckdb"] == outputs["python"]
    threads = json.loads(outputs["duckdb"].out)["retries"]["threads"]
    assert len(threads) == 6 and {t["longest"] for t in threads} == {5}


@pytest.mark.parametrize("where", [None, "rule GLOB 'git-*'", "false"])
def test_the_small_tables_from_one_count_are_the_queries_rows(where: str | None) -> None:
    """TOP_RULE, TOP_CATEGORY, FIRED and PER_DAY worked out from KEPT_COUNTS give the rows the
    queries --sql prints give over the same kept records (all, some, none)."""
    if "duckdb" not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    import io

    from guard.audit.reports import duck, queries
    params = {"top": 3}
    pairs = [
        (queries.TOP_RULE, queries.TOP_RULE_COUNTED),
        (queries.TOP_CATEGORY, queries.TOP_CATEGORY_COUNTED),
        (queries.FIRED, queries.FIRED_COUNTED),
        (queries.PER_DAY, queries.PER_DAY_COUNTED),
    ]
    with duck.DuckEngine([str(REPO / FLEET), str(REPO / GOLDEN / "messy")], io.BytesIO()) as engine:
        if where:
            engine.con.execute(f"CREATE OR REPLACE VIEW kept AS SELECT * FROM records WHERE {where}")
        engine.con.execute(queries.KEPT_COUNTS)
        assert engine.con.execute("SELECT count(*) FROM kept_counts").fetchone()[0] < 1000
        for plain, counted in pairs:
            want, got = engine._rows(plain, params), engine._rows(counted, params)
            if plain is queries.FIRED:
                want, got = sorted(want), sorted(got)
            assert got == want, plain
            assert got or where == "false"
