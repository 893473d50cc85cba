"""Folding a command's varying parts away, so the same intent groups together in a report."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from guard.text.display import clip

_TOKEN = re.compile(
    r"""&&|\|\||[;|&]|(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s;|&'"\\])+|['"].*""",
    re.S,
)
# Where a program's subcommand and action sit and which options take a value come from the rule
# set's program specs (rules/programs/*.yaml, through guard.audit.reports.ruleset): a program without a
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

    A report folds many commands that differ in their last word only (a branch, a file, a
    message): what the words before it leave behind is kept for the next command with the same
    words before its last (``_AFTER``), so only the last word is read again.
    """
    if specs is None:
        from guard.audit.reports.ruleset import program_specs

        specs = program_specs()
    head, _, last = command.rpartition(" ")
    if depth or not head or not _SIMPLE_WORD.fullmatch(last):
        return _normalise(command, depth, specs)
    known = _AFTER.get(head)
    if known is None or known[0] is not specs:
        state = _state_after(head, specs)
        known = (specs, state, None if state is None else _folded_result(*state))
        if len(_AFTER) >= _AFTER_MAX:
            _AFTER.clear()
        _AFTER[head] = known
    _, state, folded = known
    if state is None:
        return _normalise(command, depth, specs)
    parts, words = state
    if folded is not None and (words.pending == "value" or not _kept_alone(words, last)):
        return folded
    return " ".join([*parts, words.result_with(last)])


def _kept_alone(words: _Words, last: str) -> bool:
    """Whether a simple last word read after ``words`` is kept in the form (a flag, a subcommand
    or action, an argument kept as it is), rather than folded into ``…``: what ``_Words.feed``
    decides for a word with no quote, backslash or slash (never a URL)."""
    return last[0] == "-" or bool(words.allowed and _BARE.match(last)) or bool(_KEEP_ARG.match(last))


def _folded_result(parts: list[str], words: _Words) -> str | None:
    """The form of every command made of these words and one simple last word that folds into
    ``…`` (the same string whatever the word), or None when the last word decides (a ``-c``
    script, or a program whose first argument is kept). A fleet's commands differ mostly in such
    a word (a branch, a file): most are then folded by a lookup."""
    if words.pending == "script" or (words.pending is None and words.keep_first):
        return None
    return " ".join([*parts, words.result_with("0")])


# A last word read on its own: nothing in it joins it to the words before (quotes, a backslash,
# an operator) or makes it a script.
_SIMPLE_WORD = re.compile(r"[A-Za-z0-9_.,:@%+=^-]+")
_AFTER: dict[str, tuple[Mapping[str, Any], tuple[list[str], _Words] | None, str | None]] = {}
_AFTER_MAX = 100_000


def _state_after(head: str, specs: Mapping[str, Any]) -> tuple[list[str], _Words] | None:
    """The parts before the last list element of ``head + " WORD"`` and what that element's words
    leave behind, when a simple last word is one more argument of a program already named
    (else None)."""
    tokens = _TOKEN.findall(head)
    if _TOKEN.findall(head + " x") != [*tokens, "x"]:
        return None
    parts, segment = _split(tokens)
    if not segment:
        return None
    words = _Words.start(segment, 0, specs)
    if words is None or _ASSIGNMENT.match(segment[words.used - 1]) or words.program in _KEYWORDS:
        return None  # the next word could still be an assignment or start the keyword's command
    for token in segment[words.used :]:
        words.feed(token)
    return [_normalise_segment(p, 0, specs) if isinstance(p, list) else p for p in parts], words


def _split(tokens: list[str]) -> tuple[list[list[str] | str], list[str]]:
    """The list elements and operators before the last element, and the last element's words."""
    parts: list[list[str] | str] = []
    segment: list[str] = []
    for token in tokens:
        if token in ("&&", "||", ";", "|", "&"):
            if segment:
                parts.append(segment)
                segment = []
            parts.append(token)
        else:
            segment.append(token)
    return parts, segment


