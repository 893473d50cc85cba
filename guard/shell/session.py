"""The live real shell's state as guard-shell's sessions (stream and interactive) read it: the
hook's dump of cwd, variables, aliases and functions, and what bash's parser says of a command
that is not finished yet.
"""

from __future__ import annotations

import os

from guard.record import dataclass, field

# What ``bash -n`` says of a command that goes on in the next line.
INCOMPLETE = (
    "unexpected EOF while looking for matching",
    "syntax error: unexpected end of file",
    "delimited by end-of-file",
)


def ends_with_continuation(text: str) -> bool:
    """True when the last line ends in an unescaped backslash (a line continuation)."""
    line = text.rstrip("\n").rsplit("\n", 1)[-1] if text.endswith("\n") else text
    stripped = len(line) - len(line.rstrip("\\"))
    return stripped % 2 == 1


@dataclass
class SessionState:
    """What the live shell looked like after its last command."""

    status: int = 0
    cwd: str = "/"
    variables: dict[str, str] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)
    ps1: str = "$ "
    ps2: str = "> "


def parse_state(raw: bytes) -> SessionState:
    """Decode the hook's dump: NUL-separated records ``TAG\\0field…``."""
    parts = raw.decode("utf-8", "surrogateescape").split("\0")
    st = SessionState()
    i = 0
    n = len(parts)

    def take(k: int) -> list[str]:
        nonlocal i
        got = parts[i : i + k]
        i += k
        return got + [""] * (k - len(got))

    while i < n:
        tag = parts[i]
        i += 1
        if tag == "S":
            (v,) = take(1)
            st.status = int(v) if v.isdigit() else 0
        elif tag == "D":
            (st.cwd,) = take(1)
        elif tag == "V":
            name, value = take(2)
            st.variables[name] = value
        elif tag == "E":
            (name,) = take(1)
            st.exported.add(name)
        elif tag == "A":
            name, value = take(2)
            st.aliases[name] = value
        elif tag == "F":
            name, body = take(2)
            st.functions[name] = body.strip("\n")
        elif tag == "P":
            (st.ps1,) = take(1)
        elif tag == "Q":
            (st.ps2,) = take(1)
    for name in [k for k in st.functions if k.startswith("__guard_")]:
        del st.functions[name]
    for name in [k for k in st.variables if k.startswith("__guard_")]:
        del st.variables[name]
    return st


def context_env(st: SessionState) -> dict[str, str]:
    """Environment for the analysis: the session's exported variables and its shell variables
    (both are expanded on a command line)."""
    env = {k: v for k, v in st.variables.items() if k in st.exported}
    for k, v in st.variables.items():
        env.setdefault(k, v)
    return env


def analysis_env(st: SessionState) -> dict[str, str]:
    """The session's variables, except the guard's own settings (``GUARD_*``): those come from
    the guard's environment, so nothing typed in the session changes the rules or the trees."""
    env = {k: v for k, v in context_env(st).items() if not k.startswith("GUARD_")}
    env.update({k: v for k, v in os.environ.items() if k.startswith("GUARD_")})
    return env
