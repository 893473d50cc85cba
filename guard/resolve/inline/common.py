"""What every inline analyser shares: the Finding record, the "not a constant" value, the token
variable names and the string helpers. The analysers import this module, never the package.
"""

from __future__ import annotations

import re

from guard.record import dataclass

MAX_SOURCE = 1_000_000  # characters; larger sources are not analysed


class Unknown:
    """The evaluators' "not a constant" value; ``UNK`` is its one instance."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNK"


UNK = Unknown()

# Shell-language command words the string-literal fallbacks look for.
COMMAND_WORDS = ("git", "gh", "hub", "curl", "wget", "http", "https", "xh")


@dataclass(frozen=True)
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
