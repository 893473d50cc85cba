"""Each rule's examples, run through the real pipeline: against the whole effective set and
against the rule alone, so another rule cannot silently break them. The rule set's compiler
takes ``run_rule_examples`` from its caller (``guard.engine.rules_for``, ``guard rules``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from guard.ruleset.examples import ExampleResult, example_context
from guard.ruleset.model import Rule, RuleSet
from guard.ruleset.schema import vocabulary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.ruleset.checks import Entry


def analyze_with(command: str, ctx: Any, rs: RuleSet) -> tuple[Any, Any, Any]:
    """parse → resolve → classify with a given rule set (what guard.engine.analyze does with the
    loaded one); (verdict, resolution, context)."""
    from guard import parse, resolve  # the real pipeline, with this rule set
    from guard.policy import classify as classifier

    ctx = classifier.effective_context(ctx, rs)
    script = parse.parse(command)
    res = resolve.resolve(script, ctx, parse.parse)
    return classifier.classify(script, res, ctx, rs), res, ctx


def _facts_text(facts: Mapping[str, Any]) -> str:
    from guard.ir import UNKNOWN

    parts = []
    for k, v in facts.items():
        if v in (None, False, "", [], set()) or k in ("args", "flags", "configs", "repo_path", "dest_path"):
            continue
        parts.append(f"{k}={v}".replace(UNKNOWN, "…"))
    return " ".join(parts)


def run_rule_examples(e: Entry, rs: RuleSet) -> list[ExampleResult]:
    """Each example of ``e`` against the whole effective set ``rs`` and against the rule alone (with
    the same config and program specs), so a failure says whether the rule or another one is at
    fault."""
    from guard.record import replace

    ex = e.rule.get("examples") or {}
    rule = next((r for r in rs.rules if r.source == e.source), None)
    if rule is None or not isinstance(ex, dict):
        return []
    alone = replace(rs, rules=[rule]) if rule.verdict != "allow" else None
    out = []
    for kind in ("refuse", "allow"):
        for i, item in enumerate(ex.get(kind) or []):
            command, ctx = example_context(item)
            try:
                ok, why = judge_example(rule, kind, command, ctx, rs)
                if alone is not None:
                    ok_alone, why_alone = judge_example(rule, kind, command, ctx, alone)
                    if ok and not ok_alone:
                        ok, why = False, f"alone, {why_alone} (in the effective set another rule hides this)"
                    elif not ok and ok_alone:
                        why += f"; alone, {rule.id} gets it right: another rule changes the verdict"
            except Exception as err:  # noqa: BLE001 — an engine bug is a failing example, not a crash
                ok, why = False, f"the engine raised {type(err).__name__}: {err}"
            out.append(ExampleResult(e, kind, i, command, ok, why))
    return out


def judge_example(rule: Rule, kind: str, command: str, ctx: Any, rs: RuleSet) -> tuple[bool, str]:
    """Does one example hold? (ok, why not)."""
    v, res, ectx = analyze_with(command, ctx, rs)
    rid = rule.id
    allow_rule = rule.verdict == "allow"
    q = json.dumps(command, ensure_ascii=False)
    # a rule on trial (warn, observe) is judged on what it matches: its examples hold in every mode
    refused = v.verdict == "refuse" or v.action in ("warn", "observe")
    by = f"{v.rule} ({v.category}, {v.rule_source})" if refused else ""
    if allow_rule:
        if kind == "allow" and refused:
            return False, f"{q} was refused by {by}; expected allow rule {rid} to let it through" + _why_not(rule, res, ectx, rs)
        if kind == "refuse" and not refused:
            return False, f"{q} was allowed; expected it refused (allow rule {rid} must not exempt it)"
        return True, ""
    if kind == "allow":
        if refused and v.rule == rid:
            return False, f"{q} was refused by {rid}; expected {rid} not to refuse it"
        return True, ""
    if refused and v.rule == rid:
        left = _unfilled(rule, v, res, ectx, rs)
        if left:
            return False, (f"{q} names {', '.join(left)}, but the message leaves {'them' if len(left) > 1 else 'it'} out of "
                           f"{rule.tool}'s call; use {{tool_call}} (or {{{left[0]}}}) so the agent gets the value")
        return True, ""
    if refused:
        beaten = _beaten_by(rule, v, res, ectx, rs)
        if beaten:
            return False, f"{q} was refused by {by}, not by {rid}: {beaten}"
        return False, f"{q} was refused by {by}, not by {rid}" + _why_not(rule, res, ectx, rs)
    return False, f"{q} was allowed; expected {rid} to refuse it" + _why_not(rule, res, ectx, rs)


def _unfilled(rule: Rule, v: Any, res: Any, ctx: Any, rs: RuleSet) -> list[str]:
    """The arguments the rule's tool declares (config ``tools: NAME: args``) that the command names
    but the message does not fill."""
    from guard.policy.messages import unfilled

    if not rule.tool:
        return []
    pairs = [(inv, f) for inv, f in _invocation_facts(res, ctx, rs) if inv.cwd == v.matched.cwd]
    repo_path = next((f.get("repo_path") for inv, f in pairs if inv == v.matched), None) or v.matched.cwd
    return unfilled(rule, pairs, rs.config, ctx.trees, repo_path)


def _invocation_facts(res: Any, ctx: Any, rs: RuleSet) -> list[tuple[Any, dict[str, Any]]]:
    from guard.policy import classify as classifier
    from guard.policy.facts import facts_for

    world = classifier.world_of(ctx, rs)
    return [(inv, facts_for(inv, world)) for inv in res.invocations]


def _beaten_by(rule: Rule, v: Any, res: Any, ctx: Any, rs: RuleSet) -> str:
    """When ``rule`` matches too but another rule won: why that one wins, else ""."""
    from guard.policy.match import match

    other = next((r for r in rs.rules if r.id == v.rule), None)
    pairs = _invocation_facts(res, ctx, rs)
    same = [f for inv, f in pairs if inv == v.matched]
    if any(match(rule.match, f) == "yes" for f in same):
        mine, theirs = rule.priority, other.priority if other is not None else 0
        if theirs != mine:
            return (f"both match and {v.rule} is tried first (priority {theirs} > {mine}); "
                    "raise this rule's priority or narrow the other")
        return (f"both match and {v.rule} is tried first (same priority, earlier in the effective order); "
                "give this rule a higher priority")
    if any(match(rule.match, f) == "yes" for _, f in pairs):
        return (f"{rid_of(rule)} matches another part of the command, and {v.category} outranks "
                f"{rule.category} (precedence {' > '.join(vocabulary()['categories'])})")
    return ""


def rid_of(rule: Rule) -> str:
    return rule.id


def _why_not(rule: Rule, res: Any, ctx: Any, rs: RuleSet) -> str:
    """Why a rule did not decide: it does not match (with the facts), or an allow rule exempts it."""
    from guard.ir import UNKNOWN
    from guard.policy.match import match

    pairs = _invocation_facts(res, ctx, rs)
    if not pairs:
        return "; the command runs no program guard sees"
    cat = rule.category
    for inv, facts in pairs:
        m = match(rule.match, facts)
        if m is None:
            continue
        if m == "unknown":
            return f"; {rule.id} matches {' '.join(inv.argv).replace(UNKNOWN, '…')} only if an unknown path is in the tree"
        for other in rs.rules:
            if other.verdict == "allow" and cat in (other.exempts or vocabulary()['default_exempt']) \
                    and match(other.match, facts) == "yes":
                return f"; {rule.id} matches but allow rule {other.id} ({other.source}) exempts it"
        return f"; {rule.id} matches {' '.join(inv.argv).replace(UNKNOWN, '…')}"
    shown_ = "; ".join(f"{' '.join(inv.argv)}: {_facts_text(f)}".replace(UNKNOWN, "…") for inv, f in pairs[:3])
    return f"; {rule.id} does not match it (facts: {shown_})"
