"""Perl, Ruby, PHP, awk, Lua, R and Julia one-liners: their shell-out forms.

No full parser exists for these here, so a small lexer per language turns the program into
tokens (string literals with their interpolations, command literals such as backticks and
``qx{}``/``%x()``, variables, words, operators) and a shallow reader finds the calls that start
programs: ``system``/``exec``/``open`` with a pipe (Perl), ``system``/``exec``/``spawn``/
``IO.popen``/``Open3.*`` (Ruby), ``shell_exec``/``system``/``exec``/``passthru``/``popen``/
``proc_open``/``pcntl_exec`` (PHP), ``system()``, ``print … | "cmd"`` and ``"cmd" | getline``
(awk), ``os.execute``/``io.popen`` (Lua), ``system``/``system2``/``pipe``/``processx::run`` (R),
and command literals handed to ``run``/``read``/``success``/``open``/``pipeline`` (Julia, where a
backtick literal alone runs nothing and is split into words without a shell). Simple assignments of string or list constants are followed. Strings that are only
printed are data.
"""

from __future__ import annotations

import re
import shlex

from guard.ir import UNKNOWN
from guard.record import dataclass
from guard.resolve.inline.common import UNK, Finding, argv_of_string

# Literal patterns, compiled at import (before the analysis server forks its workers).
_PERL_ARRAY_SIGIL = re.compile(r"[@]\w")
_PERL_VARIABLE = re.compile(r"[@$]?\w+")
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


class _Hash:
    """A Ruby/Perl hash literal (an environment or options argument)."""

    def __init__(self, opts: dict[str, object]) -> None:
        self.opts = opts



_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_ESC = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "0": "\0", "f": "\f", "v": "\v"}
_OPS = ("=>", "->", "::", "==", "=~", "!~", "!=", "||", "&&", "<=", ">=", ">>", "<<", "**", ".=", "+=",
        "-=", "|=", "&=")
_VALUE_END = {"str", "cmd", "words", "var", "num"}
_KEYWORDS_BEFORE_REGEX = {"if", "unless", "and", "or", "not", "split", "grep", "map", "return", "when", "while",
                          "until", "elsif", "join", "push", "unshift", "x", "lt", "gt", "le", "ge", "eq", "ne",
                          "cmp", "~", "print"}


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


_PERL_QUOTE = re.compile(r"(qq|qx|qw|qr|q|m|s|tr|y)\s*([^\w\s,;)=])")
_RUBY_PERCENT = re.compile(r"%([qQwWiIxr]?)([^\w\s])")
_SIGIL_VAR = re.compile(r"[$@]{1,2}(\{\w+\}|\w+(?:::\w+)*)")
_AWK_FIELD = re.compile(r"\$(\w+)")
_NUMBER = re.compile(r"\d[\w.]*")
_WORD = re.compile(r"\w+")
_RUBY_WORD = re.compile(r"\w+[?!]?")
_HEX_ESC = re.compile(r"\{([0-9a-fA-F]{1,8})\}|([0-9a-fA-F]{1,2})")
_OCT_ESC = re.compile(r"[0-7]{1,3}")
_PERL_VAR = re.compile(r"[$@](\{\w+\}|\w+(?:::\w+)*)(\[[^\]]*\]|\{[^}]*\})?")
_PHP_VAR = re.compile(r"\{\$(\w+)[^}]*\}|\$\{(\w+)\}|\$(\w+)(\[[^\]]*\]|->\w+)?")
_RUBY_INTERP = re.compile(r"#\{([^}]*)\}|#([@$]\w+)")
_JULIA_INTERP = re.compile(r"\$(\w+)")
_LUA_LONG = re.compile(r"\[(=*)\[")


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
            if e in "01234567" and (lang in {"awk", "php"} or e == "0"):
                m = _OCT_ESC.match(content, i + 1)
                if m:
                    buf.append(chr(int(m.group(), 8) & 0xFF))
                    i = m.end()
                    continue
            buf.append(_ESC.get(e, e))
            i += 2
            continue
        if lang == "perl" and c in "$@":
            m = _PERL_VAR.match(content, i)
            if m and not (c == "@" and not _PERL_ARRAY_SIGIL.match(content[i : i + 2])):
                flush()
                name = m.group(1).strip("{}")
                parts.append(Var(c + name) if not m.group(2) else UNKNOWN)
                i = m.end()
                continue
        if lang == "php" and c in "${":
            m = _PHP_VAR.match(content, i)
            if m:
                flush()
                name = m.group(1) or m.group(2) or m.group(3)
                simple = m.group(0) in {"{$" + name + "}", "${" + name + "}", "$" + name}
                parts.append(Var("$" + name) if simple else UNKNOWN)
                i = m.end()
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
        if lang == "ruby" and c == "#":
            m = _RUBY_INTERP.match(content, i)
            if m:
                flush()
                expr = (m.group(1) if m.group(1) is not None else m.group(2)).strip()
                parts.append(Var(expr) if _PERL_VARIABLE.fullmatch(expr) else UNKNOWN)
                i = m.end()
                continue
        buf.append(c)
        i += 1
    flush()
    return tuple(parts)


