"""Tcl and expect programs (``tclsh``, ``expect -c``): the commands that start programs.

Tcl's own rules are small enough to follow exactly: a script is commands separated by newlines
and semicolons, a command is words, a word is braced (literal), quoted or bare, and ``$name``,
``${name}``, ``[script]`` and backslashes are substituted in quoted and bare words. What runs a
program: ``exec`` (an argv, split at ``|`` into a pipeline, redirections dropped), ``open "|cmd"``,
expect's ``spawn`` (an argv) and ``system`` (a shell command line). ``set`` of a constant is
followed; ``[list …]``/``[concat …]`` are evaluated; any other command substitution is analysed
and its value is unknown. Braced words given to commands other than data commands (``puts``,
``set``, ``list`` …) are analysed as scripts too: ``if``/``foreach``/``proc``/``catch`` bodies and
expect's pattern bodies are braced scripts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from guard.ir import UNKNOWN
from guard.resolve.inline.common import Finding

# Literal patterns, compiled at import (before the analysis server forks its workers).
_TCL_LEVEL = re.compile(r"#?\d+")


MAX_FINDINGS = 1_000
MAX_DEPTH = 40
MAX_WORDS = 200_000

# Commands whose braced words are data, not scripts.
_DATA = frozenset({"set", "puts", "list", "lappend", "lset", "dict", "string", "regexp", "regsub", "format",
                   "append", "send", "send_user", "send_error", "return", "lindex", "lrange", "llength", "split",
                   "join", "expr", "incr", "array", "variable", "global", "upvar", "unset", "info", "binary",
                   "scan", "subst", "file", "glob", "lsearch", "lsort", "lreplace", "linsert", "concat", "error",
                   "log_user", "exp_send", "match_max", "package", "encoding", "clock", "interp", "trace"})
_REDIRECT = re.compile(r"^(?:2>@1|>&|>>&|2>>|2>|>>|>|<<|<@|<|>@|2>@|>>@|>&@)")
_VAR = re.compile(r"\$(?:\{([^}]*)\}|((?:::)?\w+(?:::\w+)*))(\([^)]*\))?")
_SPAWN_VALUE_OPTS = {"-ignore", "-open"}
_BACKSLASH = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class _Reader:
    def __init__(self) -> None:
        self.vars: dict[str, str] = {}
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.words = 0

    def note(self, text: str) -> None:
        msg = f"tcl: {text}"
        if msg not in self.notes:
            self.notes.append(msg)

    def add(self, f: Finding) -> None:
        if f not in self.findings and len(self.findings) < MAX_FINDINGS:
            self.findings.append(f)

    # ------------------------------------------------------------------ parsing

    def script(self, src: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            self.note("script nested too deeply, not analysed")
            return
        for words in self.commands(src, depth):
            self.command(words, depth)

    def commands(self, src: str, depth: int) -> Iterator[list[tuple[str, str]]]:
        """The commands of a script, each a list of (kind, value) words: kind "brace" for a braced
        word (value literal), "expand" for ``{*}…``, "word" otherwise (value substituted). One at a
        time, as Tcl does: a ``set`` takes effect before the next command is substituted."""
        i, n = 0, len(src)
        words: list[tuple[str, str]] = []
        while i < n:
            c = src[i]
            if c in " \t\r\f\v" or (c == "\\" and src.startswith("\\\n", i)):
                i += 2 if c == "\\" else 1
                continue
            if c in "\n;":
                if words:
                    yield words
                    words = []
                i += 1
                continue
            if c == "#" and not words:
                while i < n and src[i] != "\n":
                    i += 2 if src[i] == "\\" else 1
                continue
            self.words += 1
            if self.words > MAX_WORDS:
                raise OverflowError
            kind = "word"
            if src.startswith("{*}", i) and i + 3 < n and src[i + 3] not in " \t\n;":
                kind, i = "expand", i + 3
                c = src[i]
            if c == "{":
                body, i = _braced(src, i + 1)
                words.append(("brace" if kind == "word" else kind, body))
                continue
            if c == '"':
                value, i = self.subst(src, i + 1, '"', depth)
            else:
                value, i = self.subst(src, i, None, depth)
            words.append((kind, value))
        if words:
            yield words

    def subst(self, src: str, i: int, close: str | None, depth: int) -> tuple[str, int]:
        """A quoted (close '"') or bare word from src[i] with its substitutions done."""
        out: list[str] = []
        n = len(src)
        while i < n:
            c = src[i]
            if close is not None and c == close:
                return "".join(out), i + 1
            if close is None and c in " \t\r\f\v\n;":
                break
            if c == "\\" and i + 1 < n:
                e = src[i + 1]
                out.append(_BACKSLASH.get(e, " " if e == "\n" else e))
                i += 2
                continue
            if c == "$":
                m = _VAR.match(src, i)
                if m:
                    name = m.group(1) if m.group(1) is not None else m.group(2)
                    out.append(UNKNOWN if m.group(3) else self.vars.get(name, UNKNOWN))
                    i = m.end()
                    continue
            if c == "[":
                body, i = _bracketed(src, i + 1)
                out.append(self.substitution(body, depth + 1))
                continue
            out.append(c)
            i += 1
        return "".join(out), i

    def substitution(self, body: str, depth: int) -> str:
        """The value of ``[body]``: evaluated for ``list``/``concat``, else analysed and unknown."""
        cmds = list(self.commands(body, depth))
        if len(cmds) == 1 and cmds[0] and cmds[0][0][1] in {"list", "concat"}:
            values = self.values(cmds[0][1:])
            if cmds[0][0][1] == "list":
                return " ".join(_list_elem(v) for v in values)
            return " ".join(v.strip() for v in values)
        for words in cmds:
            self.command(words, depth)
        return UNKNOWN

    def values(self, words: list[tuple[str, str]]) -> list[str]:
        out: list[str] = []
        for kind, v in words:
            if kind == "expand":
                out.extend(_split_list(v))
            else:
                out.append(v)
        return out

    # ------------------------------------------------------------------ commands

    def command(self, words: list[tuple[str, str]], depth: int) -> None:
        name = words[0][1]
        args = self.values(words[1:])
        if name == "set" and len(args) == 2:
            self.vars[args[0]] = args[1]
        elif name == "exec":
            self.exec_args(args, "exec")
        elif name in {"spawn", "exp_spawn"}:
            i = 0
            while i < len(args) and args[i].startswith("-"):
                i += 2 if args[i] in _SPAWN_VALUE_OPTS else 1
            self.argv(tuple(args[i:]), name)
        elif name == "system":
            self.shell(" ".join(args), "system")
        elif name == "open" and args and args[0].startswith("|"):
            self.exec_args(_split_list(args[0][1:]), "open |")
        elif name in {"eval", "uplevel", "namespace"} and args:
            rest = args[1:] if name == "uplevel" and _TCL_LEVEL.fullmatch(args[0]) else args
            if name == "namespace":
                rest = args[2:] if args[0] == "eval" else []
            self.script(" ".join(rest), depth + 1)
            return
        if name not in _DATA:
            for kind, v in words[1:]:
                if kind == "brace":
                    self.script(v, depth + 1)

    def exec_args(self, args: list[str], name: str) -> None:
        i = 0
        while i < len(args) and args[i] in {"-ignorestderr", "-keepnewline", "--"}:
            i += 1
            if args[i - 1] == "--":
                break
        seg: list[str] = []
        rest = args[i:]
        if rest and rest[-1] == "&":
            rest = rest[:-1]
        skip = False
        for a in [*rest, "|"]:
            if skip:
                skip = False
                continue
            if a in {"|", "|&"}:
                if seg:
                    self.argv(tuple(seg), name)
                seg = []
                continue
            m = _REDIRECT.match(a)
            if m:
                skip = m.end() == len(a) and a != "2>@1"
                continue
            seg.append(a)

    def argv(self, argv: tuple[str, ...], name: str) -> None:
        if not argv:
            self.note(f"{name} without a program")
            return
        if argv[0] == UNKNOWN:
            self.note(f"{name} program not constant")
        self.add(Finding(kind="argv", argv=argv, detail=f"tcl {name}"))

    def shell(self, text: str, name: str) -> None:
        if not text.strip(UNKNOWN + " "):
            self.note(f"{name} argument not constant")
            return
        self.add(Finding(kind="shell", shell=text, detail=f"tcl {name}"))


def _braced(src: str, i: int) -> tuple[str, int]:
    """A braced word's body from src[i] (after '{') to its matching '}'."""
    return _matching(src, i, "{", "}")


