"""Shell word semantics on raw source text: quote removal, escapes, ANSI-C decoding, expansions.

Used by the bashlex lowering (bashlex's own quote removal is wrong for mixed quoting) and by the
last-resort token scan. The tree-sitter lowering uses the escape helpers for its leaf nodes.

``lex_word(text, base, sub)`` turns the raw text of one word into IR parts. ``sub`` is called for
``$(…)``, backticks and ``<(…)``/``>(…)`` with ``(kind, inner_text, inner_offset)`` and returns the
nested ``Script``; ``base`` is the character offset of ``text`` in the whole command.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guard.ir import UNKNOWN, Arith, CmdSub, Lit, Param, Part, ProcSub, Script, Word

SubFn = Callable[[str, str, int], Script]

_SIMPLE_ESC = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}
_HEX = "0123456789abcdefABCDEF"
_SPECIAL_PARAMS = "@*#?$!-0123456789"
_NAME_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_NAME_CHARS = _NAME_START + "0123456789"
# Longest first: the first match wins.
_PARAM_OPS = (":-", ":=", ":?", ":+", "##", "%%", "//", "/#", "/%", "^^", ",,",
              "-", "=", "?", "+", "#", "%", "/", "^", ",", "@", ":")
_PATTERN_OPS = frozenset(("#", "##", "%", "%%", "/", "//", "/#", "/%", "^", "^^", ",", ",,"))


def _chr(code: int) -> str:
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return "\ufffd"
    return chr(code)


def decode_ansi_c(body: str) -> str:
    """The value of ``$'body'`` (bash ANSI-C quoting), ``body`` without the quotes."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _SIMPLE_ESC:
            out.append(_SIMPLE_ESC[e])
        elif e in "01234567":
            j = i - 1
            while j < n and j < i + 2 and body[j] in "01234567":
                j += 1
            out.append(_chr(int(body[i - 1:j], 8) & 0xFF))
            i = j
        elif e in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[e]
            j = i
            while j < n and j - i < limit and body[j] in _HEX:
                j += 1
            if j == i:
                out.append("\\" + e)
            else:
                out.append(_chr(int(body[i:j], 16)))
                i = j
        elif e == "c" and i < n:
            out.append(chr(ord(body[i].upper()) ^ 0x40) if body[i] != "?" else "\x7f")
            i += 1
        else:
            out.append("\\" + e)
    return "".join(out)


# The unescapes below run on every quoted string of every command, often long ``-c`` scripts;
# one regex substitution replaces a Python loop over each character.
_UNQUOTED_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQUOTED_ESCAPES: dict[str, re.Pattern[str]] = {}


def _drop_backslash(m: re.Match[str]) -> str:
    """An escape's replacement: the escaped character, or nothing for backslash-newline."""
    c = m.group(1)
    return "" if c == "\n" else c


def unescape_unquoted(text: str) -> str:
    """Unquoted text: ``\\x`` → ``x``, backslash-newline removed."""
    if "\\" not in text:
        return text
    return _UNQUOTED_ESCAPE.sub(_drop_backslash, text)


def unescape_dquoted(text: str, specials: str = '$`"\\') -> str:
    """Text inside double quotes: only ``\\$ \\` \\" \\\\`` and backslash-newline are escapes."""
    if "\\" not in text:
        return text
    pattern = _DQUOTED_ESCAPES.get(specials) or _dquoted_escape(specials)
    return pattern.sub(_drop_backslash, text)


def _dquoted_escape(specials: str) -> re.Pattern[str]:
    chars = "".join(re.escape(c) for c in dict.fromkeys(specials + "\n"))
    pattern = _DQUOTED_ESCAPES[specials] = re.compile(f"\\\\([{chars}])")
    return pattern


def unescape_backtick(text: str) -> str:
    """The command text inside backticks: ``\\\\``, ``\\``` and ``\\$`` lose the backslash."""
    return unescape_dquoted(text, BACKTICK_SPECIALS)


BACKTICK_SPECIALS = "$`\\"
for _specials in ('$`"\\', BACKTICK_SPECIALS):  # the two in use, compiled at import
    _dquoted_escape(_specials)


