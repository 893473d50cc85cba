"""Classify takes ``facts_for``'s short way itself for programs with no spec and no rule naming
them (kept per program and rule set); the verdicts are those of asking ``facts_for`` for every
invocation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard import engine
from guard.context import Context
from guard.engine import rule_examples
from guard.policy import classify as classifier
from guard.policy.facts import quiet_program
from guard.ruleset.load import load_for

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "commands"
CTX = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize(("program", "quiet"), [("ls", True), ("pytest", True), ("git", False), ("git-push", False),
                                                 ("curl", False), ("grep", False), ("cp", False), ("env", False)])
def test_which_programs_are_quiet(program: str, quiet: bool) -> None:
    rs = load_for(CTX, rule_examples)
    assert quiet_program(program, classifier.world_of(classifier.effective_context(CTX, rs), rs)) is quiet


def test_the_short_way_gives_the_verdicts_of_facts_for(monkeypatch: pytest.MonkeyPatch, shared: Path) -> None:
    lines = [json.loads(line) for f in sorted(FIXTURES.glob("*.jsonl")) for line in f.open()]
    corpus = [json.loads(line)["command"] for line in (shared / "corpus" / "agent-commands.jsonl").open()][::7]
    # (a glob over /proc names the processes alive at the time, which change between two runs)
    commands = [c for c in [d["command"] for d in lines] + corpus if "/proc/" not in c]
    commands += ["cat ~/.netrc", "ls ~/.config/gh", "FOO=1 ls", "cat x > ~/.git-credentials"]
    short = [engine.analyze(c, CTX) for c in commands]
    compiled = classifier._compiled(load_for(CTX, rule_examples))
    monkeypatch.setattr(compiled, "quiet", {})
    monkeypatch.setattr(type(compiled), "is_quiet", lambda self, program, world: False)
    assert [engine.analyze(c, CTX) for c in commands] == short
    assert any(v.verdict == "refuse" for v in short)  # the comparison compared something