_LINE_COMMENT = {"perl", "ruby", "awk", "php", "r", "julia"}  # "#" to the end of the line


def _comment_end(src: str, i: int, lang: str, after_dollar: bool) -> int | None:
    """Where a comment starting at src[i] ends (its newline is not part of it), None if none does."""
    n = len(src)

    def upto(end: str, start: int, inclusive: bool) -> int:
        j = src.find(end, start)
        return n if j < 0 else j + (len(end) if inclusive else 0)

    if lang == "lua" and src.startswith("--", i):
        m = _LUA_LONG.match(src, i + 2)
        return upto("]" + m.group(1) + "]", m.end(), True) if m else upto("\n", i, False)
    if lang == "julia" and src.startswith("#=", i):
        return upto("=#", i + 2, True)
    if lang == "php" and src.startswith("/*", i):
        return upto("*/", i + 2, True)
    if (src[i] == "#" and lang in _LINE_COMMENT and not (lang == "perl" and after_dollar)) or (
        lang == "php" and src.startswith("//", i)
    ):
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
        end = _comment_end(src, i, lang, bool(toks) and toks[-1].value == "$")
        if end is not None:
            line += src.count("\n", i, end)
            i = end
            continue
        if lang == "php" and src.startswith("<?php", i):
            i += 5
            continue
        start = i
        # quoted literals
        if lang == "lua" and c == "[" and (m := _LUA_LONG.match(src, i)):
            j = src.find("]" + m.group(1) + "]", m.end())
            body = src[m.end() : n if j < 0 else j].removeprefix("\n")
            i = n if j < 0 else j + len(m.group(0))
            push("str", (body,))
        elif lang == "julia" and src.startswith('"""', i):
            j = src.find('"""', i + 3)
            push("str", _interp(src[i + 3 : n if j < 0 else j], lang))
            i = n if j < 0 else j + 3
        elif lang in {"lua", "r"} and c == "'":
            body, i = _delimited(src, i + 1, "'")
            push("str", _interp(body, lang))
        elif lang == "lua" and src.startswith("..", i):
            push("op", "..")
            i += 2
        elif lang == "r" and src.startswith("<-", i):
            push("op", "<-")
            i += 2
        elif c == "'" and lang != "awk":
            body, i = _delimited(src, i + 1, "'")
            push("str", _single(body, "'"))
        elif c == '"':
            body, i = _delimited(src, i + 1, '"')
            push("str", _interp(body, lang))
        elif c == "`" and lang in {"perl", "ruby", "php", "julia"}:
            body, i = _delimited(src, i + 1, "`")
            push("cmd", _interp(body, lang))
        elif lang == "perl" and (m := _PERL_QUOTE.match(src, i)) and (
            not toks or toks[-1].value not in {"->", "{"} or m.group(1) in {"qq", "qx", "qw", "q"}
        ) and not (i > 0 and (src[i - 1].isalnum() or src[i - 1] in "_$@%&")):
            op, delim = m.group(1), m.group(2)
            body, i = _delimited(src, m.end(), delim)
            if op in {"s", "tr", "y"}:
                if delim in _OPEN:
                    j = i
                    while j < n and src[j] in " \t":
                        j += 1
                    if j < n and src[j] in _OPEN:
                        _, i = _delimited(src, j + 1, src[j])
                else:
                    _, i = _delimited(src, i, delim)
                while i < n and src[i].isalpha():
                    i += 1
                push("num", 0)  # a substitution expression: a value, not a command
            elif op in {"m", "qr"}:
                while i < n and src[i].isalpha():
                    i += 1
                push("num", 0)
            elif op == "q":
                push("str", _single(body, delim))
            elif op == "qq":
                push("str", _interp(body, "perl") if delim != "'" else _single(body, delim))
            elif op == "qx":
                push("cmd", _interp(body, "perl") if delim != "'" else _single(body, delim))
            elif op == "qw":
                push("words", tuple(body.split()))
        elif lang == "ruby" and (m := _RUBY_PERCENT.match(src, i)) and not prev_is_value():
            kind, delim = m.group(1), m.group(2)
            body, i = _delimited(src, m.end(), delim)
            if kind == "q":
                push("str", _single(body, delim))
            elif kind in {"Q", ""}:
                push("str", _interp(body, "ruby"))
            elif kind in {"w", "W", "i", "I"}:
                push("words", tuple(body.split()))
            elif kind == "x":
                push("cmd", _interp(body, "ruby"))
            else:
                push("num", 0)
        elif c == "/" and lang in {"perl", "ruby", "awk"} and not prev_is_value():
            _, i = _delimited(src, i + 1, "/")
            while i < n and src[i].isalpha() and lang != "awk":
                i += 1
            push("num", 0)  # a regex match: a value
        elif c in "$@" and lang in {"perl", "ruby", "php"} and i + 1 < n and (src[i + 1].isalnum() or src[i + 1] in "_{"):
            m = _SIGIL_VAR.match(src, i)
            if m:
                name = m.group(1).strip("{}")
                sigil = "@" if c == "@" and lang == "perl" else ("$" if lang != "ruby" else m.group(0)[: len(m.group(0)) - len(m.group(1))])
                push("var", sigil + name)
                i = m.end()
            else:
                push("op", c)
                i += 1
        elif c == "$" and lang == "awk" and (m := _AWK_FIELD.match(src, i)):
            push("var", m.group())
            i = m.end()
        elif c.isdigit():
            m = _NUMBER.match(src, i)
            push("num", m.group() if m else c)
            i = m.end() if m else i + 1
        elif c.isalpha() or c == "_":
            m = (_RUBY_WORD if lang == "ruby" else _WORD).match(src, i)
            assert m is not None
            push("word", m.group())
            i = m.end()
            if lang == "ruby" and m.group() == "__END__":
                break
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
    "perl": {"system", "exec", "open", "readpipe", "CORE::system", "CORE::exec", "CORE::open"},
    "ruby": {"system", "exec", "spawn", "Kernel.system", "Kernel.exec", "Kernel.spawn", "Process.spawn",
             "Process.exec", "IO.popen", "Open3.capture2", "Open3.capture2e", "Open3.capture3", "Open3.popen2",
             "Open3.popen2e", "Open3.popen3", "Open3.pipeline", "Open3.pipeline_r", "Open3.pipeline_w",
             "Open3.pipeline_rw", "Open3.pipeline_start", "PTY.spawn"},
    "php": {"shell_exec", "system", "exec", "passthru", "popen", "proc_open", "pcntl_exec"},
    "awk": {"system"},
    "lua": {"os.execute", "io.popen"},
    "r": {"system", "system2", "shell", "pipe", "processx.run", "processx.process.new", "sys.exec_wait",
          "sys.exec_internal", "sys.exec_background"},
    "julia": {"run", "read", "readchomp", "readlines", "eachline", "success", "open", "pipeline", "Base.run",
              "Base.read", "Base.success", "Base.open", "Base.pipeline"},
}
_CONCAT = {"perl": ".", "php": ".", "ruby": "+", "awk": None, "lua": "..", "r": None, "julia": "*"}
_ASSIGNS_WORDS = {"ruby", "awk", "lua", "r", "julia"}  # where a bare word is a variable
_PAREN_CALLS = {"php", "awk", "r", "julia"}  # where a call needs its parentheses
_STOP_WORDS = {"if", "unless", "or", "and", "while", "until", "foreach", "for", "do", "then", "rescue"}
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
        if t.kind == "nl" and "nl" in stops:
            return True
        return t.kind == "word" and t.value in _STOP_WORDS and self.lang in {"perl", "ruby"}

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
        if t.kind == "num" and self.lang != "perl":
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
        if t.kind == "word" and self.lang in _ASSIGNS_WORDS and str(t.value) in self.vars:
            return self.vars[str(t.value)], i + 1
        if t.kind == "op" and t.value == "*" and self.lang == "ruby" and i + 1 < len(toks):
            return self.term(i + 1)  # splat
        if t.kind == "op" and t.value in {"[", "("} and (t.value == "[" or self.lang == "perl"):
            close = "]" if t.value == "[" else ")"
            items, j = self.list_items(i + 1, close)
            return tuple(items), j
        if t.kind == "word" and t.value == "array" and self.lang == "php" and i + 1 < len(toks) and toks[i + 1].value == "(":
            items, j = self.list_items(i + 2, ")")
            return tuple(items), j
        if t.kind == "op" and t.value == "{" and self.lang in {"ruby", "perl"}:
            return self.hash(i + 1)
        if t.kind == "op" and t.value == "{" and self.lang == "lua":  # a table constructor used as a list
            items, j = self.list_items(i + 1, "}")
            return tuple(items), j
        if (self.lang == "lua" and t.kind == "word" and t.value == "table" and i + 3 < len(toks)
                and toks[i + 1].value == "." and toks[i + 2].value == "concat" and toks[i + 3].value == "("):
            args, _, j = self.args(i + 3)  # table.concat(list, sep)
            seq, sep = (args + [""])[:2] if args else (UNK, "")
            if not isinstance(seq, tuple):
                return UNK, j
            return (sep if isinstance(sep, str) else UNKNOWN).join(x if isinstance(x, str) else UNKNOWN for x in seq), j
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

    def hash(self, i: int) -> tuple[object, int]:
        opts: dict[str, object] = {}
        toks = self.toks
        depth = 0
        key: str | None = None
        while i < len(toks):
            t = toks[i]
            if t.kind == "op" and t.value == "}" and depth == 0:
                return _Hash(opts), i + 1
            if t.kind == "op" and t.value in {"{", "(", "["}:
                depth += 1
            elif t.kind == "op" and t.value in {"}", ")", "]"}:
                depth -= 1
            elif depth == 0 and t.kind in {"word", "str"} and i + 1 < len(toks) and toks[i + 1].value in {":", "=>"}:
                key = str(t.value) if t.kind == "word" else self.concat(t.value)  # type: ignore[arg-type]
            elif depth == 0 and key is not None and t.kind != "op":
                v, j = self.expr(i, {",", "}"})
                opts[key] = v
                key = None
                i = j
                continue
            i += 1
        return _Hash(opts), i

    def args(self, i: int) -> tuple[list[object], dict[str, object], int]:
        """Arguments of a call at toks[i] (with or without parentheses)."""
        toks = self.toks
        paren = i < len(toks) and toks[i].kind == "op" and toks[i].value == "("
        if paren:
            i += 1
        stops = {",", ")"} if paren else {",", ";", "}", ")", "nl", "||", "&&", "|"}
        if paren and self.lang == "julia":
            stops.add(";")  # run(cmd; wait=false): keyword arguments after a semicolon
        if not paren and self.lang == "perl":
            stops.discard("nl")
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
            # Ruby keyword options: chdir: "/x"  or  :chdir => "/x"
            if self.lang == "ruby" and t.kind == "word" and i + 1 < len(toks) and toks[i + 1].value == ":":
                v, i = self.expr(i + 2, stops)
                opts[str(t.value)] = v
                continue
            if self.lang == "ruby" and t.kind == "op" and t.value == ":" and i + 2 < len(toks) and toks[i + 2].value == "=>":
                key = str(toks[i + 1].value)
                v, i = self.expr(i + 3, stops)
                opts[key] = v
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
            if t.kind == "cmd" and self.lang != "julia":
                text = self.concat(t.value)  # type: ignore[arg-type]
                self.shell(t.line, text, "qx/backticks" if self.lang == "perl" else "backticks")
                i += 1
                continue
            if self.lang == "awk" and t.kind == "op" and t.value == "|" and i + 1 < len(toks) and toks[i + 1].value == "getline":
                self.awk_getline(i)
                i += 2
                continue
            if t.kind in {"var", "word"} and i + 1 < len(toks) and toks[i + 1].kind == "op" and toks[i + 1].value in {
                "=", ".=", "+=", "<-"
            }:
                if t.kind == "word" and self.lang not in _ASSIGNS_WORDS:
                    i += 1
                    continue
                name = str(t.value)
                v, j = self.expr(i + 2, {";", "nl", "}", ")", ","} if self.lang != "perl" else {";", "}", ")"})
                if toks[i + 1].value not in {"=", "<-"}:
                    cur = self.vars.get(name, UNK)
                    v = cur + v if isinstance(cur, str) and isinstance(v, str) else UNK
                if isinstance(v, _Hash):
                    v = UNK
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
                if called and nxt is not None and nxt.kind == "op" and nxt.value in {"=>", ":", "=", "::"}:
                    called = False  # a hash key or an assignment
                if called and self.lang in _PAREN_CALLS and not (nxt is not None and nxt.value == "("):
                    called = False
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
            if self.lang == "perl" and toks[j].value == ".":
                break
            if self.lang in {"php", "awk"}:
                break
            if self.lang == "lua" and toks[j].value == "::":
                break
            parts.append(str(toks[j + 1].value))
            j += 2
        sep = "::" if self.lang == "perl" else "."
        return sep.join(parts), j

    # ------------------------------------------------------------------ calls

    def call(self, line: int, name: str, args: list[object], opts: dict[str, object]) -> None:
        short = name.split("::")[-1]
        lang = self.lang
        cwd = None
        if lang == "ruby" and args and isinstance(args[-1], _Hash):
            opts = {**opts, **args[-1].opts}
            args = args[:-1]
        if "chdir" in opts:
            cwd = opts["chdir"] if isinstance(opts["chdir"], str) else UNKNOWN
        if lang == "ruby" and args and isinstance(args[0], _Hash):
            args = args[1:]  # environment hash
        if lang == "perl" and short == "open":
            self.perl_open(line, args)
            return
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
        if lang == "php" and name == "proc_open":
            if len(args) > 3:
                cwd = args[3] if isinstance(args[3], str) else UNKNOWN
            args = args[:1]
        if lang == "php" and name == "pcntl_exec":
            path = args[0] if args else UNK
            rest = args[1] if len(args) > 1 and isinstance(args[1], tuple) else ()
            self.argv(line, (path, *rest), None, name)
            return
        if name.startswith("Open3.pipeline"):
            for a in args:
                self.one_command(line, [a], cwd, name)
            return
        if lang in {"php", "awk", "lua", "r"} or (name in {"readpipe", "IO.popen"} and args and isinstance(args[0], str)):
            args = args[:1]
        self.one_command(line, args, cwd, name)

    def one_command(self, line: int, args: list[object], cwd: str | None, name: str) -> None:
        flat: list[object] = []
        for a in args:
            if isinstance(a, tuple):
                flat.extend(a)
            elif isinstance(a, _Hash):
                continue
            else:
                flat.append(a)
        if not flat:
            self.note(line, f"{name} argument not constant")
            return
        if len(flat) == 1 and not (args and isinstance(args[0], tuple)):
            self.shell(line, flat[0], name, cwd)
        else:
            if self.lang == "ruby" and args and isinstance(args[0], tuple) and len(args[0]) == 2 and len(args) > 1:
                flat = [args[0][0], *flat[2:]]  # system(["git", "argv0"], "push")
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

    def perl_open(self, line: int, args: list[object]) -> None:
        if len(args) == 2:
            mode = args[1]
            if not isinstance(mode, str):
                self.note(line, "open argument not constant")
                return
            s = mode.strip()
            if s.startswith("|"):
                self.shell(line, s[1:].strip(), "open")
            elif s.endswith("|"):
                self.shell(line, s[:-1].strip(), "open")
        elif len(args) >= 3:
            mode = args[1]
            if isinstance(mode, str) and mode.replace(" ", "") in {"-|", "|-"}:
                rest = args[2:]
                if len(rest) == 1 and isinstance(rest[0], str):
                    self.shell(line, rest[0], "open")
                else:
                    self.one_command(line, rest, None, "open")
            elif not isinstance(mode, str):
                self.note(line, "open mode not constant")

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
    """Findings and unresolved notes for a Perl, Ruby, PHP or awk program."""
    try:
        toks = _lex(source, lang)
    except OverflowError:
        return [], [f"{lang}: program too large, not analysed"]
    r = _Reader(lang, toks)
    r.run()
    return r.findings + _env_reads(lang, source), r.notes


