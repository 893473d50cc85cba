"""awk, R and Julia one-liners: their shell-out forms.

These three have no tree-sitter grammar on the package index that guard can depend on (Perl,
Ruby, PHP, Lua and the others are read by ``generic.py`` from their dialect tables), so a small
lexer turns the program into tokens (string literals with their interpolations, Julia's command
literals, variables, words, operators) and a shallow reader finds the calls that start
programs: ``system()``, ``print … | "cmd"`` and ``"cmd" | getline`` (awk),
``system``/``system2``/``pipe``/``processx::run`` (R), and command literals handed to
``run``/``read``/``success``/``open``/``pipeline`` (Julia, where a backtick literal alone runs
nothing and is split into words without a shell). Simple assignments of string or list
constants are followed. Strings that are only printed are data.
"""

from __future__ import annotations

import re
import shlex

from guard.ir import UNKNOWN
from guard.record import dataclass
from guard.resolve.inline.common import UNK, Finding, argv_of_string

# Literal patterns, compiled at import (before the analysis server forks its workers).
_PRINTF_STRING_SPEC = re.compile(r"%(-?\d*)s")


MAX_TOKENS = 500_000
MAX_FINDINGS = 1_000


@dataclass(frozen=True)
class Tok:
    kind: str  # "str" | "cmd" | "words" | "word" | "var" | "op" | "num" | "nl"
    value: object
    line: int


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class _JuliaCmd:
    """A Julia command literal (`` `git push` ``): a value, run only when handed to ``run`` & co."""

    text: str


_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_ESC = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "0": "\0", "f": "\f", "v": "\v"}
_OPS = ("=>", "->", "::", "==", "=~", "!~", "!=", "||", "&&", "<=", ">=", ">>", "<<", "**", ".=", "+=",
        "-=", "|=", "&=")
_VALUE_END = {"str", "cmd", "words", "var", "num"}
_KEYWORDS_BEFORE_REGEX = {"if", "while", "return", "split", "match", "sub", "gsub", "in", "print", "printf", "~"}


# --------------------------------------------------------------------------- lexing


def _delimited(src: str, i: int, open_ch: str) -> tuple[str, int]:
    """Content from src[i] (just after the opening delimiter) to its closing one."""
    close = _OPEN.get(open_ch, open_ch)
    depth = 1
    out = []
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n:
            out.append(src[i : i + 2])
            i += 2
            continue
        if c == close and open_ch != close:
            depth -= 1
            if depth == 0:
                return "".join(out), i + 1
        elif c == open_ch and open_ch != close:
            depth += 1
        elif c == close:
            return "".join(out), i + 1
        out.append(c)
        i += 1
    return "".join(out), n


