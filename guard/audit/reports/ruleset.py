"""The rule set as ``guard audit`` sees it: loaded once through ``guard.ruleset.load``, its loader's
warnings kept out of the report (``guard rules lint`` is where they belong).

Two things come from it and from nowhere else: the ids of the rules that can write a record
(for "never fired"), and the program specs (``rules/programs/*.yaml``) that say where a
program's subcommand and action sit and which options take a value (for folding commands).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


def _quietly(fn: Callable[[], T]) -> T:
    """``fn()`` with fd 2 and ``sys.stderr`` pointed away (the loader may write to fd 2)."""
    saved = None
    try:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            saved = None
        with contextlib.redirect_stderr(io.StringIO()):
            return fn()
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


@cache
def _rule_set() -> Any:
    """The loaded rule set, or None when it cannot be loaded."""
    from guard.context import Context
    from guard.engine import rules_for

    try:
        return _quietly(lambda: rules_for(Context.from_environ()))
    except Exception:
        return None


def rule_ids() -> list[str] | None:
    """The ids of the rules that write a record (command rules other than allow rules, and
    stderr annotation rules); None when the rule set cannot be loaded."""
    rs = _rule_set()
    if rs is None:
        return None
    ids = {r.id for r in rs.rules if r.id and r.verdict != "allow"}
    ids.update(str(a["id"]) for a in rs.annotations)  # annotations write records too
    return sorted(ids) or None


@cache
def program_specs() -> Mapping[str, Any]:
    """The rule set's program specs, compiled (``guard.ruleset.programs.Spec``), by program."""
    from guard.ruleset.programs import compile_specs

    rs = _rule_set()
    if rs is None:
        return {}
    try:
        return compile_specs(rs.programs)
    except Exception:
        return {}