def _bracketed(src: str, i: int) -> tuple[str, int]:
    """A command substitution's script from src[i] (after '[') to its matching ']': braced words
    and quoted strings inside it are skipped whole."""
    return _matching(src, i, "[", "]")


def _matching(src: str, i: int, open_ch: str, close_ch: str) -> tuple[str, int]:
    depth, j, n = 1, i, len(src)
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if open_ch == "[" and c == "{":
            _, j = _braced(src, j + 1)
            continue
        if open_ch == "[" and c == '"':
            j += 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return src[i:j], j + 1
        j += 1
    return src[i:], n


def _split_list(text: str) -> list[str]:
    """A Tcl list's elements (braces and quotes group, no substitution)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "{":
            body, i = _braced(text, i + 1)
            out.append(body)
        elif c == '"':
            j = i + 1
            buf = []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    buf.append(_BACKSLASH.get(text[j + 1], text[j + 1]))
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            out.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace():
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _list_elem(v: str) -> str:
    return "{" + v + "}" if (not v or any(ch.isspace() for ch in v)) and "{" not in v and "}" not in v else v


def analyze_tcl(source: str) -> tuple[list[Finding], list[str]]:
    """Findings and unresolved notes for a Tcl or expect program."""
    r = _Reader()
    try:
        r.script(source)
    except OverflowError:
        return r.findings, [*r.notes, "tcl: program too large, analysis stopped"]
    return r.findings, r.notes
