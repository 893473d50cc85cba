"""Folding a command's varying parts away, so the same intent groups together in a report."""

from __future__ import annotations

import re

from guard.audit.display import clip

_TOKEN = re.compile(
    r"""&&|\|\||[;|&]|(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s;|&'"\\])+|['"].*""",
    re.S,
)
_SUBCOMMANDS = {
    "git": 1, "gh": 2, "glab": 2, "hub": 1, "docker": 1, "kubectl": 1, "aws": 2, "npm": 1,
    "pnpm": 1, "yarn": 1, "pip": 1, "pip3": 1, "uv": 1, "poetry": 1, "cargo": 1, "go": 1,
}  # fmt: skip
# Options that take the next word as their value, per program; the value is folded, and the
# subcommand after it is still recognised (``git -C DIR commit``).
_VALUE_FLAGS = {
    "git": {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"},
    "gh": {"-R", "--repo", "--hostname"},
    "docker": {"-H", "--host", "--context", "--config"},
    "kubectl": {"-n", "--namespace", "--context"},
}
# Programs whose first plain argument is what the command is about (a search pattern).
_KEEP_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "ack"}
_KEYWORDS = {"do", "then", "else", "elif", "if", "while", "until", "time", "!", "{", "(", "for"}
_GIT_GROUPS = {"remote", "submodule", "stash", "worktree", "notes", "bisect", "lfs", "credential"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "su", "eval"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BARE = re.compile(r"^[a-z][a-z0-9-]*$")
_KEEP_ARG = re.compile(r"^(?:~|\$|/proc/|/etc/|/root/\.|[A-Z][A-Z0-9_]{2,}$|GET$|POST$|PUT$|PATCH$|DELETE$)")
_URL = re.compile(r"^['\"]?([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^@/\s]*@)?([^/\s'\"]+)")


def _unquote(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token.lstrip("\\")


def normalise_command(command: str, depth: int = 0) -> str:
    """A command with its varying parts folded, so the same intent groups together.

    Per pipeline or list element: leading ``NAME=value`` assignments kept by name, the program's
    directory dropped, subcommands kept (``git push``, ``gh pr create``), flags kept by name
    (``-X``, ``--data``), URLs cut to scheme and host, variable references, ``~`` paths and
    credential-store paths kept, every other argument folded into ``…``; a ``bash -c`` script is
    normalised in turn.
    """
    parts: list[str] = []
    segment: list[str] = []

    def flush() -> None:
        if segment:
            parts.append(_normalise_segment(segment, depth))
            segment.clear()

    for token in _TOKEN.findall(command):
        if token in ("&&", "||", ";", "|", "&"):
            flush()
            parts.append(token)
        else:
            segment.append(token)
    flush()
    while parts and parts[-1] in ("&&", "||", ";", "|", "&"):
        parts.pop()
    return " ".join(parts) if parts else command.strip()


def _normalise_segment(tokens: list[str], depth: int) -> str:
    words = list(tokens)
    assigns = []
    while words and _ASSIGNMENT.match(words[0]) and len(words) > 1:
        assigns.append(words.pop(0).split("=", 1)[0] + "=…")
    if not words:
        return ""
    program = _unquote(words[0]).rsplit("/", 1)[-1]
    if program in _KEYWORDS and len(words) > 1 and program != "for":
        return " ".join([*assigns, program, _normalise_segment(words[1:], depth)])
    out = [*assigns, program]
    allowed = _SUBCOMMANDS.get(program, 0)
    keep_first = program in _KEEP_FIRST
    value_flags = _VALUE_FLAGS.get(program, set())
    rest = words[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("-"):
            flag = token.split("=", 1)[0]
            if flag not in out:
                out.append(flag)
            i += 1
            if flag in value_flags and "=" not in token and i < len(rest):
                out.append("…")
                i += 1
                continue
            if flag == "-c" and program in _SHELLS and i < len(rest) and depth < 2:
                out.append("'" + normalise_command(_unquote(rest[i]), depth + 1) + "'")
                i += 1
            continue
        bare = _unquote(token)
        if allowed and _BARE.match(bare):
            out.append(bare)
            if program == "git" and bare in _GIT_GROUPS:
                allowed += 1
            allowed -= 1
        else:
            allowed = 0
            url = _URL.match(bare)
            if url:
                out.append(url.group(1) + url.group(2) + "/…" if len(bare) > len(url.group(0)) else bare)
            elif _KEEP_ARG.match(bare) or keep_first:
                out.append(clip(bare, 40))
                keep_first = False
            elif out[-1] != "…":
                out.append("…")
        i += 1
    return " ".join(out)