def merge_lits(parts: list[Part]) -> tuple[Part, ...]:
    """Join neighbouring ``Lit`` parts with the same quotedness and drop empty ones.

    A word whose only quoting is empty quotes (``""``, ``""$e``) keeps one empty quoted ``Lit``.
    """
    out: list[Part] = []
    empty_quoted = False
    for p in parts:
        if isinstance(p, Lit):
            if not p.text:
                empty_quoted = empty_quoted or p.quoted
                continue
            if out and isinstance(out[-1], Lit) and out[-1].quoted == p.quoted:
                out[-1] = Lit(out[-1].text + p.text, p.quoted)
                continue
        out.append(p)
    if empty_quoted and not any(isinstance(p, Lit) or getattr(p, "quoted", False) for p in out):
        out.insert(0, Lit("", True))  # ``""`` alone, or ``""$e``: a field even when $e is empty
    return tuple(out)


# --------------------------------------------------------------------------- span matching


def skip_squote(text: str, i: int) -> int:
    """``text[i]`` is just after an opening ``'``: index after the closing quote (or len)."""
    j = text.find("'", i)
    return len(text) if j < 0 else j + 1


def _skip_escaped(text: str, i: int, close: str) -> int:
    """Index after the first ``close`` from ``i`` that no backslash escapes (or len)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == close:
            return i + 1
        else:
            i += 1
    return n


def skip_ansi(text: str, i: int) -> int:
    """Just after ``$'``: index after the closing quote, honouring ``\\'``."""
    return _skip_escaped(text, i, "'")


def skip_dquote(text: str, i: int) -> int:
    """Just after ``"``: index after the closing quote, skipping nested ``$(…)`` and backticks."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "`":
            i = skip_backtick(text, i + 1)
        elif c == "$" and text.startswith("$(", i):
            i = match_paren(text, i + 2)
        elif c == "$" and text.startswith("${", i):
            i = match_brace(text, i + 2)
        else:
            i += 1
    return n


def skip_backtick(text: str, i: int) -> int:
    """Just after an opening backtick: index after the closing one (or len)."""
    return _skip_escaped(text, i, "`")


def match_paren(text: str, i: int) -> int:
    """Just after ``(``: index after the matching ``)``, or len(text) when unbalanced."""
    n = len(text)
    depth = 1
    at_word_start = True
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            at_word_start = False
            continue
        if c == "'":
            i = skip_squote(text, i + 1)
        elif c == '"':
            i = skip_dquote(text, i + 1)
        elif c == "`":
            i = skip_backtick(text, i + 1)
        elif c == "#" and at_word_start:
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == "(":
            depth += 1
            i += 1
        elif c == ")":
            depth -= 1
            i += 1
            if depth == 0:
                return i
        else:
            i += 1
        at_word_start = c in " \t\n;|&(<>"
    return n


def match_brace(text: str, i: int) -> int:
    """Just after ``${``: index after the matching ``}``, or len(text) when unbalanced."""
    n = len(text)
    depth = 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == "'":
            i = skip_squote(text, i + 1)
        elif c == '"':
            i = skip_dquote(text, i + 1)
        elif c == "`":
            i = skip_backtick(text, i + 1)
        elif c == "$" and text.startswith("$(", i):
            i = match_paren(text, i + 2)
        elif c == "$" and text.startswith("${", i):
            depth += 1
            i += 2
        elif c == "}":
            depth -= 1
            i += 1
            if depth == 0:
                return i
        else:
            i += 1
    return n


def match_arith(text: str, i: int) -> int:
    """Just after ``$((``: index after the closing ``))``, or len(text)."""
    n = len(text)
    depth = 0
    while i < n:
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i + 2 if text.startswith("))", i) else i + 1
            depth -= 1
        elif c in "'\"`\\":
            i = {"'": skip_squote, '"': skip_dquote, "`": skip_backtick}.get(c, lambda t, k: k + 1)(text, i + 1)
            continue
        i += 1
    return n


# --------------------------------------------------------------------------- lexing


