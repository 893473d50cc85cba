"""The rules an invocation can meet: those naming its program and those naming none, in trial
order; for a program no rule names, one entry built once and shared by every such name (a
server worker meets many names the server never warmed)."""

from __future__ import annotations

from guard.context import Context
from guard.engine import rule_examples
from guard.policy import classify as classifier
from guard.ruleset.load import load_for

CTX = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})


def _ids(hit: tuple) -> tuple[list[str], list[str]]:
    allows, refusals, _ = hit
    return [a[0].id for a in allows], [r[0].id for r in refusals]


def _expected(compiled: classifier._Compiled, program: str) -> tuple[list[str], list[str]]:
    """Every rule in trial order whose program is ``program`` or none, split by verdict."""
    allows, refusals = [], []
    for rule in compiled.ordered:
        want = rule.match.get("program")
        if want is None or want == program or (isinstance(want, list) and program in want):
            (allows if rule.verdict == "allow" else refusals).append(rule.id)
    return allows, refusals


def test_unnamed_programs_share_one_entry_of_the_rules_that_name_none() -> None:
    rs = load_for(CTX, rule_examples)
    compiled = classifier._compiled(rs)
    names = ["zz-never-a-rule-program", "make", "ls", "./build.sh", "/usr/bin/zz", "ünïcode"]
    hits = [classifier._candidates(rs, n) for n in names if n not in compiled.derived.named]
    assert len(hits) == len(names) and all(h is hits[0] for h in hits)  # built once
    for name in names:
        assert _ids(classifier._candidates(rs, name)) == _expected(compiled, name)


def test_a_named_program_meets_its_own_rules_and_the_unnamed_ones() -> None:
    rs = load_for(CTX, rule_examples)
    compiled = classifier._compiled(rs)
    assert compiled.derived.named  # the shipped rules name programs (git, gh, curl …)
    for name in sorted(compiled.derived.named):
        got = _ids(classifier._candidates(rs, name))
        assert got == _expected(compiled, name), name
        assert len(got[0]) + len(got[1]) >= len(_expected(compiled, "\0")[0]) + len(_expected(compiled, "\0")[1])