_ENV_READ = {
    "perl": re.compile(r"""\$ENV\{\s*['"]?(\w+)['"]?\s*\}"""),
    "ruby": re.compile(r"""ENV(?:\[|\.fetch\(|\.key\?\(|\.include\?\()\s*['"](\w+)['"]"""),
    "php": re.compile(r"""(?:getenv\(|\$_ENV\[|\$_SERVER\[)\s*['"](\w+)['"]"""),
    "awk": re.compile(r"""ENVIRON\[\s*"(\w+)"\s*\]"""),
    "lua": re.compile(r"""os\.getenv\s*\(?\s*['"](\w+)['"]"""),
    "r": re.compile(r"""Sys\.getenv\(\s*['"](\w+)['"]"""),
    "julia": re.compile(r"""ENV\[\s*"(\w+)"\s*\]|get\(\s*ENV\s*,\s*"(\w+)\""""),
}
_ENV_WHOLE = {
    "perl": re.compile(r"keys\s*\(?\s*%ENV|each\s*\(?\s*%ENV|values\s*\(?\s*%ENV|%ENV\s*\)"),
    "ruby": re.compile(r"ENV\.(?:keys|to_h|to_a|each|select|filter|find|grep|map)"),
    "php": re.compile(r"getenv\(\s*\)|\$_ENV\b(?!\[)"),
    "awk": re.compile(r"in\s+ENVIRON\b"),
    "r": re.compile(r"Sys\.getenv\(\s*\)"),
    "julia": re.compile(r"keys\(\s*ENV\s*\)|in\s+ENV\b|collect\(\s*ENV\s*\)"),
}
_HUNT = re.compile(r"token|secret|github|\bgh|_pat|auth|cred", re.I)


def _env_reads(lang: str, source: str) -> list[Finding]:
    """Environment reads a Perl/Ruby/PHP/awk program makes: named ones (``$ENV{GH_TOKEN}``), and
    a walk over the whole environment looking for a credential (``grep /TOKEN/, keys %ENV``)."""
    out = [Finding(kind="token", var=m.group(m.lastindex or 1), detail=f"{lang} environment read")
           for m in _ENV_READ[lang].finditer(source) if _HUNT.search(m.group(1))] if lang in _ENV_READ else []
    whole = _ENV_WHOLE.get(lang)
    if whole is not None and whole.search(source) and _HUNT.search(source):
        out.append(Finding(kind="token", var="*", detail=f"{lang} environment searched"))
    return out[:50]
