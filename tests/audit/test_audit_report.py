"""``guard audit``: merging, collector envelopes, filters, the reports and their machine forms."""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

import pytest
from audit_records import T0, record, write_jsonl

from guard.audit.reports import report

DAY = 86400.0
REAL_POLICY_RULE_IDS = report.policy_rule_ids  # the autouse fixture stubs the attribute


def run(
    argv: list[str], capsysbinary: pytest.CaptureFixture[bytes], stdin: bytes | None = None
) -> tuple[int, str, str]:
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        code = report.main(argv)
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsysbinary.readouterr()
    return code, out.decode("utf-8"), err.decode("utf-8")


def report_json(
    argv: list[str], capsysbinary: pytest.CaptureFixture[bytes], stdin: bytes | None = None
) -> dict:
    code, out, err = run([*argv, "--json"], capsysbinary, stdin)
    assert code == 0, err
    return json.loads(out)


# --------------------------------------------------------------------------- merging


def test_union_by_id_across_files_sorted_by_ts_then_id(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    a = [record(0, id="A0"), record(60, id="A1"), record(120, id="S1")]
    b = [record(120, id="S0"), record(60, id="A1"), record(30, id="B0")]  # A1 in both copies
    fa = write_jsonl(tmp_path / "a.jsonl", a)
    fb = write_jsonl(tmp_path / "b.jsonl", b)
    code, out, err = run([str(fa), str(fb), "--records"], capsysbinary)
    assert code == 0 and err == ""
    ids = [json.loads(x)["id"] for x in out.splitlines()]
    assert ids == ["A0", "B0", "A1", "S0", "S1"]  # S0 < S1 at the same ts

    data = report_json([str(fa), str(fb)], capsysbinary)
    assert data["summary"]["records"] == 5 and data["summary"]["duplicates"] == 1
    assert data["summary"]["sources"] == 2


def test_directories_and_gzip_are_read(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    (tmp_path / "box1").mkdir()
    (tmp_path / "box2").mkdir()
    write_jsonl(tmp_path / "box1" / "audit.jsonl", [record(0, id="one")])
    with gzip.open(tmp_path / "box2" / "audit.jsonl.20260101T000000000Z.gz", "wt") as f:
        f.write(json.dumps(record(5, id="two")) + "\n")
    (tmp_path / "box2" / "audit.jsonl.lock").write_text("")
    data = report_json([str(tmp_path)], capsysbinary)
    assert data["summary"]["records"] == 2 and data["summary"]["malformed"] == 0


def test_stdin_concatenated_stream(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    lines = [json.dumps(record(i * 10, id=f"r{i}")) for i in range(5)]
    stream = ("\n".join(lines + lines[:2]) + "\n").encode()  # two sandboxes shipped the same records
    data = report_json([], capsysbinary, stdin=stream)
    assert data["summary"]["records"] == 5 and data["summary"]["duplicates"] == 2
    data = report_json(["-"], capsysbinary, stdin=stream)
    assert data["summary"]["records"] == 5


def _collector_lines(rec: dict) -> list[str]:
    line = json.dumps(rec)
    return [
        # Vector file source → file sink with the json codec: the line is in "message".
        json.dumps(
            {
                "file": "/sandbox/7/audit.jsonl",
                "host": "sb-7",
                "message": line,
                "source_type": "file",
                "timestamp": "2026-01-01T12:00:01Z",
            }
        ),
        # Vector with parse_json merged into the event: our fields at the top, plus its own.
        json.dumps({**rec, "file": "/sandbox/7/audit.jsonl", "source_type": "file"}),
        # Fluent Bit tail → file output (out_file default format): "tag: [time, {log: line}]".
        "guard.audit: [1767268801.0, " + json.dumps({"log": line}) + "]",
        # Fluent Bit with the json parser: "tag: [time, {fields}]".
        "guard.audit: [1767268801.0, " + json.dumps(rec) + "]",
        # OpenTelemetry collector filelog receiver → file exporter (OTLP JSON).
        json.dumps(
            {
                "resourceLogs": [
                    {
                        "resource": {"attributes": [{"key": "host.name", "value": {"stringValue": "sb-7"}}]},
                        "scopeLogs": [
                            {
                                "logRecords": [
                                    {"timeUnixNano": "1767268801000000000", "body": {"stringValue": line}}
                                ]
                            }
                        ],
                    }
                ]
            }
        ),
        # A log viewer's prefix: "time stream flag line" (Kubernetes container logs).
        "2026-01-01T12:00:01.000000000Z stdout F " + line,
    ]


@pytest.mark.parametrize("shape", range(6))
def test_collector_envelopes_are_unwrapped(shape: int, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    rec = record(0, id="wrapped-1", agent="agent-z")
    stream = (_collector_lines(rec)[shape] + "\n").encode()
    code, out, err = run(["--records"], capsysbinary, stdin=stream)
    assert code == 0 and err == ""
    [got] = [json.loads(x) for x in out.splitlines()]
    assert got["id"] == "wrapped-1" and got["agent"] == "agent-z" and got["command"] == rec["command"]


def test_all_envelopes_of_one_record_count_once(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    rec = record(0, id="same")
    stream = ("\n".join(_collector_lines(rec)) + "\n").encode()
    data = report_json([], capsysbinary, stdin=stream)
    assert data["summary"]["records"] == 1 and data["summary"]["duplicates"] == 5


def test_malformed_lines_are_counted_with_one_warning(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    good = [record(i, id=f"g{i}") for i in range(3)]
    f = write_jsonl(
        tmp_path / "a.jsonl",
        good,
        extra_lines=(
            "{not json",
            '{"id": "x"}',
            "",
            '{"id":"y","ts":"yesterday","verdict":"refuse"}',
            '{"id":"torn","ts":"2026-01-',
        ),
    )
    code, out, err = run([str(f), "--json"], capsysbinary)
    assert code == 0
    assert err.count("\n") == 1 and "skipped 4 malformed lines" in err and "a.jsonl:4" in err
    assert json.loads(out)["summary"]["records"] == 3


def test_unreadable_file_and_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    for argv in (
        [str(tmp_path / "missing.jsonl")],
        ["--since", "last tuesday"],
        ["--bogus"],
        ["--json", "--csv"],
    ):
        code, out, err = run(argv, capsysbinary, stdin=b"")
        assert code == 2, argv
        assert out == "" and err.count("\n") == 1 and err.startswith("guard audit: "), (argv, err)
        assert "Traceback" not in err


# --------------------------------------------------------------------------- filters


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    recs = [
        record(0, id="1", agent="claude-1", thread="t1", role="worker", rule="git-push", category="publish"),
        record(
            DAY,
            id="2",
            agent="claude-1",
            thread="t2",
            role="worker",
            rule="git-status",
            category="read-probe",
            tool="git_status",
        ),
        record(
            2 * DAY,
            id="3",
            agent="codex-2",
            thread="t9",
            role="coordinator",
            rule="git-init",
            category="create",
            tool="git_clone",
        ),
        record(
            3 * DAY,
            id="4",
            agent="codex-2",
            thread="t9",
            role="coordinator",
            kind="annotation",
            verdict="allow",
            rule="cred-prompt",
            category=None,
            tool=None,
        ),
    ]
    return write_jsonl(tmp_path / "fleet.jsonl", recs)


@pytest.mark.parametrize(
    ("argv", "ids"),
    [
        ([], ["1", "2", "3", "4"]),
        (["--since", "2026-01-02"], ["2", "3", "4"]),
        (["--until", "2026-01-02"], ["1", "2"]),  # a date includes that whole day
        (["--since", "2026-01-02T12:00:00Z", "--until", "2026-01-03T11:59:59Z"], ["2"]),
        (["--agent", "codex-*"], ["3", "4"]),
        (["--agent", "claude-1", "--agent", "codex-2"], ["1", "2", "3", "4"]),
        (["--thread", "t9"], ["3", "4"]),
        (["--role", "worker"], ["1", "2"]),
        (["--rule", "git-*"], ["1", "2", "3"]),
        (["--category", "create"], ["3"]),
        (["--verdict", "allow"], ["4"]),
        (["--kind", "refusal", "--agent", "claude-1", "--thread", "t2"], ["2"]),
    ],
)
def test_filters(
    argv: list[str], ids: list[str], fleet: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, err = run([str(fleet), *argv, "--records"], capsysbinary)
    assert code == 0, err
    assert [json.loads(x)["id"] for x in out.splitlines()] == ids


def test_relative_since() -> None:
    assert report.parse_when("7d", now=T0) == T0 - 7 * DAY
    assert report.parse_when("90m", now=T0) == T0 - 5400
    assert report.parse_when("2026-01-01T12:00:00+02:00") == T0 - 7200


# --------------------------------------------------------------------------- reports


def test_top_refusals_by_rule_category_and_normalised_command(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    recs = [record(i, command=f"git push origin feature-{i}") for i in range(5)]
    recs += [
        record(10 + i, command=f"cd /workspace/p{i} && git status", rule="git-status", category="read-probe")
        for i in range(3)
    ]
    recs += [record(20, command="env | grep -i token", rule="env-grep", category="token-search")]
    recs += [
        record(
            30,
            kind="annotation",
            verdict="allow",
            rule="cred-prompt",
            category=None,
            command="pip install git+https://github.com/o/p",
        )
    ]
    data = report_json([str(write_jsonl(tmp_path / "l.jsonl", recs))], capsysbinary)
    assert data["top"]["rule"] == [
        {"key": "git-push", "count": 5},
        {"key": "git-status", "count": 3},
        {"key": "env-grep", "count": 1},
    ]
    assert data["top"]["category"][0] == {"key": "publish", "count": 5}
    assert data["top"]["command"] == [
        {"key": "git push …", "count": 5},
        {"key": "cd … && git status", "count": 3},
        {"key": "env | grep -i token", "count": 1},
    ]
    assert data["summary"]["refusals"] == 9 and data["summary"]["annotations"] == 1


@pytest.mark.parametrize(
    ("command", "normal"),
    [
        ("git -C /workspace/app commit -m 'wip'", "git -C … commit -m …"),
        ("GIT_DIR=/w/.git /usr/bin/git status", "GIT_DIR=… git status"),
        ("bash -c 'git push origin main'", "bash -c 'git push …'"),
        ("gh pr create --title 'Fix it' --body x", "gh pr create --title … --body …"),
        ("git remote add up https://github.com/o/r.git", "git remote add … https://github.com/…"),
        (
            "curl -X POST https://api.github.com/repos/o/r/pulls -d @b.json",
            "curl -X POST https://api.github.com/… -d …",
        ),
        ("printenv GITHUB_TOKEN", "printenv GITHUB_TOKEN"),
        ("cat ~/.git-credentials", "cat ~/.git-credentials"),
        ("echo 'unterminated", "echo …"),
        ('for d in */; do git -C "$d" status; done', "for … ; do git -C … status ; done"),
        ("if true; then git push; fi", "if true ; then git push ; fi"),
    ],
)
def test_normalise_command(command: str, normal: str) -> None:
    assert report.normalise_command(command) == normal


def test_normalise_command_reads_programs_through_the_rule_sets_specs() -> None:
    """Which words are a program's subcommand and action, and which options take a value, come
    from the program specs (rules/programs/*.yaml): a spec added for a program changes how its
    commands fold, and a program without one has no subcommand."""
    from guard.audit.reports.ruleset import program_specs
    from guard.ruleset.programs import compile_specs

    shipped = dict(program_specs())
    assert report.normalise_command("cargo install ripgrep", specs=shipped) == "cargo …"
    cargo = compile_specs({"cargo": {"global_options": {"with_value": ["--config"]}, "what_action": ["run"]}})
    specs = {**shipped, **cargo}
    assert report.normalise_command("cargo install ripgrep", specs=specs) == "cargo install …"
    assert report.normalise_command("cargo --config /w run build", specs=specs) == "cargo --config … run build"
    # npm's spec (rules/programs/runners.yaml: npm exec runs a command) gives it subcommands
    assert report.normalise_command("npm install left-pad", specs=shipped) == "npm install …"
    # git's spec: bundle names its action, bisect does not; -C takes a value before the subcommand
    assert report.normalise_command("git bundle create out.bundle", specs=shipped) == "git bundle create …"
    assert report.normalise_command("git bisect start", specs=shipped) == "git bisect …"
    assert report.normalise_command("git -C /w push", specs={}) == "git -C …"
    assert report.normalise_command("git -C /w push", specs=shipped) == "git -C … push"


@pytest.mark.parametrize(
    "commands",
    [
        # the words before the last are read once and kept; the last word is read each time
        [("git push origin feat-1", "git push …"), ("git push origin fix-2", "git push …")],
        [("git remote", "git remote"), ("git remote add", "git remote add"), ("git remote add up", "git remote add …")],
        [("git commit -m wip", "git commit -m …"), ("git commit -m x -a", "git commit -m … -a")],
        [("sh -c ls", "sh -c 'ls'"), ("sh -c git", "sh -c 'git'"), ("sh -c 'git push' x", "sh -c 'git push' …")],
        # what can still change the words before it: an assignment, a keyword, an open quote, a backslash
        [("A=1 B=2", "A=… B=2"), ("A=1 git", "A=… git"), ("A=1 git push", "A=… git push")],
        [("if git", "if git"), ("time git push", "time git push"), ("time git status", "time git status")],
        [("echo 'a b", "echo …"), ("echo 'a b c", "echo …"), ("echo a\\ b", "echo …")],
        [("git status && git push origin b-2", "git status && git push …"), ("git status && git", "git status && git")],
    ],
)
def test_normalise_command_reads_each_last_word_after_the_same_first_words(commands: list[tuple[str, str]]) -> None:
    """A fleet's commands differ mostly in their last word: what the first words leave is kept
    from one command to the next, and each command folds as if read alone, in either order."""
    from guard.audit.reports import normalise

    for order in (commands, commands[::-1], commands * 2):
        normalise._AFTER.clear()
        assert [report.normalise_command(c) for c, _ in order] == [n for _, n in order]


HEADS = [
    "git", "git push", "git push origin", "git -C /w", "git commit -m", "git remote", "git remote add",
    "npm", "npm run", "npm --prefix", "curl -X", "curl -X POST https://api.github.com/x -d", "grep", "grep -rn",
    "sh -c", "bash -c 'git push'", "env | grep -i", "A=1", "A=1 git", "git status &&", "printenv", "gh pr",
    "gh pr create --title", "cat", "cat ~/.git-credentials", "time", "if",
]  # fmt: skip
LAST_WORDS = ["feat-1", "fix-2", "0", "x", "push", "add", "-f", "--force", "--data=x", "-c", "TOKEN", "GET", "AB",
              "GH_TOKEN", "a=1", "a:b", "v1.2", "x@y", "%s", "+x", "^x", "DELETE", "Push"]  # fmt: skip


def test_normalise_command_folds_each_simple_last_word_as_the_full_reading_does() -> None:
    """The folded form kept for the first words of a command (the same for every last word
    that folds into …) is what reading the whole command gives, for flags, subcommands, kept
    arguments and folded ones alike."""
    from guard.audit.reports import normalise
    from guard.audit.reports.ruleset import program_specs

    specs = program_specs()
    normalise._AFTER.clear()
    for head in HEADS:
        for last in LAST_WORDS:
            command = f"{head} {last}"
            assert report.normalise_command(command) == normalise._normalise(command, 0, specs), command
    assert any(known[2] is not None for known in normalise._AFTER.values())  # the lookup was used


def test_normalise_command_keeps_the_words_read_per_rule_set() -> None:
    """The same first words under another rule set's specs are read again."""
    from guard.audit.reports.ruleset import program_specs
    from guard.ruleset.programs import compile_specs

    shipped = dict(program_specs())
    cargo = {**shipped, **compile_specs({"cargo": {"what_action": ["run"]}})}
    for _ in range(2):
        assert report.normalise_command("cargo run build", specs=shipped) == "cargo …"
        assert report.normalise_command("cargo run build", specs=cargo) == "cargo run build"


def test_retries_runs_and_wasted_steps(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    m = 60.0
    recs = [
        # claude-1/t1: refused, retried twice within minutes (a run of 3), then again 2 h later alone.
        record(0, agent="claude-1", thread="t1"),
        record(2 * m, agent="claude-1", thread="t1", category="mutate"),
        record(5 * m, agent="claude-1", thread="t1"),
        record(125 * m, agent="claude-1", thread="t1"),
        # claude-1/t2 interleaved in time but another thread: its own run of 2.
        record(1 * m, agent="claude-1", thread="t2"),
        record(3 * m, agent="claude-1", thread="t2"),
        # codex-2/t1: same thread name, other agent: refusals 11 min apart are separate runs.
        record(0, agent="codex-2", thread="t1"),
        record(11 * m, agent="codex-2", thread="t1"),
        # annotations do not count as refusals.
        record(4 * m, agent="codex-2", thread="t1", kind="annotation", verdict="allow"),
    ]
    data = report_json([str(write_jsonl(tmp_path / "l.jsonl", recs))], capsysbinary)
    r = data["retries"]
    assert (r["runs"], r["runs_with_retries"], r["wasted"]) == (5, 2, 3)
    rows = {(t["agent"], t["thread"]): t for t in r["threads"]}
    assert rows["claude-1", "t1"] == {
        "agent": "claude-1", "thread": "t1", "refusals": 4, "runs": 2, "wasted": 2, "longest": 3, "top_category": "publish",
    }  # fmt: skip
    assert (rows["claude-1", "t2"]["wasted"], rows["claude-1", "t2"]["longest"]) == (1, 2)
    assert (rows["codex-2", "t1"]["runs"], rows["codex-2", "t1"]["wasted"]) == (2, 0)
    assert [(t["agent"], t["thread"]) for t in r["threads"]][0] == ("claude-1", "t1")
    # A wider window joins codex-2's two refusals into one run.
    wide = report_json([str(tmp_path / "l.jsonl"), "--window", "15"], capsysbinary)["retries"]
    assert wide["wasted"] == 4


def test_never_fired_rules(tmp_path: Path, fleet: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    rules = tmp_path / "rules.txt"
    rules.write_text(
        "# every rule id\ngit-push\ngit-status   read probes\ngit-stash\ncred-prompt\nnetrc-read\n"
    )
    data = report_json([str(fleet), "--rules-list", str(rules)], capsysbinary)
    assert data["never_fired"] == {"known": True, "rules": ["git-stash", "netrc-read"]}
    # Over a period in which git-push did not fire, it is listed too.
    data = report_json([str(fleet), "--rules-list", str(rules), "--since", "2026-01-02"], capsysbinary)
    assert data["never_fired"]["rules"] == ["git-push", "git-stash", "netrc-read"]
    rules.write_text(json.dumps(["a", "git-init"]))
    assert report_json([str(fleet), "--rules-list", str(rules)], capsysbinary)["never_fired"]["rules"] == [
        "a"
    ]


def test_never_fired_degrades_without_a_rule_list(
    fleet: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setattr(report, "policy_rule_ids", lambda: None)
    data = report_json([str(fleet)], capsysbinary)
    assert data["never_fired"] == {"known": False, "rules": []}
    code, out, _ = run([str(fleet)], capsysbinary)
    assert "Rules that never fired: unknown (pass --rules-list FILE)" in out


def test_per_day_trend_with_empty_days_and_bars(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    recs = [record(i) for i in range(8)] + [record(2 * DAY + i) for i in range(4)]
    recs.append(record(2 * DAY + 9, kind="annotation", verdict="allow"))
    f = write_jsonl(tmp_path / "l.jsonl", recs)
    data = report_json([str(f)], capsysbinary)
    assert data["per_day"] == [
        {"day": "2026-01-01", "refusals": 8, "annotations": 0},
        {"day": "2026-01-02", "refusals": 0, "annotations": 0},
        {"day": "2026-01-03", "refusals": 4, "annotations": 1},
    ]
    code, out, _ = run([str(f)], capsysbinary)
    lines = out.splitlines()
    day1 = next(x for x in lines if x.startswith("  2026-01-01"))
    day3 = next(x for x in lines if x.startswith("  2026-01-03"))
    assert day1.count("█") == report.BAR_WIDTH and day3.count("█") == report.BAR_WIDTH // 2
    assert "(+1 annotations)" in day3


def test_bar_eighths() -> None:
    assert report.bar(0, 10) == ""
    assert report.bar(10, 10, 4) == "████"
    assert report.bar(1, 16, 4) == "▎"  # 1/16 of 4 cells = 2 eighths
    assert report.bar(1, 10_000, 4) == "▏"  # never invisible when non-zero


def test_text_report_sections(fleet: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, err = run([str(fleet), "--rules-list", "/dev/null"], capsysbinary)
    assert code == 0 and err == ""
    for heading in (
        "guard audit: 4 records (3 refusals, 1 annotations), 2026-01-01 → 2026-01-04 UTC",
        "Refused most, by rule",
        "Refused most, by category",
        "Refused most, by normalised command",
        "Retries after a refusal",
        "Rules that never fired over the period: 0",
        "Refusals per day (UTC)",
    ):
        assert heading in out


# --------------------------------------------------------------------------- machine forms


def test_json_shape(fleet: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    data = report_json([str(fleet)], capsysbinary)
    assert set(data) == {"summary", "top", "retries", "never_fired", "per_day"}
    assert set(data["summary"]) == {
        "records",
        "refusals",
        "annotations",
        "sources",
        "duplicates",
        "malformed",
        "first",
        "last",
        "agents",
        "threads",
    }
    assert set(data["top"]) == {"rule", "category", "command"}
    assert set(data["retries"]) == {"window_minutes", "runs", "runs_with_retries", "wasted", "threads"}
    assert data["summary"]["first"].startswith("2026-01-01T12:00:00")


def test_csv_shape(fleet: Path, capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path) -> None:
    code, out, _ = run([str(fleet), "--csv"], capsysbinary)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 4
    assert list(rows[0]) == list(report.CSV_COLUMNS)
    assert [r["id"] for r in rows] == ["1", "2", "3", "4"] and rows[2]["agent"] == "codex-2"
    f = write_jsonl(
        tmp_path / "f.jsonl", [record(0, command='=HYPERLINK("http://evil")', agent="+cmd", via=["a", "b"])]
    )
    code, out, _ = run([str(f), "--csv"], capsysbinary)
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["command"].startswith("'=") and row["agent"] == "'+cmd" and row["via"] == "a > b"


def test_rule_ids_are_the_refusing_rules_and_annotations_of_the_rule_set_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user layer's refusing rule and annotation can fire (they are listed); its allow rule never
    writes a record (it is not); a broken layer degrades to None, and says nothing."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "rules:\n"
        "  - id: no-terraform\n    category: mutate\n    message: 'Refused: {what}.'\n"
        "    match: {program: terraform}\n"
        "  - id: lets-ls\n    verdict: allow\n    match: {program: ls}\n"
        "annotations:\n"
        "  - id: tf-locked\n    pattern: 'Error acquiring the state lock'\n    message: 'the state is locked'\n"
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("GUARD_RULES", str(mine))
    from guard.audit.reports import ruleset
    from guard.ruleset import load

    load.forget()
    ruleset._rule_set.cache_clear()
    try:
        ids = REAL_POLICY_RULE_IDS()
        assert ids is not None and {"no-terraform", "tf-locked", "git-push", "git-terminal-prompts-disabled"} <= set(ids)
        assert "lets-ls" not in ids and ids == sorted(ids)
        load.forget()
        ruleset._rule_set.cache_clear()
        from guard import engine

        monkeypatch.setattr(engine, "rules_for", lambda ctx: 1 / 0)
        assert REAL_POLICY_RULE_IDS() is None  # degrade: the report says "unknown"
        assert capsys.readouterr().err == ""  # the loader's warnings are not the report's
    finally:
        ruleset._rule_set.cache_clear()
        ruleset.program_specs.cache_clear()
