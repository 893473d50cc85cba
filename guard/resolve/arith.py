"""Bash arithmetic (``$((…))``, subscripts, ``${x:off:len}``) over partly-unknown variables.

``evaluate_arith(text, st, expand)`` returns the integer value or raises ``ArithUnknown``. The
whole expression is always evaluated, unknown parts included, because bash evaluates it all: a
variable whose value is itself an expression is evaluated too, and a subscript is expanded
first with ``expand`` (which walks any ``$(…)`` in it, since bash runs those).
Assignments (``x=1``, ``i++``) update ``st.vars`` as bash does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guard.ir import UNKNOWN
from guard.resolve.state import State
from guard.resolve.variables import element, resolve_name, set_element

MAX_DEPTH = 16
_MASK = (1 << 64) - 1

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+#[0-9a-zA-Z@_]+|\d+)"
    r"|(?P<name>\$?\{?[A-Za-z_][A-Za-z0-9_]*\}?)"
    r"|(?P<op>\*\*=|<<=|>>=|\*\*|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[-+*/%<>=!~&|^?:,()\[\]]))"
)


class ArithUnknown(Exception):
    """The value depends on something not known statically."""


def _wrap(v: int) -> int:
    v &= _MASK
    return v - (1 << 64) if v >> 63 else v


def _number(tok: str) -> int | None:
    try:
        if tok.startswith(("0x", "0X")):
            return int(tok, 16)
        if "#" in tok:
            base_s, digits = tok.split("#", 1)
            base = int(base_s)
            if not 2 <= base <= 64:
                return None
            alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
            if base <= 36:
                digits = digits.lower()
            v = 0
            for ch in digits:
                d = alphabet.index(ch)
                if d >= base:
                    return None
                v = v * base + d
            return v
        if len(tok) > 1 and tok.startswith("0"):
            return int(tok, 8)
        return int(tok)
    except ValueError:
        return None


class _Eval:
    def __init__(self, text: str, st: State, expand: Callable[[str], str], depth: int) -> None:
        self.toks = self.tokenize(text)
        self.i = 0
        self.st = st
        self.expand = expand
        self.depth = depth

    def tokenize(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ArithUnknown(text)
            pos = m.end()
            kind = m.lastgroup or "op"
            tok = m.group(kind)
            if kind == "name" and tok.startswith("$"):
                tok = tok[1:].strip("{}")
            if kind == "op" and tok == "[":
                # a subscript: its text up to the matching ] is expanded, not tokenised
                depth, j = 1, pos
                while j < len(text) and depth:
                    depth += {"[": 1, "]": -1}.get(text[j], 0)
                    j += 1
                out.append(("sub", text[pos:j - 1]))
                pos = j
                continue
            out.append((kind, tok))
        return out

    def peek(self) -> str:
        return self.toks[self.i][1] if self.i < len(self.toks) and self.toks[self.i][0] == "op" else ""

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise ArithUnknown("unexpected end")
        t = self.toks[self.i]
        self.i += 1
        return t

    # values: int, or None for unknown; names come back as ("ref", name, subscript)

    def comma(self) -> int | None:
        v = self.assign()
        while self.peek() == ",":
            self.i += 1
            v = self.assign()
        return v

    def assign(self) -> int | None:
        start = self.i
        if self.i + 1 < len(self.toks) and self.toks[self.i][0] == "name":
            j = self.i + 1
            sub = None
            if self.toks[j][0] == "sub":
                sub = self.toks[j][1]
                j += 1
            if j < len(self.toks) and self.toks[j][0] == "op" and self.toks[j][1] in (
                "=", "*=", "/=", "%=", "+=", "-=", "<<=", ">>=", "&=", "^=", "|=", "**="
            ):
                name, op = self.toks[self.i][1], self.toks[j][1]
                self.i = j + 1
                rhs = self.assign()
                if op == "=":
                    val = rhs
                else:
                    cur = self.var(name, sub)
                    val = None if cur is None or rhs is None else self.binary(op[:-1], cur, rhs)
                self.store(name, sub, val)
                return val
        self.i = start
        return self.ternary()

    def ternary(self) -> int | None:
        c = self.binop(0)
        if self.peek() == "?":
            self.i += 1
            a = self.assign()
            if self.peek() != ":":
                raise ArithUnknown("?: without :")
            self.i += 1
            b = self.assign()
            if c is None:
                return None
            return a if c else b
        return c

    _LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
               ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def binop(self, level: int) -> int | None:
        if level >= len(self._LEVELS):
            return self.power()
        left = self.binop(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()[1]
            right = self.binop(level + 1)
            left = None if left is None or right is None else self.binary(op, left, right)
        return left

    def power(self) -> int | None:
        base = self.unary()
        if self.peek() == "**":
            self.i += 1
            exp = self.power()
            if base is None or exp is None or exp < 0 or exp > 4096:
                return None
            return _wrap(base ** exp)
        return base

    def binary(self, op: str, a: int, b: int) -> int | None:
        if op in ("/", "%") and b == 0:
            return None
        if op == "/":
            q = abs(a) // abs(b)
            return _wrap(q if (a >= 0) == (b >= 0) else -q)
        if op == "%":
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        if op in ("<<", ">>") and not 0 <= b < 64:
            return None
        return _wrap({
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << b,
            ">>": lambda: a >> b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
            "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
            "&&": lambda: int(bool(a) and bool(b)), "||": lambda: int(bool(a) or bool(b)),
        }[op]())

    def unary(self) -> int | None:
        op = self.peek()
        if op in ("!", "~", "-", "+"):
            self.i += 1
            v = self.unary()
            if v is None:
                return None
            return {"!": int(not v), "~": ~v, "-": _wrap(-v), "+": v}[op]
        if op in ("++", "--"):
            self.i += 1
            kind, name = self.take()
            if kind != "name":
                raise ArithUnknown("++ without a name")
            sub = self.subscript()
            cur = self.var(name, sub)
            val = None if cur is None else cur + (1 if op == "++" else -1)
            self.store(name, sub, val)
            return val
        return self.postfix()

    def subscript(self) -> str | None:
        if self.i < len(self.toks) and self.toks[self.i][0] == "sub":
            self.i += 1
            return self.toks[self.i - 1][1]
        return None

    def postfix(self) -> int | None:
        kind, tok = self.take()
        if kind == "num":
            return _number(tok)
        if kind == "op" and tok == "(":
            v = self.comma()
            if self.peek() != ")":
                raise ArithUnknown("unbalanced (")
            self.i += 1
            return v
        if kind != "name":
            raise ArithUnknown(tok)
        sub = self.subscript()
        cur = self.var(tok, sub)
        if self.peek() in ("++", "--"):
            op = self.take()[1]
            self.store(tok, sub, None if cur is None else cur + (1 if op == "++" else -1))
        return cur

    def var(self, name: str, sub: str | None) -> int | None:
        key = self.index(sub)
        name = resolve_name(name, self.st)
        if name not in self.st.vars:
            return None
        val = self.st.vars[name]
        if val is None or key is None:
            return None
        try:
            text = element(val, key) if (sub is not None or not isinstance(val, str)) else val
        except ValueError:
            return None
        if text is None or text == "":
            return 0
        if UNKNOWN in text:
            return None
        n = _number(text.strip())
        if n is not None:
            return n
        if self.depth >= MAX_DEPTH:
            return None
        try:
            return _Eval(text, self.st, self.expand, self.depth + 1).run()
        except ArithUnknown:
            return None

    def index(self, sub: str | None) -> str | None:
        """The key a subscript selects: expanded (its substitutions walked), then evaluated."""
        if sub is None:
            return "0"
        text = self.expand(sub)
        if UNKNOWN in text:
            return None
        try:
            v = _Eval(text, self.st, self.expand, self.depth + 1).run() if text.strip() else 0
        except ArithUnknown:
            return None
        return None if v is None else str(v)

    def store(self, name: str, sub: str | None, val: int | None) -> None:
        text = UNKNOWN if val is None else str(val)
        key = "0" if sub is None else self.index(sub)
        set_element(self.st, name, key, text)

    def run(self) -> int | None:
        if not self.toks:
            return 0
        v = self.comma()
        if self.i != len(self.toks):
            raise ArithUnknown("trailing tokens")
        return v


def evaluate_arith(text: str, st: State, expand: Callable[[str], str], depth: int = 0) -> int:
    """The value of an arithmetic expression; ArithUnknown when it cannot be known."""
    if UNKNOWN in text:
        raise ArithUnknown(text)
    v = _Eval(text, st, expand, depth).run()
    if v is None:
        raise ArithUnknown(text)
    return v