class _Lexer:
    """Lexes one word's raw text into parts."""

    def __init__(self, text: str, base: int, sub: SubFn | None):
        self.text = text
        self.base = base
        self.sub = sub

    def nested(self, kind: str, inner: str, offset: int) -> Script:
        if self.sub is None:
            return Script(body=None, source=inner, parser="none", error="not parsed")
        return self.sub(kind, inner, self.base + offset)

    def dollar(self, i: int, quoted: bool, out: list[Part]) -> int:
        """``text[i] == '$'``: appends the expansion's part, returns the index after it."""
        t = self.text
        n = len(t)
        nxt = t[i + 1] if i + 1 < n else ""
        if t.startswith("$((", i):
            end = match_arith(t, i + 3)
            out.append(Arith(t[i:end]))
            self.arith_subs(i + 3, end, out)
            return end
        if nxt == "(":
            end = match_paren(t, i + 2)
            inner = t[i + 2:end - 1] if end <= n and t[end - 1:end] == ")" else t[i + 2:end]
            out.append(CmdSub(self.nested("$(", inner, i + 2), quoted=quoted))
            return end
        if nxt == "[":
            j = t.find("]", i + 2)
            end = n if j < 0 else j + 1
            out.append(Arith(t[i:end]))
            return end
        if nxt == "{":
            end = match_brace(t, i + 2)
            body = t[i + 2:end - 1] if t[end - 1:end] == "}" else t[i + 2:end]
            out.append(self.braced(body, i + 2, quoted))
            return end
        if nxt and nxt in _NAME_START:
            j = i + 1
            while j < n and t[j] in _NAME_CHARS:
                j += 1
            out.append(Param(t[i + 1:j], quoted=quoted))
            return j
        if nxt and nxt in _SPECIAL_PARAMS:
            out.append(Param(nxt, quoted=quoted, index=nxt if nxt in "@*" else None))
            return i + 2
        out.append(Lit("$", quoted))
        return i + 1

    def arith_subs(self, start: int, end: int, out: list[Part]) -> None:
        """Command substitutions inside ``$((…))`` are kept as parts after the ``Arith``."""
        t = self.text
        i = start
        while i < end:
            if t.startswith("$(", i) and not t.startswith("$((", i):
                e = match_paren(t, i + 2)
                out.append(CmdSub(self.nested("$(", t[i + 2:max(i + 2, e - 1)], i + 2)))
                i = e
            elif t[i] == "`":
                e = skip_backtick(t, i + 1)
                out.append(CmdSub(self.nested("`", unescape_backtick(t[i + 1:max(i + 1, e - 1)]), i + 1)))
                i = e
            else:
                i += 1

    def braced(self, body: str, off: int, quoted: bool) -> Param:
        """The parameter for ``${body}``; ``off`` is body's index in the word text."""
        i, n = 0, len(body)
        length = False
        op = ""
        if body.startswith("#") and n > 1 and body[1] != "}" and body[1:2] not in (":", "-", "=", "?", "+"):
            length = True
            i = 1
        elif body.startswith("!") and n > 1:
            op = "!"
            i = 1
        j = i
        if j < n and body[j] in _NAME_START:
            while j < n and body[j] in _NAME_CHARS:
                j += 1
        elif j < n and body[j].isdigit():
            while j < n and body[j].isdigit():
                j += 1
        elif j < n and body[j] in _SPECIAL_PARAMS:
            j += 1
        name = body[i:j]
        index = None
        if j < n and body[j] == "[":
            k = body.find("]", j)
            if k < 0:
                k = n
            index = body[j + 1:k]
            j = min(n, k + 1)
        arg: Word | None = None
        if j < n:
            rest_op = next((o for o in _PARAM_OPS if body.startswith(o, j)), "")
            if op == "!" and rest_op in ("@", "*") and j + 1 == n:
                op = "!" + rest_op
                j += 1
            else:
                if not rest_op:  # not valid bash ("bad substitution"): keep the text as the operator
                    return Param(name or UNKNOWN, quoted=quoted, op=op + body[j:], index=index, length=length)
                op += rest_op
                j += len(rest_op)
                raw = body[j:]
                if raw or rest_op in (":-", "-", ":=", "=", ":?", "?", ":+", "+"):
                    # a pattern (``"${c#?}"``, ``"${c//a*/b}"``) is read as unquoted text even
                    # inside double quotes, as bash reads it: its wildcards match, its quotes quote
                    in_quotes = quoted and rest_op not in _PATTERN_OPS
                    parts = _Lexer(raw, self.base + off + j, self.sub).lex(quoted_ctx=in_quotes)
                    arg = Word(raw=raw, parts=parts, pos=(self.base + off + j, self.base + off + n))
        if not name:
            name = UNKNOWN
        return Param(name, quoted=quoted, op=op, arg=arg, index=index, length=length)

    def dquoted(self, i: int, end: int, out: list[Part]) -> None:
        """Lexes ``text[i:end]`` as the inside of double quotes."""
        t = self.text
        buf: list[str] = []

        def flush() -> None:
            if buf:
                out.append(Lit(unescape_dquoted("".join(buf)), True))
                buf.clear()

        while i < end:
            c = t[i]
            if c == "\\" and i + 1 < end:
                buf.append(t[i:i + 2])
                i += 2
            elif c == "$" and i + 1 < end:
                flush()
                i = min(self.dollar(i, True, out), end)
            elif c == "`":
                flush()
                e = min(skip_backtick(t, i + 1), end)
                inner = t[i + 1:e - 1] if t[e - 1:e] == "`" and e - 1 > i else t[i + 1:e]
                out.append(CmdSub(self.nested("`", unescape_backtick(inner), i + 1), quoted=True))
                i = e
            else:
                buf.append(c)
                i += 1
        flush()

    def lex(self, quoted_ctx: bool = False) -> tuple[Part, ...]:
        t = self.text
        n = len(t)
        out: list[Part] = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                out.append(Lit("".join(buf), quoted_ctx))
                buf.clear()

        i = 0
        while i < n:
            c = t[i]
            if c == "\\":
                flush()
                if i + 1 < n:
                    if t[i + 1] != "\n":
                        out.append(Lit(t[i + 1], True))
                    i += 2
                else:
                    buf.append(c)
                    i += 1
            elif c == "'" and not quoted_ctx:
                flush()
                e = skip_squote(t, i + 1)
                out.append(Lit(t[i + 1:e - 1] if t[e - 1:e] == "'" and e - 1 > i else t[i + 1:e], True))
                i = e
            elif c == '"':
                flush()
                e = skip_dquote(t, i + 1)
                inner_end = e - 1 if t[e - 1:e] == '"' and e - 1 > i else e
                out.append(Lit("", True))
                self.dquoted(i + 1, inner_end, out)
                i = e
            elif c == "$" and t.startswith("$'", i) and not quoted_ctx:
                flush()
                e = skip_ansi(t, i + 2)
                inner = t[i + 2:e - 1] if t[e - 1:e] == "'" and e - 1 > i + 1 else t[i + 2:e]
                out.append(Lit(decode_ansi_c(inner), True))
                i = e
            elif c == "$" and t.startswith('$"', i):
                flush()
                e = skip_dquote(t, i + 2)
                inner_end = e - 1 if t[e - 1:e] == '"' and e - 1 > i + 1 else e
                out.append(Lit("", True))
                self.dquoted(i + 2, inner_end, out)
                i = e
            elif c == "$":
                flush()
                i = self.dollar(i, quoted_ctx, out)
            elif c == "`":
                flush()
                e = skip_backtick(t, i + 1)
                inner = t[i + 1:e - 1] if t[e - 1:e] == "`" and e - 1 > i else t[i + 1:e]
                out.append(CmdSub(self.nested("`", unescape_backtick(inner), i + 1), quoted=quoted_ctx))
                i = e
            elif c in "<>" and t.startswith("(", i + 1) and not quoted_ctx:
                flush()
                e = match_paren(t, i + 2)
                inner = t[i + 2:e - 1] if t[e - 1:e] == ")" else t[i + 2:e]
                out.append(ProcSub(self.nested(c + "(", inner, i + 2), direction=c))
                i = e
            else:
                buf.append(c)
                i += 1
        flush()
        return merge_lits(out)


def is_assignment(text: str) -> bool:
    """Whether a word's raw text is ``NAME=…``, ``NAME+=…`` or ``NAME[i]=…``."""
    eq = text.find("=")
    if eq <= 0 or text[0] not in _NAME_START:
        return False
    lhs = text[:eq].removesuffix("+")
    name = lhs.split("[", 1)[0] if lhs.endswith("]") else lhs
    return bool(name) and all(ch in _NAME_CHARS for ch in name)


def lex_word(text: str, base: int = 0, sub: SubFn | None = None) -> tuple[Part, ...]:
    """The IR parts of one shell word given its raw text."""
    return _Lexer(text, base, sub).lex()


def make_word(text: str, base: int = 0, sub: SubFn | None = None) -> Word:
    return Word(raw=text, parts=lex_word(text, base, sub), pos=(base, base + len(text)))


def lit_word(text: str, pos: tuple[int, int] = (0, 0), quoted: bool = False) -> Word:
    return Word(raw=text, parts=(Lit(text, quoted),), pos=pos)
