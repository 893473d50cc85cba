"""Does a rule's ``match:`` block hold for an invocation's facts?

Keys with special meaning: ``program``, ``subcommand``, ``action`` (a value or a list; ``null``
in a list means "none given"), ``flags_any``, ``flags_all``, ``flags_none``, ``has_args``,
``args_match`` (a substring any operand contains), ``http_path_has``, ``has`` / ``lacks`` (facts
given / not given: ``has: files``). Every other key compares
the fact of that name with a value or a list of values.

A fact of ``"unknown"`` where the rule wants ``"tree"`` matches *provisionally*: the caller
decides whether an unknown path is enough to refuse (it is for writes, docs/behaviour.md §9.11).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any


SPECIAL = frozenset({"flags_any", "flags_all", "flags_none", "has_args", "args_match", "http_path_has", "has", "lacks"})


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


def match(cond: dict[str, Any], facts: dict[str, Any]) -> str | None:
    """``"yes"``, ``"unknown"`` (held only if an unknown path is taken as in the tree) or None."""
    return match_compiled(compile_cond(cond), facts)


def compile_cond(cond: dict[str, Any]) -> tuple[tuple[str, bool, Any], ...]:
    """``cond`` as ``(key, special, wants)`` checks for ``match_compiled``, built once per rule.

    The classifier tries about ten rules per invocation, so it compiles each rule's condition
    once per rule set instead of on every call.
    """
    return tuple((key, True, want) if key in SPECIAL else (key, False, tuple(_as_list(want)))
                 for key, want in cond.items())


def match_compiled(checks: tuple[tuple[str, bool, Any], ...], facts: dict[str, Any]) -> str | None:
    """``match`` for a condition compiled by ``compile_cond``; the same answers."""
    unknown = False
    for key, special, wants in checks:
        if special:
            if not _special(key, wants, facts):
                return None
            continue
        have = facts.get(key)
        if have in wants:
            continue
        if have == "unknown" and "tree" in wants:
            unknown = True
            continue
        return None
    return "unknown" if unknown else "yes"


def _special(key: str, want: Any, facts: dict[str, Any]) -> bool:
    flags = facts.get("flags") or set()
    if key == "flags_any":
        return any(f in flags for f in _as_list(want))
    if key == "flags_all":
        return all(f in flags for f in _as_list(want))
    if key == "flags_none":
        return not any(f in flags for f in _as_list(want))
    if key == "has_args":
        return bool(facts.get("args")) == bool(want)
    if key == "args_match":
        return any(str(w) in a for w in _as_list(want) for a in facts.get("args") or [])
    if key == "has":  # every one of these facts is given (and not empty)
        return all(facts.get(w) for w in _as_list(want))
    if key == "lacks":
        return not any(facts.get(w) for w in _as_list(want))
    if key == "http_path_has":
        return any(str(w) in (facts.get("http_path") or "") for w in _as_list(want))
    return False