def _single(content: str, quote: str) -> tuple:
    """Non-interpolating literal: only ``\\\\`` and an escaped delimiter are special."""
    out = []
    i = 0
    while i < len(content):
        c = content[i]
        if c == "\\" and i + 1 < len(content) and content[i + 1] in ("\\", quote, _OPEN.get(quote, quote)):
            out.append(content[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return ("".join(out),)


_AWK_FIELD = re.compile(r"\$(\w+)")
_NUMBER = re.compile(r"\d[\w.]*")
_WORD = re.compile(r"\w+")
_HEX_ESC = re.compile(r"\{([0-9a-fA-F]{1,8})\}|([0-9a-fA-F]{1,2})")
_OCT_ESC = re.compile(r"[0-7]{1,3}")
_JULIA_INTERP = re.compile(r"\$(\w+)")


def _interp(content: str, lang: str) -> tuple:
    """Parts of an interpolating literal: text and Var references."""
    parts: list[object] = []
    buf: list[str] = []
    i, n = 0, len(content)

    def flush() -> None:
        if buf:
            parts.append("".join(buf))
            buf.clear()

    while i < n:
        c = content[i]
        if c == "\\" and i + 1 < n:
            e = content[i + 1]
            if e == "x" and lang != "awk":
                m = _HEX_ESC.match(content, i + 2)
                if m and int(m.group(1) or m.group(2), 16) < 0x110000:
                    buf.append(chr(int(m.group(1) or m.group(2), 16)))
                    i = m.end()
                    continue
            if e in "01234567" and (lang == "awk" or e == "0"):
                m = _OCT_ESC.match(content, i + 1)
                if m:
                    buf.append(chr(int(m.group(), 8) & 0xFF))
                    i = m.end()
                    continue
            buf.append(_ESC.get(e, e))
            i += 2
            continue
        if lang == "julia" and c == "$":
            m = _JULIA_INTERP.match(content, i)
            if m:
                flush()
                parts.append(Var(m.group(1)))
                i = m.end()
                continue
            if content.startswith("$(", i):
                flush()
                _, i = _delimited(content, i + 2, "(")
                parts.append(UNKNOWN)
                continue
        buf.append(c)
        i += 1
    flush()
    return tuple(parts)


_LINE_COMMENT = {"awk", "r", "julia"}  # "#" to the end of the line


def _comment_end(src: str, i: int, lang: str) -> int | None:
    """Where a comment starting at src[i] ends (its newline is not part of it), None if none does."""
    n = len(src)

    def upto(end: str, start: int, inclusive: bool) -> int:
        j = src.find(end, start)
        return n if j < 0 else j + (len(end) if inclusive else 0)

    if lang == "julia" and src.startswith("#=", i):
        return upto("=#", i + 2, True)
    if src[i] == "#" and lang in _LINE_COMMENT:
        return upto("\n", i, False)
    return None


def _lex(src: str, lang: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n, line = 0, len(src), 1

    def prev_is_value() -> bool:
        for t in reversed(toks):
            if t.kind == "nl":
                return False
            if t.kind in _VALUE_END:
                return True
            if t.kind == "word":
                return t.value not in _KEYWORDS_BEFORE_REGEX
            return t.kind == "op" and t.value in {")", "]", "}"}
        return False

    def push(kind: str, value: object) -> None:
        toks.append(Tok(kind, value, line))
        if len(toks) > MAX_TOKENS:
            raise OverflowError

    while i < n:
        c = src[i]
        if c == "\n":
            push("nl", "\n")
            line += 1
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        end = _comment_end(src, i, lang)
        if end is not None:
            line += src.count("\n", i, end)
            i = end
            continue
        start = i
        # quoted literals
        if lang == "julia" and src.startswith('"""', i):
            j = src.find('"""', i + 3)
            push("str", _interp(src[i + 3 : n if j < 0 else j], lang))
            i = n if j < 0 else j + 3
        elif lang == "r" and c == "'":
            body, i = _delimited(src, i + 1, "'")
            push("str", _interp(body, lang))
        elif lang == "r" and src.startswith("<-", i):
            push("op", "<-")
            i += 2
        elif c == "'" and lang != "awk":
            body, i = _delimited(src, i + 1, "'")
            push("str", _single(body, "'"))
        elif c == '"':
            body, i = _delimited(src, i + 1, '"')
            push("str", _interp(body, lang))
        elif c == "`" and lang == "julia":
            body, i = _delimited(src, i + 1, "`")
            push("cmd", _interp(body, lang))
        elif c == "/" and lang == "awk" and not prev_is_value():
            _, i = _delimited(src, i + 1, "/")
            push("num", 0)  # a regex match: a value
        elif c == "$" and lang == "awk" and (m := _AWK_FIELD.match(src, i)):
            push("var", m.group())
            i = m.end()
        elif c.isdigit():
            m = _NUMBER.match(src, i)
            push("num", m.group() if m else c)
            i = m.end() if m else i + 1
        elif c.isalpha() or c == "_":
            m = _WORD.match(src, i)
            assert m is not None
            push("word", m.group())
            i = m.end()
        else:
            for op in _OPS:
                if src.startswith(op, i):
                    push("op", op)
                    i += len(op)
                    break
            else:
                push("op", c)
                i += 1
        line += src.count("\n", start, i)
    return toks


# --------------------------------------------------------------------------- reading


_CALLS = {
    "awk": {"system"},
    "r": {"system", "system2", "shell", "pipe", "processx.run", "processx.process.new", "sys.exec_wait",
          "sys.exec_internal", "sys.exec_background"},
    "julia": {"run", "read", "readchomp", "readlines", "eachline", "success", "open", "pipeline", "Base.run",
              "Base.read", "Base.success", "Base.open", "Base.pipeline"},
}
_CONCAT = {"awk": None, "r": None, "julia": "*"}
_SHELLS = re.compile(r"^\s*(?:/\S*/)?(?:ba|z|da|k|)sh(?:\s+-s)?\s*$")


class _Reader:
    def __init__(self, lang: str, toks: list[Tok]) -> None:
        self.lang = lang
        self.toks = toks
        self.vars: dict[str, object] = {}
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.seen: set[Finding] = set()

    def add(self, line: int, **kw: object) -> None:
        f = Finding(line=line, **kw)  # type: ignore[arg-type]
        if f in self.seen:
            return
        if len(self.findings) >= MAX_FINDINGS:
            msg = f"{self.lang}: more than {MAX_FINDINGS} findings; the rest are not reported"
            if msg not in self.notes:
                self.notes.append(msg)
            return
        self.seen.add(f)
        self.findings.append(f)

    def note(self, line: int, text: str) -> None:
        msg = f"{self.lang}: {text} at line {line}"
        if msg not in self.notes:
            self.notes.append(msg)

    # ------------------------------------------------------------------ values

    def concat(self, parts: tuple) -> str:
        out = []
        for p in parts:
            if isinstance(p, Var):
                v = self.vars.get(p.name, UNK)
                if isinstance(v, tuple):
                    out.append(" ".join(x if isinstance(x, str) else UNKNOWN for x in v))
                else:
                    out.append(v if isinstance(v, str) else UNKNOWN)
            else:
                out.append(str(p))
        return "".join(out)

    def is_stop(self, t: Tok, stops: set[str]) -> bool:
        if t.kind == "op" and t.value in stops:
            return True
        return t.kind == "nl" and "nl" in stops

    def expr(self, i: int, stops: set[str]) -> tuple[object, int]:
        """One expression made of literals, variables and concatenation; UNK for anything else."""
        toks = self.toks
        n = len(toks)
        concat_op = _CONCAT[self.lang]
        values: list[object] = []
        unknown = False
        while i < n and not self.is_stop(toks[i], stops):
            t = toks[i]
            if t.kind == "nl":
                i += 1
                continue
            v, i2 = self.term(i)
            if i2 == i:  # not a term: skip a balanced chunk
                i = self.skip(i, stops)
                unknown = True
                continue
            i = i2
            values.append(v)
            if i < n and concat_op and toks[i].kind == "op" and toks[i].value == concat_op:
                i += 1
                continue
            if self.lang == "awk" and i < n and not self.is_stop(toks[i], stops) and toks[i].kind in {"str", "word", "num"}:
                continue  # awk concatenates by juxtaposition
            if i < n and not self.is_stop(toks[i], stops):
                unknown = True  # an operator or call we do not model
                i = self.skip(i, stops)
        if unknown or not values:
            if values and all(isinstance(v, str) for v in values):
                return "".join(values) + UNKNOWN, i  # type: ignore[arg-type]
            return UNK, i
        if len(values) == 1:
            return values[0], i
        if all(isinstance(v, str) for v in values):
            return "".join(values), i  # type: ignore[arg-type]
        if any(isinstance(v, str) for v in values):
            return "".join(v if isinstance(v, str) else UNKNOWN for v in values), i
        return UNK, i

    def skip(self, i: int, stops: set[str]) -> int:
        depth = 0
        toks = self.toks
        while i < len(toks):
            t = toks[i]
            if t.kind == "op" and t.value in {"(", "[", "{"}:
                depth += 1
            elif t.kind == "op" and t.value in {")", "]", "}"}:
                if depth == 0:
                    return i
                depth -= 1
            elif depth == 0 and self.is_stop(t, stops):
                return i
            i += 1
            if depth == 0:
                return i
        return i

    def term(self, i: int) -> tuple[object, int]:
        toks = self.toks
        t = toks[i]
        if t.kind == "str":
            return self.concat(t.value), i + 1  # type: ignore[arg-type]
        if t.kind == "words":
            return t.value, i + 1
        if t.kind == "num":
            return str(t.value), i + 1
        if t.kind == "var":
            return self.vars.get(str(t.value), UNK), i + 1
        if t.kind == "cmd" and self.lang == "julia":
            return _JuliaCmd(self.concat(t.value)), i + 1  # type: ignore[arg-type]
        if (t.kind == "word" and self.lang == "r" and t.value in {"c", "paste", "paste0"} and i + 1 < len(toks)
                and toks[i + 1].value == "("):
            items, j = self.list_items(i + 2, ")")
            if t.value == "c":
                return tuple(items), j
            return ("" if t.value == "paste0" else " ").join(x if isinstance(x, str) else UNKNOWN for x in items), j
        if t.kind == "word" and str(t.value) in self.vars:
            return self.vars[str(t.value)], i + 1
        if t.kind == "op" and t.value == "[":
            items, j = self.list_items(i + 1, "]")
            return tuple(items), j
        return UNK, i

    def list_items(self, i: int, close: str) -> tuple[list[object], int]:
        items: list[object] = []
        toks = self.toks
        while i < len(toks):
            if toks[i].kind == "op" and toks[i].value == close:
                return items, i + 1
            if toks[i].kind == "op" and toks[i].value == ",":
                i += 1
                continue
            if toks[i].kind == "nl":
                i += 1
                continue
            v, j = self.expr(i, {",", close})
            if j == i:
                j = i + 1
            if isinstance(v, tuple):
                items.extend(v)
            else:
                items.append(v if isinstance(v, str) else UNKNOWN)
            i = j
        return items, i

    def args(self, i: int) -> tuple[list[object], dict[str, object], int]:
        """Arguments of a call at toks[i] (with or without parentheses)."""
        toks = self.toks
        paren = i < len(toks) and toks[i].kind == "op" and toks[i].value == "("
        if paren:
            i += 1
        stops = {",", ")"} if paren else {",", ";", "}", ")", "nl", "||", "&&", "|"}
        if paren and self.lang == "julia":
            stops.add(";")  # run(cmd; wait=false): keyword arguments after a semicolon
        args: list[object] = []
        opts: dict[str, object] = {}
        while i < len(toks):
            t = toks[i]
            if t.kind == "op" and (t.value == "," or (t.value == ";" and ";" in stops and paren)):
                i += 1
                continue
            if t.kind == "nl" and paren:
                i += 1
                continue
            if self.is_stop(t, stops - {","}):
                if paren and t.kind == "op" and t.value == ")":
                    i += 1
                break
            # R and Julia keyword arguments: args = c(…), stdout = devnull
            if self.lang in {"r", "julia"} and t.kind == "word" and i + 1 < len(toks) and toks[i + 1].value == "=":
                v, i = self.expr(i + 2, stops)
                opts[str(t.value)] = v
                continue
            v, j = self.expr(i, stops)
            if j == i:
                j = i + 1
            args.append(v)
            i = j
        return args, opts, i

    # ------------------------------------------------------------------ statements

    def run(self) -> None:
        toks = self.toks
        i = 0
        while i < len(toks):
            t = toks[i]
            if self.lang == "awk" and t.kind == "op" and t.value == "|" and i + 1 < len(toks) and toks[i + 1].value == "getline":
                self.awk_getline(i)
                i += 2
                continue
            if t.kind in {"var", "word"} and i + 1 < len(toks) and toks[i + 1].kind == "op" and toks[i + 1].value in {
                "=", ".=", "+=", "<-"
            }:
                name = str(t.value)
                v, j = self.expr(i + 2, {";", "nl", "}", ")", ","})
                if toks[i + 1].value not in {"=", "<-"}:
                    cur = self.vars.get(name, UNK)
                    v = cur + v if isinstance(cur, str) and isinstance(v, str) else UNK
                self.vars[name] = v
                i += 2  # keep reading the right-hand side: it may call something
                continue
            if t.kind == "word":
                name, j = self.dotted(i)
                if self.lang == "awk" and name in {"print", "printf"}:
                    i = self.awk_print(i + 1, name)
                    continue
                prev = toks[i - 1] if i > 0 else None
                called = name in _CALLS[self.lang]
                if called and prev is not None and prev.kind == "op" and prev.value in {"->", ".", "::", "&", "$"}:
                    called = False  # a method of some object, not the builtin
                nxt = toks[j] if j < len(toks) else None
                if called and not (nxt is not None and nxt.value == "("):
                    called = False  # a call needs its parentheses
                if called:
                    args, opts, k = self.args(j)
                    self.call(t.line, name, args, opts)
                    i = j  # keep reading inside the arguments (backticks, nested calls)
                    continue
                i = j
                continue
            i += 1

    def dotted(self, i: int) -> tuple[str, int]:
        toks = self.toks
        parts = [str(toks[i].value)]
        j = i + 1
        while j + 1 < len(toks) and toks[j].kind == "op" and toks[j].value in {".", "::"} and toks[j + 1].kind == "word":
            if self.lang == "awk":
                break
            parts.append(str(toks[j + 1].value))
            j += 2
        return ".".join(parts), j

    # ------------------------------------------------------------------ calls

    def call(self, line: int, name: str, args: list[object], opts: dict[str, object]) -> None:
        lang = self.lang
        cwd = None
        if lang == "julia":
            for a in (*args, *opts.values()):
                if isinstance(a, _JuliaCmd):
                    self.argv(line, argv_of_string(a.text), None, name)
            return
        if lang == "r" and name == "system2":  # system2(command, args): one shell command line
            cmd = args[0] if args else UNK
            rest = opts.get("args", args[1] if len(args) > 1 else ())
            words = [cmd, *(rest if isinstance(rest, tuple) else (rest,))]
            self.shell(line, " ".join(x if isinstance(x, str) else UNKNOWN for x in words), name)
            return
        if lang == "r" and name.startswith(("processx.", "sys.")):
            cmd = args[0] if args else opts.get("command", UNK)
            rest = args[1] if len(args) > 1 else opts.get("args", ())
            self.argv(line, (cmd, *(rest if isinstance(rest, tuple) else (rest,))), None, name)
            return
        self.one_command(line, args[:1], cwd, name)

    def one_command(self, line: int, args: list[object], cwd: str | None, name: str) -> None:
        flat: list[object] = []
        for a in args:
            if isinstance(a, tuple):
                flat.extend(a)
            else:
                flat.append(a)
        if not flat:
            self.note(line, f"{name} argument not constant")
            return
        if len(flat) == 1 and not (args and isinstance(args[0], tuple)):
            self.shell(line, flat[0], name, cwd)
        else:
            self.argv(line, tuple(flat), cwd, name)

    def shell(self, line: int, v: object, name: str, cwd: str | None = None) -> None:
        if not isinstance(v, str) or v == UNKNOWN or not v.strip(UNKNOWN + " "):
            self.note(line, f"{name} argument not constant")
            return
        self.add(line, kind="shell", shell=v, cwd=cwd, detail=f"{self.lang} {name}")

    def argv(self, line: int, v: tuple, cwd: str | None, name: str) -> None:
        argv = tuple(x if isinstance(x, str) else UNKNOWN for x in v)
        if not argv or argv[0] == UNKNOWN:
            self.note(line, f"{name} program not constant")
            if not argv:
                return
        self.add(line, kind="argv", argv=argv, cwd=cwd, detail=f"{self.lang} {name}")

    # ------------------------------------------------------------------ awk

    def awk_print(self, i: int, name: str) -> int:
        toks = self.toks
        stops = {";", "nl", "}", "|", ">", ">>"}
        paren = i < len(toks) and toks[i].value == "("
        items: list[object] = []
        if paren:
            items, i = self.list_items(i + 1, ")")
        else:
            while i < len(toks) and not self.is_stop(toks[i], stops):
                if toks[i].value == ",":
                    i += 1
                    continue
                v, j = self.expr(i, stops | {","})
                items.append(v)
                i = max(j, i + 1) if j == i else j
        if i < len(toks) and toks[i].kind == "op" and toks[i].value == "|":
            target, j = self.expr(i + 1, {";", "nl", "}"})
            line = toks[i].line
            if isinstance(target, str) and UNKNOWN not in target and _SHELLS.match(target):
                text = self.awk_text(name, items)
                if text is None:
                    self.note(line, "awk output piped to a shell is not constant")
                else:
                    self.shell(line, text, f"{name} | {target.strip()}")
            else:
                text = self.awk_text(name, items)
                if isinstance(target, str) and text is not None and UNKNOWN not in text:
                    target = f"printf %s {shlex.quote(text)} | {target}"  # the command reads what is printed
                self.shell(line, target, f"{name} |")
            return j
        return i

    def awk_text(self, name: str, items: list[object]) -> str | None:
        if not items:
            return None  # print alone prints $0: input data
        if not all(isinstance(x, str) for x in items):
            text = " ".join(x if isinstance(x, str) else UNKNOWN for x in items)
            return text if text.strip(UNKNOWN + " ") else None
        if name == "print":
            return " ".join(items) + "\n"  # type: ignore[arg-type]
        fmt, rest = items[0], items[1:]
        try:
            return _PRINTF_STRING_SPEC.sub("%\\1s", fmt) % tuple(rest)  # type: ignore[operator]
        except (TypeError, ValueError):
            return fmt.split("%", 1)[0] + UNKNOWN  # type: ignore[union-attr]

    def awk_getline(self, i: int) -> None:
        toks = self.toks
        j = i - 1
        while j >= 0 and toks[j].kind in {"str", "word", "num", "var"} and toks[j].value not in {"print", "printf"}:
            j -= 1
        parts = toks[j + 1 : i]
        if not parts:
            return
        values = []
        for t in parts:
            v, _ = self.term(self.toks.index(t, j + 1))
            values.append(v if isinstance(v, str) else UNKNOWN)
        self.shell(toks[i].line, "".join(values), "| getline")


def analyze_oneliner(lang: str, source: str) -> tuple[list[Finding], list[str]]:
    """Findings and unresolved notes for an awk, R or Julia program."""
    try:
        toks = _lex(source, lang)
    except OverflowError:
        return [], [f"{lang}: program too large, not analysed"]
    r = _Reader(lang, toks)
    r.run()
    return r.findings + _env_reads(lang, source), r.notes


_ENV_READ = {
    "awk": re.compile(r"""ENVIRON\[\s*"(\w+)"\s*\]"""),
    "r": re.compile(r"""Sys\.getenv\(\s*['"](\w+)['"]"""),
    "julia": re.compile(r"""ENV\[\s*"(\w+)"\s*\]|get\(\s*ENV\s*,\s*"(\w+)\""""),
}
_ENV_WHOLE = {
    "awk": re.compile(r"in\s+ENVIRON\b"),
    "r": re.compile(r"Sys\.getenv\(\s*\)"),
    "julia": re.compile(r"keys\(\s*ENV\s*\)|in\s+ENV\b|collect\(\s*ENV\s*\)"),
}
_HUNT = re.compile(r"token|secret|github|\bgh|_pat|auth|cred", re.I)


def _env_reads(lang: str, source: str) -> list[Finding]:
    """Environment reads an awk, R or Julia program makes: named ones (``ENVIRON["GH_TOKEN"]``),
    and a walk over the whole environment looking for a credential (``for (k in ENVIRON)``)."""
    out = [Finding(kind="token", var=m.group(m.lastindex or 1), detail=f"{lang} environment read")
           for m in _ENV_READ[lang].finditer(source) if _HUNT.search(m.group(1))] if lang in _ENV_READ else []
    whole = _ENV_WHOLE.get(lang)
    if whole is not None and whole.search(source) and _HUNT.search(source):
        out.append(Finding(kind="token", var="*", detail=f"{lang} environment searched"))
    return out[:50]
