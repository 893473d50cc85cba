"""Folding a command's varying parts away, so the same intent groups together in a report."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from guard.audit.display import clip

_TOKEN = re.compile(
    r"""&&|\|\||[;|&]|(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s;|&'"\\])+|['"].*""",
    re.S,
)
# Where a program's subcommand and action sit and which options take a value come from the rule
# set's program specs (rules/programs/*.yaml, through guard.audit.ruleset): a program without a
# spec has no subcommand here either. The words are split by the pattern above rather than by
# guard.parse: the parser costs about 90 µs a command against 12 µs here, and a ten-million-record
# fleet holds about a million distinct refused commands.
_KEEP_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "ack"}
_KEYWORDS = {"do", "then", "else", "elif", "if", "while", "until", "time", "!", "{", "(", "for"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "su", "eval"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BARE = re.compile(r"^[a-z][a-z0-9-]*$")
_KEEP_ARG = re.compile(r"^(?:~|\$|/proc/|/etc/|/root/\.|[A-Z][A-Z0-9_]{2,}$|GET$|POST$|PUT$|PATCH$|DELETE$)")
_URL = re.compile(r"^['\"]?([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^@/\s]*@)?([^/\s'\"]+)")


def _unquote(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token.lstrip("\\")


def normalise_command(command: str, depth: int = 0, specs: Mapping[str, Any] | None = None) -> str:
    """A command with its varying parts folded, so the same intent groups together.

    Per pipeline or list element: leading ``NAME=value`` assignments kept by name, the program's
    directory dropped, the subcommand kept, and its action where the program's spec says the
    action names what the command does (``git push``, ``git remote add``, ``gh pr create``);
    the values of the options the spec says take one folded; flags kept by name
    (``-X``, ``--data``), URLs cut to scheme and host, variable references, ``~`` paths and
    credential-store paths kept, every other argument folded into ``…``; a ``bash -c`` script is
    normalised in turn.
    """
    if specs is None:
        from guard.audit.ruleset import program_specs

        specs = program_specs()
    parts: list[str] = []
    segment: list[str] = []

    def flush() -> None:
        if segment:
            parts.append(_normalise_segment(segment, depth, specs))
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


def _normalise_segment(tokens: list[str], depth: int, specs: Mapping[str, Any]) -> str:
    from guard.policy.programs import spec_for

    words = list(tokens)
    assigns = []
    while words and _ASSIGNMENT.match(words[0]) and len(words) > 1:
        assigns.append(words.pop(0).split("=", 1)[0] + "=…")
    if not words:
        return ""
    program = _unquote(words[0]).rsplit("/", 1)[-1]
    if program in _KEYWORDS and len(words) > 1 and program != "for":
        return " ".join([*assigns, program, _normalise_segment(words[1:], depth, specs)])
    out = [*assigns, program]
    spec, _ = spec_for(program, specs)
    allowed = 1 if spec is not None and spec.subcommand else 0  # bare words still kept
    sub: str | None = None
    keep_first = program in _KEEP_FIRST
    value_flags = spec.global_with_value if spec is not None else frozenset()
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
                out.append("'" + normalise_command(_unquote(rest[i]), depth + 1, specs) + "'")
                i += 1
            continue
        bare = _unquote(token)
        if allowed and _BARE.match(bare):
            out.append(bare)
            allowed -= 1
            if sub is None and spec is not None:
                sub = bare
                value_flags = spec.option_values(sub)
                names_action = spec.what_action
                allowed += names_action is True or (not isinstance(names_action, bool) and sub in names_action)
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
