"""The typed rule set every stage is handed: command rules, annotation rules, program specs and
config, compiled once and cached (``guard.ruleset.load``). Light: the hot path imports it."""

from __future__ import annotations

from guard.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any


@dataclass(frozen=True)
class Rule:
    """One command rule as compiled from its layers: what it matches (``match``, the facts and
    values guard/policy/match.py reads) and what a match does. ``verdict`` "allow" rules lift
    the categories in ``exempts`` (None: the schema's default) instead of refusing."""

    id: str
    match: dict[str, Any]
    source: str = ""  # file:line of the rule in effect
    verdict: str = "refuse"
    category: str | None = None
    message: str | None = None
    tool: str | None = None
    priority: int = 0
    exempts: list[str] | str | None = None
    action: str | None = None  # refuse, warn or observe; None: refuse unless the config says
    description: str | None = None


def rule_of(written: Mapping[str, Any]) -> Rule:
    """The record of a rule as its layers wrote it (a mapping the schema has checked)."""
    return Rule(id=str(written["id"]), match=dict(written.get("match") or {}), source=str(written.get("source") or ""),
                verdict=written.get("verdict") or "refuse", category=written.get("category"),
                message=written.get("message"), tool=written.get("tool"), priority=int(written.get("priority") or 0),
                exempts=written.get("exempts"), action=written.get("action"), description=written.get("description"))


@dataclass
class RuleSet:
    rules: list[Rule]  # command rules, in the order written (layers replace in place)
    config: dict[str, Any]
    digest: str
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # mistakes that made this compile unusable
    dropped: list[str] = field(default_factory=list)  # rules left out because their examples fail
    disabled: list[dict[str, str]] = field(default_factory=list)  # {id, source, by}
    fallback: str | None = None  # set when this is not the set the files describe, and why
    programs: dict[str, dict[str, Any]] = field(default_factory=dict)  # program name → spec as written
    dialects: dict[str, dict[str, Any]] = field(default_factory=dict)  # dialect name → table as written (rules/dialects/)
    annotations: list[dict[str, Any]] = field(default_factory=list)  # stderr rules, checked (see annotations.py)
    vocabulary: dict[str, list[str]] = field(default_factory=dict)  # categories (precedence order), writes, default_exempt: the schema's
    notes: list[str] = field(default_factory=list)  # what layering did that an author should know (lists replaced)




def per_set(cache: dict[int, Any], rs: RuleSet, make: Any) -> Any:
    """``make(rs)``, computed once per rule set: ``cache`` maps id(rs) to (rs, value) for the last
    few sets (holding each set keeps its id its own; a rule's examples alternate between the
    whole set and the rule alone)."""
    hit = cache.get(id(rs))
    if hit is None or hit[0] is not rs:
        if len(cache) >= 8:
            del cache[next(iter(cache))]
        hit = cache[id(rs)] = (rs, make(rs))
    return hit[1]


@dataclass(frozen=True)
class Example:
    stderr: str
    env: Mapping[str, str] | None = None
    cwd_in_tree: bool | None = None
    program: str | None = None
    message_contains: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class StderrRule:
    id: str
    patterns: tuple[str, ...]
    message: str
    captures: tuple[str, ...] = ()
    tool: str | None = None
    category: str = "annotation"
    env: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cwd_in_tree: bool | None = None
    programs: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    must: tuple[Example, ...] = ()
    must_not: tuple[Example, ...] = ()
    source: str = ""
    line: int = 0
    compiled: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    compiled_captures: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def applies(self, env: Mapping[str, str], cwd_in_tree: bool, programs: Iterable[str]) -> bool:
        for name, values in self.env:
            have = env.get(name)
            if have is None:
                return False
            if "*" in values:
                if not have:
                    return False
            elif have not in values:
                return False
        if self.cwd_in_tree is not None and self.cwd_in_tree != cwd_in_tree:
            return False
        if self.programs and not set(self.programs) & set(programs):
            return False
        return True


@dataclass(frozen=True, slots=True)
class Forge:
    """A code host whose HTTP writes are publishing (config ``forges``)."""

    name: str
    hosts: tuple[str, ...]
    api_paths: tuple[str, ...]  # on any host: ending in / a prefix, else the whole path
    token_paths: tuple[str, ...]  # token endpoints: a POST there asks for a token, it publishes nothing
