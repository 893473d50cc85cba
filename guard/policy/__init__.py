"""Classify stage: compiled YAML rules applied to resolved invocations → a Verdict."""

from __future__ import annotations

from guard import precheck
from guard.context import Context
from guard.ir import UNKNOWN, Invocation, Resolution, Script, Verdict

# Imported here rather than inside classify: every module below is needed by the first
# classification anyway, and an import statement in a function costs about 0.7 µs per call.
from guard.policy import loader
from guard.policy.facts import Forge, World, facts_for, where
from guard.policy.loader import RuleSet
from guard.policy.match import compile_cond, match_compiled
from guard.policy.messages import render
from guard.policy.programs import READER_FACTS as READER_KEYS
from guard.policy.programs import compile_specs, spec_for
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
    key = (ctx.rule_paths, ctx.config_path)
    rs = _loaded.get(key)
    if rs is None:
        at = precheck.stamp(ctx.rule_paths, ctx.config_path)
        rs = _loaded[key] = loader.load(ctx.rule_paths, ctx.config_path)
        precheck.remember_plan(ctx.rule_paths, ctx.config_path, at, precheck_plan(rs))
    if rs.errors and not _warned:
        _warned = True
        loader.warn_once(rs)
    return rs


def forget() -> None:
    """Drop what ``load`` keeps per process (the loaded rule sets, the warned-once flag), so the
    next ``load`` re-reads the rule files as a fresh process would: for a long-lived caller
    (the analysis server) whose rule files may change between commands."""
    global _warned
    _loaded.clear()
    _warned = False
    loader.forget()


def effective_context(ctx: Context, rs: RuleSet) -> Context:
    """Fill what the caller left open from the config (SPEC §7 precedence)."""
    trees = ctx.trees or tuple(rs.config.get("trees") or ("/workspace",))
    strict = ctx.strict or bool(rs.config.get("strict"))
    if trees == ctx.trees and strict == ctx.strict:
        return ctx
    return replace(ctx, trees=trees, strict=strict)


def world_of(ctx: Context, rs: RuleSet) -> World:
    compiled = _compiled(rs)
    return World(trees=ctx.trees, env=ctx.env, forges=compiled.forges, token_vars=compiled.token_vars,
                 programs=compiled.programs, named=compiled.named, read_all=compiled.read_all)


