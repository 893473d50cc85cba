"""Classify stage: compiled YAML rules applied to resolved invocations → a Verdict."""

from __future__ import annotations

from guard.context import Context
from guard.ir import ENV_READ, HTTP, UNKNOWN, Invocation, Resolution, Script, Verdict

# Imported here rather than inside classify: every module below is needed by the first
# classification anyway, and an import statement in a function costs about 0.7 µs per call.
from guard.policy.facts import World, facts_for, quiet_facts, quiet_program, where
from guard.policy.match import compile_cond, match_compiled
from guard.policy.messages import render
from guard.record import replace
from guard.ruleset.actions import STRENGTH, WARNING, effective, mode_of
from guard.ruleset.derived import Derived, derived
from guard.ruleset.model import Rule, RuleSet, per_set
from guard.ruleset.programs import spec_for
from guard.text.redact import redact_known, redact_url, secrets_in


def effective_context(ctx: Context, rs: RuleSet) -> Context:
    """Fill what the caller left open from the config (docs/behaviour.md §7 precedence). The last answer is
    kept with the context and rule set it was made from: a stream of commands asks with the
    same two each time, and what it reads of them (the trees, strict, the config) does not
    change while they are held."""
    last = _last_effective
    if last and last[0] is ctx and last[1] is rs:
        return last[2]
    trees = ctx.trees or derived(rs).trees or Context().trees
    strict = ctx.strict or bool(rs.config.get("strict"))
    runs = runs_of(rs)
    archives = runs_of(rs, "archive")
    interpreters = runs_of(rs, "inline")
    catalogue = derived(rs).programs
    recipes = runs_of(rs, "recipes")
    if trees == ctx.trees and strict == ctx.strict and runs is ctx.runs and archives is ctx.archives \
            and interpreters is ctx.interpreters and rs.dialects is ctx.dialects and catalogue is ctx.catalogue \
            and recipes is ctx.recipes:
        out = ctx
    else:
        out = replace(ctx, trees=trees, strict=strict, runs=runs, archives=archives, interpreters=interpreters,
                      dialects=rs.dialects, catalogue=catalogue, recipes=recipes)
    _last_effective[:] = (ctx, rs, out)
    return out


_last_effective: list = []


def runs_of(rs: RuleSet, key: str = "runs") -> dict[str, dict]:
    """The catalogue's command runners in ``rs``: program → its spec's ``runs:`` (or another
    mapping ``key`` of a spec: ``archive``). One dict per rule set and key, so a context filled
    from the same set keeps the same one."""
    got = _runs.get((id(rs), key))
    if got is None or got[0] is not rs:
        table = {name: spec[key] for name, spec in rs.programs.items() if isinstance(spec.get(key), dict)}
        if len(_runs) > 32:
            _runs.clear()
        got = _runs[(id(rs), key)] = (rs, table)
    return got[1]


_runs: dict[tuple[int, str], tuple[RuleSet, dict[str, dict]]] = {}


def world_of(ctx: Context, rs: RuleSet) -> World:
    """What the facts depend on, for ``ctx`` under ``rs``. The last one is kept: a stream of
    commands in one context (``guard check --jsonl`` lines without an env of their own) asks for
    the same world each time. The entry holds ``rs`` and the env, so their ids stay theirs."""
    last = _last_world
    if last and last[0] is rs and last[1] is ctx.env and last[2] == ctx.trees:
        return last[3]
    d = derived(rs)
    world = World(trees=ctx.trees, env=ctx.env, forges=d.forges, token_vars=d.token_vars,
                  token_prefixes=d.token_prefixes, token_words=d.token_words, programs=d.programs, named=d.named, read_all=d.read_all,
                  stores=d.stores)
    _last_world[:] = (rs, ctx.env, ctx.trees, world)
    return world


_last_world: list = []
_PLACE = {"tree": True, "outside": False}  # where an invocation runs, as Verdict.in_tree says it


class Hit:
    """A refusing rule that matched one invocation: the rule's rank (precedence, then its
    place in the trial order), the invocation's index in the command, the rule, the
    invocation, its facts, and whether the match rests on a repository path left unknown."""

    __slots__ = ("rank", "index", "rule", "inv", "facts", "unknown")

    def __init__(self, rank: int, index: int, rule: Rule, inv: Invocation, facts: dict, unknown: bool) -> None:
        self.rank, self.index, self.rule, self.inv, self.facts, self.unknown = rank, index, rule, inv, facts, unknown

    def __repr__(self) -> str:
        return f"Hit({self.rule.id!r} on {self.inv.argv!r}, rank {self.rank}, index {self.index})"


