"""Every shipped rule's examples, through the real engine (what `guard rules test` runs in CI).

A refuse example passes when the verdict is refuse and this rule decided it; an allow example
passes when this rule does not refuse it (for an allow rule: when the command is allowed).
"""

from __future__ import annotations

import pytest

from guard.engine import rule_examples
from guard.ruleset import compile as rcompile
from guard.ruleset import layers as rlayers

# Shipped examples the engine gets wrong today (reported to the lead; remove an entry when fixed —
# strict xfail fails the suite as soon as one passes):
KNOWN: dict[str, str] = {}  # rule id → why its examples are expected to fail (none now)


def _compiled() -> rcompile.Compiled:
    return rcompile.compile_files(rlayers.rule_layers((), None), examples="all", run=rule_examples)


COMPILED = _compiled()
ENTRIES = [e for e in COMPILED.entries if e.rule.get("examples")]


def test_shipped_rules_have_no_mistakes():
    assert [str(d) for d in COMPILED.diagnostics] == []


@pytest.mark.parametrize(
    "rule_id",
    [pytest.param(e.id, marks=pytest.mark.xfail(reason=KNOWN[e.id], strict=True)) if e.id in KNOWN else e.id
     for e in ENTRIES],
)
def test_shipped_rule_examples(rule_id):
    results = [r for r in COMPILED.examples if r.entry.id == rule_id]
    assert results, "the rule's examples were not run"
    assert [str(r.diagnostic()) for r in results if not r.ok] == []


def test_shipped_stderr_rule_examples_pass():
    from guard.act.annotate import run_examples
    from guard.act.matcher import compile_pattern
    from guard.ruleset.annotations import typed

    assert COMPILED.ruleset.errors == []
    rules = [typed(d, compile_pattern) for d in COMPILED.annotations]
    assert len(rules) >= 10
    assert run_examples(rules) == []
