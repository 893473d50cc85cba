"""A quick test that lets commands which cannot matter skip the analysis.

guard-shell pays for every command; most are ``ls``, ``cat file``, ``pytest -q``. A command
passes the pre-check only when it is one plain simple command — no quoting, expansion, redirect,
pipe, list, substitution or glob-to-home — whose program is on a short list of programs that run
nothing else and whose words mention nothing any rule looks at. Anything else gets the full
analysis. ``tests/test_precheck.py`` proves it changes no verdict on every labelled fixture.

Imports next to nothing: it runs before guard loads its parser.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc costs ~2 ms on the path this module exists to keep short
    from collections.abc import Container, Mapping

MAX_LEN = 2048

# Programs that neither run another program nor write where a rule looks (no cp/mv/ln: they can
# copy a repository in; no env/printenv/set: they can dump the environment; no sed, sort, rg,
# less: `sed 1e CMD`, `sort --compress-program`, `rg --pre` and `less` run programs).
SAFE_PROGRAMS = frozenset(
    {
        "ls", "pwd", "cat", "head", "tail", "wc", "echo", "printf", "true", "false", "date", "whoami",
        "id", "uname", "mkdir", "rmdir", "touch", "rm", "test", "sleep", "pytest", "uniq", "diff",
        "cmp", "tree", "nproc", "free", "df", "du", "stat", "file", "basename", "dirname", "realpath",
        "readlink", "grep", "egrep", "fgrep", "cut", "tr", "seq", "hostname", "clear", "cd",
        "nl", "which", "type", "cal", "ps", "uptime", "md5sum", "sha256sum", "od",
    }
)

# Characters a plain word may hold: no quotes, $, backslash, backtick, ;&|<>(){}[]~!# or newline.
SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_./=:,+@%^*?")

# Word fragments that some rule or fact looks at (git, gh, HTTP, tokens, credential stores).
WATCHED = ("git", "gh", "http", "curl", "wget", "token", "secret", "cred", "netrc", "environ", "pat",
           "auth", "key", "passw", "hosts.yml", "proc")


def trivially_allowed(
    command: str,
    env: Mapping[str, str] | None = None,
    shadowed: Container[str] = (),
) -> bool:
    """True only for commands the full analysis would certainly allow.

    ``env`` is checked for an exported bash function of the program's name; ``shadowed`` holds
    the alias and function names of a live session — either makes a plain name mean more.
    """
    if not command or len(command) > MAX_LEN:
        return False
    if not SAFE_CHARS.issuperset(command):
        return False
    words = command.split()
    if not words:
        return False
    first = words[0]
    if "/" in first or "=" in first or first not in SAFE_PROGRAMS or first in shadowed:
        return False
    if env is not None and f"BASH_FUNC_{first}%%" in env:
        return False
    lowered = command.lower()
    if any(w in lowered for w in WATCHED):
        return False
    # a glob may expand to a credential store (cat /root/.n?trc): only plain names in the cwd
    return not any(("*" in w or "?" in w) and (w[0] in "./" or "/" in w) for w in words)