def classify(script: Script, res: Resolution, ctx: Context, rs: RuleSet) -> Verdict:
    world = world_of(ctx, rs)
    compiled = _compiled(rs)
    mode, mode_note = mode_of(ctx.mode)
    writes = compiled.derived.writes
    notes = list(res.unresolved)
    if mode_note:
        notes.append(mode_note)
    hits: list[Hit] = []
    places: list[bool | None] = []
    quiet = compiled.quiet
    for idx, inv in enumerate(res.invocations):
        program = inv.program
        q = quiet.get(program)
        if q is None:
            q = compiled.is_quiet(program, world)
        if q and not inv.var_refs and not inv.writes:
            # ``facts_for``'s short way, its tests on the program kept per name: the facts are
            # the name and at most cred_store, and the place is the cwd's (no repo fact)
            facts = quiet_facts(inv, world)
            places.append(_PLACE.get(where(inv.cwd, world)))  # type: ignore[arg-type]
        else:
            facts = facts_for(inv, world)
            in_tree = facts.get("repo") if "repo" in facts else where(inv.cwd, world)
            places.append(_PLACE.get(in_tree))  # type: ignore[arg-type]
            program = facts.get("program") or program
        allows, refusals, gates = compiled.by_program.get(program) or _candidates(rs, program)
        if gates is not None and gates.isdisjoint(facts):
            continue  # every rule left needs a fact this invocation lacks (ls, cat, pytest …)
        refusals = _passing(compiled, program, refusals, facts)
        if not refusals:
            continue  # no refusing rule passes its gate, and allow rules only lift refusals
        exempt: set[str] = set()
        for _, exempts, checks in allows:
            if match_compiled(checks, facts) == "yes":
                exempt.update(exempts)
        for rule, cat, rank, checks, _gate, _wants in refusals:
            if cat in exempt:
                continue
            m = match_compiled(checks, facts)
            if m is None:
                continue
            if m == "unknown" and not (cat in writes or ctx.strict):
                notes.append(f"{_what(inv, facts, world.programs)}: repository path unknown, not refused")
                continue
            # the first rule that matches answers for the invocation, on trial or not: a rule
            # put on observe does not hand its invocations to a catch-all behind it
            hits.append(Hit(rank, idx, rule, inv, facts, m == "unknown"))
            break
    out = res.invocations
    if not hits:
        # positionally, in Verdict's field order (verdict, category, rule, tool, message,
        # invocations, unresolved, parser, rule_source, matched, also, in_tree): one per command
        return Verdict("allow", None, None, None, None, out, tuple(notes), script.parser, None, None, (), tuple(places))
    # the strongest action any matched rule takes decides; among its rules, precedence and order
    hits.sort(key=lambda h: (STRENGTH[compiled.action_of(h.rule, mode)], h.rank, h.index))
    best = hits[0]
    rule, inv, facts, unknown = best.rule, best.inv, best.facts, best.unknown
    action, action_source = compiled.action_with_source(rule, mode)
    # the others the message names are what this action also does: a refusal never names what a
    # rule on trial matched, and a warning never what only an observed rule did
    hits = [h for h in hits if compiled.action_of(h.rule, mode) == action]
    others = []
    for h in hits[1:]:
        cat = h.rule.category
        if cat != rule.category and cat not in [o[0] for o in others]:
            others.append((cat, _what(h.inv, h.facts, world.programs)))
    tool = rule.tool
    # the call is filled from every invocation answered by the same tool (git add A && git commit -m M)
    fills = [(h.inv, h.facts) for h in sorted(hits, key=lambda h: h.index) if tool and h.rule.tool == tool]
    message = render(rule, inv, facts, ctx, rs.config, _what(inv, facts, world.programs), unknown=unknown,
                     others=others, scanned=script.parser == "scan", fills=fills or None)
    secrets = secrets_in(script.source)  # pieces of a credential the parser handed on apart
    if secrets:
        message = redact_known(message, secrets)
    if action == "warn":  # the command runs: the agent reads the route, not a refusal
        message = WARNING + message.removeprefix("Refused: ").replace(" Also refused: ", " Also: ")
    return Verdict(
        "refuse" if action == "refuse" else "allow",
        category=rule.category,
        rule=rule.id,
        tool=rule.tool,
        message=message,
        invocations=tuple(out),
        unresolved=tuple(notes),
        parser=script.parser,
        rule_source=rule.source,
        matched=inv,
        also=tuple(o[0] for o in others),
        in_tree=tuple(places),
        action=action,
        action_source=action_source,
    )


class _Compiled:
    """What classify derives from one RuleSet, built on first use and kept while it is current.

    Each rule's ``match:`` block is compiled once (``compile_cond``), and the rules an invocation
    of a given program can meet are split once into allow rules (with what they exempt) and
    refusing rules (with their category and rank), so a classification does no per-rule lookups.
    """

    def __init__(self, rs: RuleSet) -> None:
        self.rs = rs
        self.derived: Derived = derived(rs)
        # the order rules are tried: by ``priority`` (higher first), then as written
        self.ordered = sorted(rs.rules, key=lambda r: -r.priority)
        self.by_program: dict[str, tuple[list[tuple], list[tuple], frozenset[str] | None]] = {}
        # per program: its refusing rules' gate facts, and by the values an invocation has for
        # them, the rules whose gates those values pass (``_passing``)
        self.passing: dict[str, tuple[tuple[str, ...], dict[tuple, list[tuple]]]] = {}
        # per program: whether ``facts_for`` takes its short way for it (``quiet_program``),
        # which depends on the program name and the rule set only
        self.quiet: dict[str, bool] = {}
        # (rule id, GUARD_MODE) → (action, where it comes from): config and rule are fixed per set
        self.actions: dict[tuple[str, str | None], tuple[str, str]] = {}

    def action_with_source(self, rule: Rule, mode: str | None) -> tuple[str, str]:
        key = (rule.id, mode)
        got = self.actions.get(key)
        if got is None:
            got = self.actions[key] = effective(rule, self.rs.config, mode)
        return got

    def action_of(self, rule: Rule, mode: str | None) -> str:
        return self.action_with_source(rule, mode)[0]

    def is_quiet(self, program: str, world: World) -> bool:
        """``quiet_program``, kept for the next invocation of the same program (a few hundred
        names in a corpus; past 4096 it is worked out each time)."""
        q = quiet_program(program, world)
        if len(self.quiet) < 4096:
            self.quiet[program] = q
        return q