def _normalise(command: str, depth: int, specs: Mapping[str, Any]) -> str:
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
    words = _Words.start(tokens, depth, specs)
    if words is None:  # assignments only, or a keyword before a command
        assigns = []
        rest = list(tokens)
        while rest and _ASSIGNMENT.match(rest[0]) and len(rest) > 1:
            assigns.append(rest.pop(0).split("=", 1)[0] + "=…")
        if not rest:
            return ""
        program = _unquote(rest[0]).rsplit("/", 1)[-1]
        return " ".join([*assigns, program, _normalise_segment(rest[1:], depth, specs)])
    for token in tokens[words.used :]:
        words.feed(token)
    return words.result()


class _Words:
    """One list element's words read so far: what is kept of them, and what the next word means
    (a subcommand or action still allowed, an option's value, a ``-c`` script)."""

    __slots__ = ("out", "used", "depth", "specs", "program", "spec", "allowed", "sub", "keep_first",
                 "value_flags", "pending")  # fmt: skip

    @classmethod
    def start(cls, tokens: list[str], depth: int, specs: Mapping[str, Any]) -> _Words | None:
        """The words up to the program's name read; None when there is no program (assignments
        only) or it is a keyword (``if``, ``time``…) before another command."""
        from guard.ruleset.programs import spec_for

        i = 0
        assigns = []
        while i < len(tokens) - 1 and _ASSIGNMENT.match(tokens[i]):
            assigns.append(tokens[i].split("=", 1)[0] + "=…")
            i += 1
        if i >= len(tokens):
            return None
        program = _unquote(tokens[i]).rsplit("/", 1)[-1]
        if program in _KEYWORDS and len(tokens) - i > 1 and program != "for":
            return None
        w = cls()
        w.out = [*assigns, program]
        w.used = i + 1
        w.depth = depth
        w.specs = specs
        w.program = program
        spec, _ = spec_for(program, specs)
        w.spec = spec
        w.allowed = 1 if spec is not None and spec.subcommand else 0  # bare words still kept
        w.sub = None
        w.keep_first = program in _KEEP_FIRST
        w.value_flags = spec.global_with_value if spec is not None else frozenset()
        w.pending = None
        return w

    def feed(self, token: str) -> None:
        out = self.out
        if self.pending is not None:
            pending, self.pending = self.pending, None
            if pending == "value":
                out.append("…")
            else:
                out.append("'" + normalise_command(_unquote(token), self.depth + 1, self.specs) + "'")
            return
        if token.startswith("-"):
            flag = token.split("=", 1)[0]
            if flag not in out:
                out.append(flag)
            if flag in self.value_flags and "=" not in token:
                self.pending = "value"
            elif flag == "-c" and self.program in _SHELLS and self.depth < 2:
                self.pending = "script"
            return
        bare = _unquote(token)
        spec = self.spec
        if self.allowed and _BARE.match(bare):
            out.append(bare)
            self.allowed -= 1
            if self.sub is None and spec is not None:
                self.sub = bare
                self.value_flags = spec.option_values(bare)
                names_action = spec.what_action
                self.allowed += names_action is True or (not isinstance(names_action, bool) and bare in names_action)
        else:
            self.allowed = 0
            url = _URL.match(bare)
            if url:
                out.append(url.group(1) + url.group(2) + "/…" if len(bare) > len(url.group(0)) else bare)
            elif _KEEP_ARG.match(bare) or self.keep_first:
                out.append(clip(bare, 40))
                self.keep_first = False
            elif out[-1] != "…":
                out.append("…")

    def result(self) -> str:
        return " ".join(self.out)

    def result_with(self, token: str) -> str:
        """The result with ``token`` read last, leaving these words as they were."""
        saved = (len(self.out), self.allowed, self.sub, self.keep_first, self.value_flags, self.pending)
        try:
            self.feed(token)
            return " ".join(self.out)
        finally:
            n, self.allowed, self.sub, self.keep_first, self.value_flags, self.pending = saved
            del self.out[n:]
