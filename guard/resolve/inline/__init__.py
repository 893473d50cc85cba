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

import re

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

__all__ = [
    "Finding",
    "INTERPRETERS",
    "MAX_SOURCE",
    "UNK",
    "UNKNOWN",
    "Unknown",
    "analyze_inline",
    "argv_of_string",
    "interpreter_lang",
    "join_shell",
    "looks_like_command",
]

INTERPRETERS: dict[str, str] = {
    "python": "python",
    "python2": "python",
    "python3": "python",
    "pypy": "python",
    "pypy3": "python",
    **{f"python3.{n}": "python" for n in range(6, 16)},
    "python2.7": "python",
    **{f"pypy3.{n}": "python" for n in range(6, 16)},
    "node": "node",
    "nodejs": "node",
    "bun": "node",
    "deno": "node",
    "perl": "perl",
    "ruby": "ruby",
    "php": "php",
    "awk": "awk",
    "gawk": "awk",
    "mawk": "awk",
    "nawk": "awk",
    "busybox-awk": "awk",
    "lua": "lua",
    "luajit": "lua",
    **{f"lua5.{n}": "lua" for n in range(1, 5)},
    "tclsh": "tcl",
    "wish": "tcl",
    "expect": "tcl",
    "R": "r",
    "Rscript": "r",
    "julia": "julia",
}

_VERSIONED = re.compile(r"(python|pypy|perl|ruby|php|node|lua|tclsh)(\d+(\.\d+)*)?$")


def interpreter_lang(program: str) -> str | None:
    """The inline language of a program basename, including versioned names (``perl5.36``)."""
    name = program.rsplit("/", 1)[-1]
    if name.endswith(".exe"):
        name = name[:-4]
    if name in INTERPRETERS:
        return INTERPRETERS[name]
    m = _VERSIONED.match(name)
    if m:
        return INTERPRETERS.get(m.group(1))
    return None


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


_ANALYSERS = {
    "python": _python,
    "node": _node,
    **{lang: _oneliner for lang in ("perl", "ruby", "php", "awk", "lua", "r", "julia")},
    "tcl": _tcl,
}


def analyze_inline(lang: str, source: str, args: tuple[str, ...] = ()) -> tuple[list[Finding], list[str]]:
    """Findings of an inline program and the notes on what stayed unresolved. ``args`` are the
    program's own arguments where the analyser uses them (Python's ``sys.argv``). Never raises."""
    analyse = _ANALYSERS.get(lang)
    if analyse is None:
        return [], [f"{lang}: no analyser for this language"]
    if len(source) > MAX_SOURCE:
        return [], [f"{lang}: source larger than {MAX_SOURCE} characters, not analysed"]
    try:
        return analyse(lang, source, args)
    except RecursionError:
        return [], [f"{lang}: source nested too deeply, not analysed"]
    except Exception as exc:  # noqa: BLE001 - an analyser bug must never break the guard
        return [], [f"{lang}: analysis failed ({type(exc).__name__})"]