def _gate_passes(have: object, wants: tuple) -> bool:
    """Whether a fact's value passes a rule's gate: its first plain check other than program
    (a value ``"unknown"`` passes a gate that wants ``"tree"``, as in ``match_compiled``)."""
    return have in wants or (have == "unknown" and "tree" in wants)


def _passing(compiled: _Compiled, program: str, refusals: list[tuple], facts: dict) -> list[tuple]:
    """The refusing rules of ``refusals`` whose gates ``facts`` pass, in trial order.

    Which rules pass depends only on the invocation's values for the few facts the rules gate on
    (git's 32 refusing rules gate on 10, most on ``subcommand``), so the list is kept per
    program and per those values: an invocation tries only the rules whose own first check it
    passes, and one that passes none skips the allow rules too (they only lift refusals).
    """
    entry = compiled.passing.get(program)
    if entry is None:
        entry = (tuple(dict.fromkeys(r[4] for r in refusals if r[4] is not None)), {})
        if len(compiled.passing) < 512:  # as many programs as by_program keeps
            compiled.passing[program] = entry
    names, by_values = entry
    key = tuple([facts.get(n) for n in names])
    try:
        hit = by_values.get(key)
    except TypeError:  # a value that cannot be a key (a list): decided here, not kept
        return [r for r in refusals if r[4] is None or _gate_passes(facts.get(r[4]), r[5])]
    if hit is None:
        hit = [r for r in refusals if r[4] is None or _gate_passes(facts.get(r[4]), r[5])]
        if len(by_values) < 1024:
            by_values[key] = hit
    return hit


_recent: dict = {}


def _compiled(rs: RuleSet) -> _Compiled:
    return per_set(_recent, rs, _Compiled)


# The key of the rules an invocation of a program no rule names can meet: no program is named
# NUL (NUL bytes are removed from command text, and from what the analysis reads).
_UNNAMED = "\0"


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
    precedence = compiled.derived.categories
    by_program = compiled.by_program
    hit = by_program.get(program)
    if hit is None and program != _UNNAMED and program not in compiled.derived.named:
        # a program no rule names meets only the rules that name none: one entry for all such
        # programs (kept whatever the cap), not the same rules compiled again for each name
        hit = by_program.get(_UNNAMED) or _candidates(rs, _UNNAMED)
        if len(by_program) < 512:
            by_program[program] = hit
    if hit is None:
        allows: list[tuple] = []
        refusals: list[tuple] = []
        for rule in compiled.ordered:
            want = rule.match.get("program")
            if want is None or program == want or (isinstance(want, list) and program in want):
                checks = compile_cond(rule.match)
                if rule.verdict == "allow":
                    ex = rule.exempts or compiled.derived.default_exempt
                    allows.append((rule, tuple(precedence if ex == "all" else ex), checks))
                else:
                    cat = rule.category or "read-probe"
                    gate = next(((key, wants) for key, special, wants in checks
                                 if not special and key != "program"), (None, ()))
                    refusals.append((rule, cat, precedence.index(cat) if cat in precedence else 99, checks, *gate))
        gated = all(gate is not None and None not in wants for *_, gate, wants in refusals)
        hit = (allows, refusals, frozenset(r[4] for r in refusals) if gated else None)
        if len(by_program) < 512 or program == _UNNAMED:
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
        shown = [f for f in spec.per_sub(spec.what_flags, facts["subcommand"], ()) if f in (facts.get("flags") or ())]
        if shown:  # git tag -l, git branch -D: what the subcommand does with its operands
            text += " " + " ".join(shown)
        elif facts.get("action") and (wa is True or (wa and facts["subcommand"] in wa)):
            text += f" {facts['action']}"
    elif "http_method" in facts and facts.get("url"):
        name = "an HTTP" if inv.kind == HTTP else prog
        text = f"{name} {facts['http_method']} {redact_url(facts['url'])}"
    elif inv.kind == ENV_READ:
        text = f"reading {inv.argv[1] if len(inv.argv) > 1 else 'the environment'}"
    else:
        text = " ".join(inv.argv)
        if len(text) > 80:
            text = text[:77] + "..."
    text = text.replace(UNKNOWN, "…")
    if inv.via:
        text += f" (via {' → '.join(v.replace(UNKNOWN, '…') for v in inv.via)})"
    return text
