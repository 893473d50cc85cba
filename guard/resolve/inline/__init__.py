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

from guard.ir import UNKNOWN  # noqa: F401 - re-exported for analysers
from guard.record import dataclass

__all__ = [
    "Finding",
    "INTERPRETERS",
    "TOKEN_VARS",
    "MAX_SOURCE",
    "UNK",
    "Unknown",
    "analyze_inline",
    "interpreter_lang",
]

MAX_SOURCE = 1_000_000  # characters; larger sources are not analysed


class Unknown:
    """The evaluators' "not a constant" value; ``UNK`` is its one instance."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNK"


UNK = Unknown()

TOKEN_VARS = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_PAT",
        "GIT_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
    }
)

# Shell-language command words the string-literal fallbacks look for.
COMMAND_WORDS = ("git", "gh", "hub", "curl", "wget", "http", "https", "xh")


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # "argv" | "shell" | "http" | "token" | "gitlib"
    argv: tuple[str, ...] = ()
    shell: str = ""
    cwd: str | None = None
    method: str = ""
    url: str = ""
    body: str | None = None
    var: str = ""
    op: str = ""
    detail: str = ""
    line: int = 0


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
}

_VERSIONED = re.compile(r"(python|pypy|perl|ruby|php|node)(\d+(\.\d+)*)?$")


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


def analyze_inline(lang: str, source: str) -> tuple[list[Finding], list[str]]:
    """Findings of an inline program and the notes on what stayed unresolved. Never raises."""
    if lang not in {"python", "node", "perl", "ruby", "php", "awk"}:
        return [], [f"{lang}: no analyser for this language"]
    if len(source) > MAX_SOURCE:
        return [], [f"{lang}: source larger than {MAX_SOURCE} characters, not analysed"]
    try:
        if lang == "python":
            from guard.resolve.inline.python import analyze_python

            return analyze_python(source)
        if lang == "node":
            from guard.resolve.inline.node import analyze_node

            return analyze_node(source)
        from guard.resolve.inline.oneliners import analyze_oneliner

        return analyze_oneliner(lang, source)
    except RecursionError:
        return [], [f"{lang}: source nested too deeply, not analysed"]
    except Exception as exc:  # noqa: BLE001 - an analyser bug must never break the guard
        return [], [f"{lang}: analysis failed ({type(exc).__name__})"]


def argv_of_string(text: str) -> tuple[str, ...]:
    """Split a command string the way a program would without a shell (shlex, lenient)."""
    import shlex

    try:
        return tuple(shlex.split(text))
    except ValueError:
        return tuple(text.split())


def join_shell(argv: tuple[str, ...] | list[str]) -> str:
    """Quote an argv as one shell string (for list forms handed to a shell)."""
    import shlex

    return shlex.join(argv)


_CMD_RE = re.compile(
    r"(?:^|[;&|(]\s*|&&\s*|\|\|\s*)(?:sudo\s+|exec\s+|command\s+|env\s+)?(?:\S*/)?(?:"
    + "|".join(COMMAND_WORDS)
    + r")(?:\s|$)"
)


def looks_like_command(text: str) -> bool:
    """A string literal that reads like a git/gh/curl … command line (for fallback scans)."""
    return bool(_CMD_RE.search(text.strip()))