def classify(script: Script, res: Resolution, ctx: Context, rs: RuleSet) -> Verdict:
    world = world_of(ctx, rs)
    notes = list(res.unresolved)
    hits: list[tuple[int, int, dict, Invocation, dict, bool]] = []
    places: list[bool | None] = []
    for idx, inv in enumerate(res.invocations):
        facts = facts_for(inv, world)
        in_tree = facts.get("repo") if "repo" in facts else where(inv.cwd, world)
        places.append({"tree": True, "outside": False}.get(in_tree))
        allows, refusals, gates = _candidates(rs, facts.get("program") or inv.program)
        if gates is not None and gates.isdisjoint(facts):
            continue  # every rule left needs a fact this invocation lacks (ls, cat, pytest …)
        exempt: set[str] = set()
        for _, exempts, checks in allows:
            if match_compiled(checks, facts) == "yes":
                exempt.update(exempts)
        for rule, cat, rank, checks, gate, gate_wants in refusals:
            if cat in exempt:
                continue
            if gate is not None:  # one of the rule's own checks, tried inline: most rules fail it
                have = facts.get(gate)
                if have not in gate_wants and not (have == "unknown" and "tree" in gate_wants):
                    continue
            m = match_compiled(checks, facts)
            if m is None:
                continue
            if m == "unknown" and not (cat in WRITES or ctx.strict):
                notes.append(f"{_what(inv, facts, world.programs)}: repository path unknown, not refused")
                continue
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
            others.append((cat, _what(h[3], h[4], world.programs)))
    message = render(rule, inv, facts, ctx, rs.config, _what(inv, facts, world.programs), unknown=unknown,
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


class _Compiled:
    """What classify derives from one RuleSet, built on first use and kept while it is current.

    Each rule's ``match:`` block is compiled once (``compile_cond``), and the rules an invocation
    of a given program can meet are split once into allow rules (with what they exempt) and
    refusing rules (with their category and rank), so a classification does no per-rule lookups.
    """

    def __init__(self, rs: RuleSet) -> None:
        self.rs = rs
        # the order rules are tried: by ``priority`` (higher first), then as written
        self.ordered = sorted(rs.rules, key=lambda r: -int(r.get("priority", 0)))
        self.by_program: dict[str, tuple[list[tuple], list[tuple], frozenset[str] | None]] = {}
        self.forges = forges_of(rs.config)
        self.token_vars = frozenset(rs.config.get("token_vars") or ())
        self.programs = compile_specs(rs.programs)
        self.named = frozenset(p for r in rs.rules for p in _as_list(r.get("match", {}).get("program")))
        self.read_all = any("program" not in r.get("match", {}) and not READER_KEYS.isdisjoint(r.get("match", {}))
                            for r in rs.rules)
        self.precheck = _precheck_plan(rs, self.named)


def precheck_plan(rs: RuleSet) -> precheck.Plan:
    """What guard-shell's pre-check may let through under ``rs``: the config's ``precheck``
    programs, less every program a rule names; none at all when a rule naming no program wants
    a fact the watched fragments do not cover (``precheck.covers``)."""
    return _compiled(rs).precheck


def plan_text(plan: precheck.Plan) -> str:
    """A plan as ``guard/policy/precheck-shipped.txt`` holds it."""
    return ("# guard-shell's pre-check under the shipped rules alone, derived from them (config precheck:,\n"
            "# less every program a rule names); tests/test_precheck.py checks it. Programs, then watched.\n"
            + " ".join(sorted(plan.programs)) + "\n" + " ".join(plan.watched) + "\n")


def _precheck_plan(rs: RuleSet, named: frozenset[str]) -> precheck.Plan:
    cfg = rs.config.get("precheck") or {}
    covers = set(cfg.get("covers") or ())
    programs = frozenset(cfg.get("programs") or ()) - named
    for r in rs.rules:
        m = r.get("match") or {}
        if "program" not in m and not set(m) <= covers:
            programs = frozenset()  # a rule on any program: every command gets the analysis
            break
    return precheck.Plan(programs, tuple(str(w).lower() for w in cfg.get("watched") or ()))


def forges_of(config: dict) -> tuple[Forge, ...]:
    """The config's ``forges``; a forge's hosts may also be given as ``<name>_hosts``."""
    out = []
    for name, f in (config.get("forges") or {}).items():
        f = f or {}
        hosts = config.get(f"{name}_hosts", f.get("hosts")) or ()
        out.append(Forge(name, tuple(h.lower() for h in hosts), tuple(f.get("api_paths") or ()),
                         tuple(f.get("token_paths") or ())))
    return tuple(out)


def _as_list(v: object) -> list:
    return [] if v is None else v if isinstance(v, list) else [v]


_compiled_cache: list[_Compiled] = []


def _compiled(rs: RuleSet) -> _Compiled:
    if not _compiled_cache or _compiled_cache[0].rs is not rs:
        _compiled_cache[:] = [_Compiled(rs)]
    return _compiled_cache[0]


def _candidates(rs: RuleSet, program: str) -> tuple[list[tuple], list[tuple], frozenset[str] | None]:
    """The rules that can match an invocation of ``program``, in trial order: those naming the
    program and those naming none. Most invocations (ls, cat, pytest) face only a handful.

    Returned as ``(allows, refusals)``: allow rules as ``(rule, exempted categories, checks)``,
    the others as ``(rule, category, precedence rank, checks, gate, gate_wants)``: ``gate`` is
    the fact name of the rule's first plain check other than ``program`` (None when it has none).
    Any failed check fails the whole match, so classify tests that one inline and skips the
    rule without a call when it fails, as it does for nine in ten rules tried.

    The third item is the set of those gate facts when every refusing rule has a gate that an
    absent fact fails (its values do not include None), else None. An invocation whose facts
    hold none of them can match no refusing rule, and allow rules only lift refusals, so
    classify skips both loops for it.
    """
    compiled = _compiled(rs)
    by_program = compiled.by_program
    hit = by_program.get(program)
    if hit is None:
        allows: list[tuple] = []
        refusals: list[tuple] = []
        for rule in compiled.ordered:
            want = rule.get("match", {}).get("program")
            if want is None or program == want or (isinstance(want, list) and program in want):
                checks = compile_cond(rule["match"])
                if rule.get("verdict") == "allow":
                    ex = rule.get("exempts") or DEFAULT_EXEMPT
                    allows.append((rule, tuple(PRECEDENCE if ex == "all" else ex), checks))
                else:
                    cat = rule.get("category", "read-probe")
                    gate = next(((key, wants) for key, special, wants in checks
                                 if not special and key != "program"), (None, ()))
                    refusals.append((rule, cat, PRECEDENCE.index(cat) if cat in PRECEDENCE else 99, checks, *gate))
        gated = all(gate is not None and None not in wants for *_, gate, wants in refusals)
        hit = (allows, refusals, frozenset(r[4] for r in refusals) if gated else None)
        if len(by_program) < 512:
            by_program[program] = hit
    return hit


def _what(inv: Invocation, facts: dict, programs: dict | None = None) -> str:
    """How the refused command was recognised: ``git push (via alias g)``. A program with a spec
    is named with its subcommand, and with its action where the spec's ``what_action`` says."""
    prog = facts.get("program") or inv.program
    spec = spec_for(prog, programs)[0] if programs else None
    if spec is not None and spec.subcommand and facts.get("subcommand"):
        text = f"{prog} {facts['subcommand']}"
        wa = spec.what_action
        if facts.get("action") and (wa is True or (wa and facts["subcommand"] in wa)):
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
