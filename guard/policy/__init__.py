"""Classify stage: compiled YAML rules applied to resolved invocations → a Verdict."""

from __future__ import annotations

from guard.context import Context
from guard.ir import UNKNOWN, Invocation, Resolution, Script, Verdict
from guard.policy.loader import RuleSet
from guard.record import replace

PRECEDENCE = ("publish", "create", "absent", "mutate", "token-search", "read-probe")
WRITES = frozenset({"publish", "create", "absent", "mutate"})
# What an allow rule exempts unless it says otherwise: publishing and token searches are refused
# anywhere (SPEC §2), so no allow rule lifts them by default.
DEFAULT_EXEMPT = ("create", "absent", "mutate", "read-probe")

_warned = False
_loaded: dict[tuple, RuleSet] = {}


def load(ctx: Context) -> RuleSet:
    """The rule set for ``ctx``, compiled once per process (the files are read on first use)."""
    global _warned
    from guard.policy import loader

    key = (ctx.rule_paths, ctx.config_path)
    rs = _loaded.get(key)
    if rs is None:
        rs = _loaded[key] = loader.load(ctx.rule_paths, ctx.config_path)
    if rs.errors and not _warned:
        _warned = True
        loader.warn_once(rs)
    return rs


def effective_context(ctx: Context, rs: RuleSet) -> Context:
    """Fill what the caller left open from the config (SPEC §7 precedence)."""
    trees = ctx.trees or tuple(rs.config.get("trees") or ("/workspace",))
    strict = ctx.strict or bool(rs.config.get("strict"))
    if trees == ctx.trees and strict == ctx.strict:
        return ctx
    return replace(ctx, trees=trees, strict=strict)


def world_of(ctx: Context, rs: RuleSet):
    from guard.policy.facts import World

    return World(
        trees=ctx.trees,
        env=ctx.env,
        github_hosts=tuple(rs.config.get("github_hosts") or ()),
        token_vars=frozenset(rs.config.get("token_vars") or ()),
    )


def classify(script: Script, res: Resolution, ctx: Context, rs: RuleSet) -> Verdict:
    from guard.policy.facts import facts_for, where
    from guard.policy.match import match
    from guard.policy.messages import render

    world = world_of(ctx, rs)
    notes = list(res.unresolved)
    hits: list[tuple[int, int, dict, Invocation, dict, bool]] = []
    places: list[bool | None] = []
    for idx, inv in enumerate(res.invocations):
        facts = facts_for(inv, world)
        in_tree = facts.get("repo") if "repo" in facts else where(inv.cwd, world)
        places.append({"tree": True, "outside": False}.get(in_tree))
        candidates = _candidates(rs, facts.get("program") or inv.program)
        exempt: set[str] = set()
        for rule in candidates:
            if rule.get("verdict") == "allow" and match(rule["match"], facts) == "yes":
                ex = rule.get("exempts") or DEFAULT_EXEMPT
                exempt.update(PRECEDENCE if ex == "all" else ex)
        for rule in candidates:
            cat = rule.get("category", "read-probe")
            if rule.get("verdict") == "allow" or cat in exempt:
                continue
            m = match(rule["match"], facts)
            if m is None:
                continue
            if m == "unknown" and not (cat in WRITES or ctx.strict):
                notes.append(f"{_what(inv, facts)}: repository path unknown, not refused")
                continue
            rank = PRECEDENCE.index(cat) if cat in PRECEDENCE else 99
            hits.append((rank, idx, rule, inv, facts, m == "unknown"))
            break
    out = res.invocations
    if not hits:
        return Verdict("allow", invocations=out, unresolved=tuple(notes), parser=script.parser, in_tree=tuple(places))
    hits.sort(key=lambda h: (h[0], h[1]))
    _, _, rule, inv, facts, unknown = hits[0]
    others = []
    for h in hits[1:]:
        cat = h[2].get("category")
        if cat != rule.get("category") and cat not in [o[0] for o in others]:
            others.append((cat, _what(h[3], h[4])))
    message = render(rule, inv, facts, ctx, rs.config, _what(inv, facts), unknown=unknown,
                     others=others, scanned=script.parser == "scan")
    return Verdict(
        "refuse",
        category=rule.get("category"),
        rule=rule["id"],
        tool=rule.get("tool"),
        message=message,
        invocations=tuple(out),
        unresolved=tuple(notes),
        parser=script.parser,
        rule_source=rule.get("source"),
        matched=inv,
        also=tuple(o[0] for o in others),
        in_tree=tuple(places),
    )


_order_cache: list[tuple[RuleSet, list[dict], dict[str, list[dict]]]] = []


def _ordered(rs: RuleSet) -> list[dict]:
    """Rules in the order they are tried: by ``priority`` (higher first), then as written."""
    if not _order_cache or _order_cache[0][0] is not rs:
        _order_cache[:] = [(rs, sorted(rs.rules, key=lambda r: -int(r.get("priority", 0))), {})]
    return _order_cache[0][1]


def _candidates(rs: RuleSet, program: str) -> list[dict]:
    """The rules that can match an invocation of ``program``, in trial order: those naming the
    program and those naming none. Most invocations (ls, cat, pytest) face only a handful."""
    ordered = _ordered(rs)
    by_program = _order_cache[0][2]
    hit = by_program.get(program)
    if hit is None:
        hit = []
        for rule in ordered:
            want = rule.get("match", {}).get("program")
            if want is None or program == want or (isinstance(want, list) and program in want):
                hit.append(rule)
        if len(by_program) < 512:
            by_program[program] = hit
    return hit


def _what(inv: Invocation, facts: dict) -> str:
    """How the refused command was recognised: ``git push (via alias g)``."""
    prog = facts.get("program") or inv.program
    if prog in ("git", "gh") and facts.get("subcommand"):
        text = f"{prog} {facts['subcommand']}"
        if prog == "gh" and facts.get("action"):
            text += f" {facts['action']}"
        elif facts.get("subcommand") in ("stash", "worktree", "remote", "submodule", "bundle", "lfs", "notes") and facts.get("action"):
            text += f" {facts['action']}"
    elif "http_method" in facts and facts.get("url"):
        name = "an HTTP" if prog == "<http>" else prog
        text = f"{name} {facts['http_method']} {facts['url']}"
    elif prog == "<env-read>":
        text = f"reading {inv.argv[1] if len(inv.argv) > 1 else 'the environment'}"
    else:
        text = " ".join(inv.argv)
        if len(text) > 80:
            text = text[:77] + "..."
    text = text.replace(UNKNOWN, "…")
    if inv.via:
        text += f" (via {' → '.join(v.replace(UNKNOWN, '…') for v in inv.via)})"
    return text
