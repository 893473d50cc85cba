"""What a matching refusing rule does: refuse the command, warn (run it and tell the agent the
better route), or observe (run it, tell the agent nothing, record what would have been refused).

The action is data. A rule file gives a rule its own (``action:``, default ``refuse``); an
operator's configuration overrides it per rule id (``rule_actions``), per category
(``category_actions``) or for everything (``mode``, and ``GUARD_MODE`` in the environment,
which beats the config file). The most specific setting wins: a rule id over a category over
the installation's mode over the rule's own action.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from guard.ruleset.model import Rule

ACTIONS = ("refuse", "warn", "observe")  # strongest first
WARNING = "Warning: "  # how a warn's message starts, where a refusal's says "Refused: "
STRENGTH = {a: i for i, a in enumerate(ACTIONS)}


def mode_of(env_mode: str | None) -> tuple[str | None, str | None]:
    """``GUARD_MODE`` as given: (the mode, None), or (None, a one-line note) when it names no action."""
    if not env_mode:
        return None, None
    mode = env_mode.strip().lower()
    if mode in STRENGTH:
        return mode, None
    return None, f"GUARD_MODE={env_mode!r} is not one of {', '.join(ACTIONS)}; ignored"


def effective(rule: Rule, config: Mapping[str, Any], env_mode: str | None) -> tuple[str, str]:
    """(the action, where it comes from) for a refusing ``rule`` under ``config`` and the
    environment's mode (already checked by ``mode_of``)."""
    rid, cat = rule.id, rule.category
    by_rule = config.get("rule_actions") or {}
    if rid in by_rule:
        return by_rule[rid], f"config rule_actions[{rid}]"
    by_cat = config.get("category_actions") or {}
    if cat in by_cat:
        return by_cat[cat], f"config category_actions[{cat}]"
    if env_mode:
        return env_mode, "GUARD_MODE"
    if config.get("mode"):
        return config["mode"], "config mode"
    if rule.action:
        return rule.action, "the rule's own action"
    return "refuse", "the default"
