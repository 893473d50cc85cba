"""Recorded real stderr (fixtures/stderr/) through the shipped rules: exactly the expected notes.

Every sample gets exactly its expected annotations, word for word (none extra), however the
stream is cut; a negative gets none. Then every line of every rule's own examples, quoted the
ways test runners, loggers and diffs quote text, must stay quiet.
"""

from __future__ import annotations

import json

import pytest

from guard.act.annotate import load_rules
from tests.act.stderr_fixtures import Sample, annotate, samples

SAMPLES = samples()
POSITIVE = [s for s in SAMPLES if s.expect]
NEGATIVE = [s for s in SAMPLES if not s.expect]


@pytest.fixture(scope="module")
def rules() -> list:
    return load_rules(None, env={})


def test_there_are_enough_samples() -> None:
    assert len(POSITIVE) >= 40
    assert len(NEGATIVE) >= 60
    for s in SAMPLES:
        assert s.meta.get("tool") and s.meta.get("command"), f"{s.name}: no tool or command in its header"
        assert len(s.annotations) == len(s.expect), f"{s.name}: one annotation line per expected rule"


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
@pytest.mark.parametrize("chunk", [1 << 20, 7], ids=["whole", "7-byte"])
def test_sample_gets_exactly_its_annotations(sample: Sample, chunk: int, rules: list) -> None:
    if chunk < 100 and len(sample.stderr()) > 200_000:
        pytest.skip("a huge sample is fed whole only")
    fired, lines = annotate(sample, rules, chunk)
    assert fired == sample.expect
    assert lines == sample.expected_lines


@pytest.mark.parametrize("sample", POSITIVE, ids=[s.name for s in POSITIVE])
def test_sample_without_its_conditions_is_quiet(sample: Sample, rules: list) -> None:
    """The same stderr with no GIT_TERMINAL_PROMPT=0, outside the tree: a rule that needs the
    condition stays quiet (rules that need neither still fire)."""
    by_id = {r.id: r for r in rules}
    moved = Sample(sample.path, {**sample.meta, "env": "GIT_TERMINAL_PROMPT=1",
                                 "cwd_in_tree": "false" if sample.in_tree else "true"}, [], sample.body)
    fired, _ = annotate(moved, rules)
    for rid in fired:
        r = by_id[rid]
        assert not r.env and r.cwd_in_tree is None, f"{rid} fired without its conditions"


# --------------------------------------------------------------------------- quoted text


def _quotings(line: str) -> list[str]:
    return [
        "AssertionError: expected success, got: " + line,  # a test runner's message
        "E       assert " + repr(line),  # pytest's repr of a string
        "    Expected: " + json.dumps(line),  # jest
        json.dumps({"level": "error", "msg": line}),  # a JSON log line
        "- " + line,  # a diff
        "+" + line,
        "2026-12-01T10:00:00Z ERROR " + line,  # a timestamped log
        "> " + line,  # a quoted mail or markdown line
        "thread 'main' panicked at 'called `Result::unwrap()`: " + line + "'",
        "\x1b[31mFAIL\x1b[0m " + line,  # coloured test output
    ]


def _quoted_cases() -> list[tuple[str, str, str | None, str]]:
    cases = []
    for rule in load_rules(None, env={}):
        for i, ex in enumerate(rule.must):
            lines = [ln for ln in ex.stderr.splitlines() if ln.strip()]
            for j, q in enumerate(zip(*(_quotings(ln) for ln in lines), strict=True)):
                cases.append((f"{rule.id}-{i}-q{j}", "\n".join(q) + "\n", ex.program, rule.id))
    return cases


QUOTED = _quoted_cases()


def test_quoting_covers_every_rule() -> None:
    assert {c[3] for c in QUOTED} == {r.id for r in load_rules(None, env={})}
    assert len(QUOTED) >= 200


@pytest.mark.parametrize(("name", "text", "program", "rid"), QUOTED, ids=[c[0] for c in QUOTED])
def test_quoted_example_is_quiet(name: str, text: str, program: str | None, rid: str, rules: list) -> None:
    from guard.act.annotate import Annotator

    ann = Annotator(rules, env={"GIT_TERMINAL_PROMPT": "0"}, in_tree=True,
                    programs=(program or "sh",), argvs=(), command="", audit=False)
    ann.feed(text.encode())
    assert ann.finish(1) == b"", text
