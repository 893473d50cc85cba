"""Classify tries, for each invocation, only the refusing rules whose gate (first plain check) its
facts pass, from a list kept per program and per the values of the facts those rules gate on;
the verdicts are those of trying every rule."""

from __future__ import annotations

import json
from pathlib import Path

from guard import engine
from guard.context import Context
from guard.engine import rule_examples
from guard.policy import classify as classifier
from guard.ruleset.load import load_for

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "commands"
CTX = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})


def _every_rule(compiled, program, refusals, facts):  # type: ignore[no-untyped-def]
    """The refusing rules as classify tried them before the index: each one's gate tested."""
    return [r for r in refusals if r[4] is None or classifier._gate_passes(facts.get(r[4]), r[5])]


def test_a_git_invocation_meets_only_the_rules_its_subcommand_passes() -> None:
    engine.analyze("git log -1", CTX)
    compiled = classifier._compiled(load_for(CTX, rule_examples))
    names, by_values = compiled.passing["git"]
    assert "subcommand" in names
    allows, refusals, _ = compiled.by_program["git"]
    key = next(k for k in by_values if k[names.index("subcommand")] == "log")
    tried = {r[0].id for r in by_values[key]}
    assert tried and len(tried) < len(refusals)
    assert "git-stash-list" not in tried and "git-clone-into-tree" not in tried  # gated on stash, clone


def test_the_index_gives_the_verdicts_of_trying_every_rule(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lines = [json.loads(line) for f in sorted(FIXTURES.glob("*.jsonl")) for line in f.open()]
    # (a glob over /proc names the processes alive at the time, which change between two runs)
    commands = [d["command"] for d in lines if "/proc/" not in d["command"]]
    commands += ["git -c alias.x=push x", "git --version", "gh api -X POST /x"]
    indexed = [engine.analyze(c, CTX) for c in commands]
    monkeypatch.setattr(classifier, "_passing", _every_rule)
    assert [engine.analyze(c, CTX) for c in commands] == indexed
