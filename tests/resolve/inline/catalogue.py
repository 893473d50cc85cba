"""The shipped catalogue as the engine hands it to the resolver: which program runs which
dialect (program specs' ``inline:``) and the dialect tables (rules/dialects/)."""

from __future__ import annotations

from functools import cache

from guard.context import Context
from guard.resolve.inline import Finding, analyze_inline


@cache
def _shipped() -> tuple[dict, dict]:
    from guard.engine import rules_for
    from guard.policy.classify import runs_of

    rs = rules_for(Context(cwd="/"))
    return runs_of(rs, "inline"), rs.dialects


def interpreters() -> dict:
    return _shipped()[0]


def dialects() -> dict:
    return _shipped()[1]


def interpreter_lang(program: str) -> str | None:
    """The dialect a program runs, by the catalogue (``perl5.36`` reads as ``perl``)."""
    from guard.resolve.inline.launch import dialect_of

    return dialect_of(program, interpreters())


def analyze(lang: str, source: str, args: tuple[str, ...] = ()) -> tuple[list[Finding], list[str]]:
    """``analyze_inline`` with the shipped dialect tables."""
    return analyze_inline(lang, source, args, dialects())


def with_catalogue(ctx: Context) -> Context:
    """``ctx`` as the engine fills it from the shipped rule set (runners, interpreters, dialects)."""
    from guard.engine import rules_for
    from guard.policy.classify import effective_context

    return effective_context(ctx, rules_for(ctx))
