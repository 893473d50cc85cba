"""Static analysis of inline programs (``python -c``, ``node -e``, ``perl -e`` …).

Pure functions over source text: nothing here runs the program. Each analyser returns
*findings* — programs the code would run, shell strings it would hand to a shell, HTTP requests,
token reads and git-library calls — which the resolver turns into invocations, plus notes on what
it could not determine.

Conventions shared by every analyser:

* ``Finding.argv`` / ``Finding.shell`` / ``Finding.url`` contain ``ir.UNKNOWN`` where a part is
  not a constant.
* ``Finding.cwd`` is ``None`` when the call names no working directory; a directory that is
  named but not constant is ``ir.UNKNOWN``. It may be relative (to the interpreter's cwd).
* ``gitlib`` findings carry, best effort, the equivalent git argv in ``argv`` (``git clone URL
  DEST``, ``git init PATH``, ``git push``) and the repository path in ``cwd`` when known.
* Strings that are only printed, logged or written to files produce no finding.
"""

from __future__ import annotations

from guard.ir import UNKNOWN
from guard.resolve.inline.common import (
    MAX_SOURCE,
    UNK,
    Finding,
    Unknown,
    argv_of_string,
    join_shell,
    looks_like_command,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "Finding",
    "MAX_SOURCE",
    "UNK",
    "UNKNOWN",
    "Unknown",
    "analyze_inline",
    "argv_of_string",
    "join_shell",
    "looks_like_command",
]

# Which program runs which dialect is catalogue data (a program spec's ``inline:``, read by
# ``guard.resolve.inline.launch``); the dialects with no grammar-driven table have analysers here.

# The analysers, each imported on first use (most commands run no inline program).


def _python(lang: str, source: str, args: tuple[str, ...]) -> tuple[list[Finding], list[str]]:
    from guard.resolve.inline.python import analyze_python

    return analyze_python(source, args)


def _node(lang: str, source: str, args: tuple[str, ...]) -> tuple[list[Finding], list[str]]:
    from guard.resolve.inline.node import analyze_node

    return analyze_node(source)


def _oneliner(lang: str, source: str, args: tuple[str, ...]) -> tuple[list[Finding], list[str]]:
    from guard.resolve.inline.oneliners import analyze_oneliner

    return analyze_oneliner(lang, source)


def _tcl(lang: str, source: str, args: tuple[str, ...]) -> tuple[list[Finding], list[str]]:
    from guard.resolve.inline.tcl import analyze_tcl

    return analyze_tcl(source)


def _dialect(table: Mapping[str, object], source: str) -> tuple[list[Finding], list[str]]:
    from guard.resolve.inline.generic import analyze_dialect

    return analyze_dialect(table, source)


_ANALYSERS = {
    "python": _python,
    "node": _node,
    **{lang: _oneliner for lang in ("awk", "r", "julia")},
    "tcl": _tcl,
}


def analyze_inline(
    lang: str, source: str, args: tuple[str, ...] = (), dialects: Mapping[str, Mapping[str, object]] | None = None
) -> tuple[list[Finding], list[str]]:
    """Findings of an inline program and the notes on what stayed unresolved. ``args`` are the
    program's own arguments where the analyser uses them (Python's ``sys.argv``); ``dialects``
    the rule set's dialect tables (rules/dialects/), read by the one tree-sitter analyser.
    Never raises."""
    analyse = _ANALYSERS.get(lang)
    table = dialects.get(lang) if analyse is None and dialects else None
    if analyse is None and table is None:
        return [], [f"{lang}: no analyser for this language"]
    if len(source) > MAX_SOURCE:
        return [], [f"{lang}: source larger than {MAX_SOURCE} characters, not analysed"]
    try:
        return analyse(lang, source, args) if analyse is not None else _dialect(table, source)  # type: ignore[arg-type]
    except RecursionError:
        return [], [f"{lang}: source nested too deeply, not analysed"]
    except Exception as exc:  # noqa: BLE001 - an analyser bug must never break the guard
        return [], [f"{lang}: analysis failed ({type(exc).__name__})"]
