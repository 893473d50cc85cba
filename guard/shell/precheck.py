"""A quick test that lets commands which cannot matter skip the analysis.

guard-shell pays for every command; most are ``ls``, ``cat file``, ``pytest -q``. A command
passes the pre-check only when it is one plain simple command — no quoting, expansion, redirect,
pipe, list, substitution or glob-to-home — whose program is on the rule set's pre-check list and
whose words mention none of the fragments the rule set watches. Anything else gets the full
analysis. ``tests/shell/test_precheck.py`` proves it changes no verdict on every labelled fixture and
on every rule's examples.

The list and the fragments are not kept here: they are derived from the compiled rule set
(``config.precheck``, less every program a rule names) and handed over as a ``Plan``. The shell
finds the plan of its rule files in the cache (``guard.system.planfile.current_plan``), where loading the rule set put
it; when the rule files changed since, there is no plan and every command gets the analysis.

Imports next to nothing: it runs before guard loads its parser.
"""

# No `from __future__ import annotations`: it imports the __future__ module, a file read on the
# plain path; annotations naming typing-only types are strings instead.
from guard.system.planfile import Plan, current_plan, environ

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc costs ~2 ms on the path this module exists to keep short
    from collections.abc import Container, Mapping

MAX_LEN = 2048

# Characters a plain word may hold: no quotes, $, backslash, backtick, ;&|<>(){}[]~!# or newline.
SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_./=:,+@%^*?")


def trivially_allowed(
    command: str,
    env: "Mapping[str, str] | None" = None,
    shadowed: "Container[str]" = (),
    plan: Plan | None = None,
) -> bool:
    """True only for commands the full analysis would certainly allow.

    ``plan`` comes from the rule set (default: the cached plan of the rule files ``env`` names;
    none cached, nothing passes). ``env`` is checked for an exported bash function of the
    program's name; ``shadowed`` holds the alias and function names of a live session — either
    makes a plain name mean more.
    """
    if not command or len(command) > MAX_LEN:
        return False
    if not SAFE_CHARS.issuperset(command):
        return False
    words = command.split()
    if not words:
        return False
    first = words[0]
    if "/" in first or "=" in first or first in shadowed:
        return False
    if plan is None:
        plan = current_plan(environ() if env is None else env)
        if plan is None:
            return False
    if first not in plan.programs:
        return False
    if env is not None and f"BASH_FUNC_{first}%%" in env:
        return False
    lowered = command.lower()
    if any(w in lowered for w in plan.watched):
        return False
    # a glob may expand to a credential store (cat /root/.n?trc): only plain names in the cwd
    return not any(("*" in w or "?" in w) and (w[0] in "./" or "/" in w) for w in words)
