"""Last resort when both parsers reject a command: a conservative, quote-aware token scan.

Splits on ``; && || | |& & newline ( ) { }`` (outside quotes and substitutions) into ``Simple``
commands, keeping pipelines and and-or lists, and reads heredoc bodies as bodies. Words are
unquoted with ``guard.parse.words``; substitutions inside them are parsed with the full chain.
Compound keywords (``if``, ``then``, ``do``, …) are dropped so the commands inside them show.
Never raises.
"""

from __future__ import annotations

import guard.parse.build as build
from guard.ir import Assign, Lit, Node, Redirect, Script, Simple, Word
from guard.parse.nested import reparse
from guard.parse.words import (
    _Lexer,
    is_assignment,
    lex_word,
    match_arith,
    match_brace,
    match_paren,
    merge_lits,
    skip_ansi,
    skip_backtick,
    skip_dquote,
    skip_squote,
)

_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                       "in", "case", "esac", "select", "function", "time", "coproc", "!", "{", "}",
                       "[[", "]]"})
_REDIR_OPS = ("&>>", "<<<", "<<-", ">>", "<<", "<&", ">&", ">|", "<>", "&>", "<", ">")


class _Scanner:
    def __init__(self, src: str, base: int, depth: int):
        self.src = src
        self.base = base
        self.depth = depth
        self.pending: list[tuple[int, str, bool]] = []  # heredocs waiting for the next newline
        self.bodies: dict[int, Word] = {}

    def sub(self, kind: str, inner: str, offset: int) -> Script:
        return reparse(inner, offset, self.depth + 1)

    def word_end(self, i: int) -> int:
        """End index of the word starting at ``i``."""
        s, n = self.src, len(self.src)
        while i < n:
            c = s[i]
            if c in "!@*+?" and s.startswith("(", i + 1):
                i = match_paren(s, i + 2)
                continue
            if c in " \t\n;&|()<>" and not (c in "<>" and s.startswith("(", i + 1)):
                return i
            if c == "\\":
                i += 2
            elif c == "'":
                i = skip_squote(s, i + 1)
            elif c == '"':
                i = skip_dquote(s, i + 1)
            elif c == "`":
                i = skip_backtick(s, i + 1)
            elif c == "$" and s.startswith("$'", i):
                i = skip_ansi(s, i + 2)
            elif c == "$" and s.startswith("$((", i):
                i = match_arith(s, i + 3)
            elif c == "$" and s.startswith("$(", i):
                i = match_paren(s, i + 2)
            elif c == "$" and s.startswith("${", i):
                i = match_brace(s, i + 2)
            elif c in "<>":
                i = match_paren(s, i + 2)
            else:
                i += 1
        return min(i, n)

    def make_word(self, a: int, b: int) -> Word:
        raw = self.src[a:b]
        return Word(raw, lex_word(raw, self.base + a, self.sub), (self.base + a, self.base + b))

    def read_heredocs(self, i: int) -> int:
        """``src[i]`` is a newline: reads the pending heredoc bodies, returns the index after them."""
        s = self.src
        i += 1
        for key, delim, strip in self.pending:
            start = i
            body_lines: list[str] = []
            while i < len(s):
                j = s.find("\n", i)
                line_end = len(s) if j < 0 else j
                line = s[i:line_end]
                i = line_end + 1 if j >= 0 else len(s)
                check = line.lstrip("\t") if strip else line
                if check == delim:
                    break
                body_lines.append((line.lstrip("\t") if strip else line) + "\n")
            body = "".join(body_lines)
            self.bodies[key] = Word(body, (Lit(body, True),) if body else (), (self.base + start, self.base + i))
        self.pending = []
        return i - 1 if i > 0 and i <= len(s) and s[i - 1:i] == "\n" else i

    def scan(self) -> Node | None:
        s, n = self.src, len(self.src)
        raw_items: list[tuple[list, bool]] = []
        stream: list = []
        cmd: list[Word] = []
        assigns: list[Assign] = []
        redirects: list = []  # Redirect or (key, op, fd, quoted) for heredocs
        cmd_start = -1
        i = 0

        def end_command() -> None:
            nonlocal cmd, assigns, redirects, cmd_start
            words = [w for w in cmd if not (w.literal in _KEYWORDS and w.raw in _KEYWORDS)]
            if words or assigns or redirects:
                stream.append(_Pending(words, assigns, redirects, cmd_start + self.base, i + self.base))
            cmd, assigns, redirects, cmd_start = [], [], [], -1

        def end_statement(background: bool) -> None:
            nonlocal stream
            end_command()
            if stream:
                raw_items.append((stream, background))
            stream = []

        while i < n:
            c = s[i]
            if c in " \t":
                i += 1
            elif c == "\\" and s.startswith("\\\n", i):
                i += 2
            elif c == "#" and (i == 0 or s[i - 1] in " \t\n;&|()"):
                j = s.find("\n", i)
                i = n if j < 0 else j
            elif c == "\n":
                end_statement(False)
                if self.pending:
                    i = self.read_heredocs(i)
                i += 1
            elif s.startswith(("&&", "||"), i):
                end_command()
                stream.append(s[i:i + 2])
                i += 2
            elif s.startswith("|&", i) or c == "|":
                end_command()
                op = "|&" if s.startswith("|&", i) else "|"
                stream.append(op)
                i += len(op)
            elif c in ";&" and not s.startswith("&>", i):
                end_statement(c == "&")
                i += 2 if s.startswith(";;", i) else 1
            elif c in "()" and not (c == "(" and cmd and i > 0 and s[i - 1] == "="):
                end_statement(False)
                i += 1
            elif self.redirect_start(i):
                i = self.read_redirect(i, redirects)
                if cmd_start < 0:
                    cmd_start = i
            else:
                e = self.word_end(i)
                if e <= i:
                    e = i + 1
                if cmd_start < 0:
                    cmd_start = i
                if not cmd and is_assignment(s[i:e]):
                    assigns.append(self.assignment(i, e))
                else:
                    cmd.append(self.make_word(i, e))
                i = e
        end_statement(False)
        items: list[tuple[Node, bool]] = []
        for chain, background in raw_items:  # heredoc bodies are known only now
            node = build.build_chain([self.resolve(x) for x in chain])
            if node is not None:
                items.append((node, background))
        return build.make_sequence(items)

    def redirect_start(self, i: int) -> bool:
        s = self.src
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        if j > i and (j >= len(s) or s[j] not in "<>"):
            return False
        if i > 0 and s[i - 1] not in " \t\n;&|()" and j > i:
            return False
        return s.startswith(_REDIR_OPS, j) and not s.startswith(("<(", ">("), j)

    def read_redirect(self, i: int, redirects: list) -> int:
        s, n = self.src, len(self.src)
        j = i
        while j < n and s[j].isdigit():
            j += 1
        fd = int(s[i:j]) if j > i else None
        op = next(o for o in _REDIR_OPS if s.startswith(o, j))
        j += len(op)
        while j < n and s[j] in " \t":
            j += 1
        if j < n and s[j] == "-" and op in ("<&", ">&"):
            redirects.append(Redirect(op, fd, Word("-", (Lit("-"),), (self.base + j, self.base + j + 1))))
            return j + 1
        e = self.word_end(j)
        if op in ("<<", "<<-"):
            raw = s[j:e]
            delim = "".join(p.text for p in lex_word(raw) if isinstance(p, Lit))
            quoted = any(q in raw for q in "'\"\\")
            key = len(self.bodies) + len(self.pending) + 1000 * i
            self.pending.append((key, delim, op == "<<-"))
            redirects.append((key, op, fd, quoted))
            return e
        target = self.make_word(j, e) if e > j else None
        redirects.append(Redirect(op, fd, target))
        return e

    def assignment(self, a: int, b: int) -> Assign:
        raw = self.src[a:b]
        eq = raw.index("=")
        lhs = raw[:eq]
        append = lhs.endswith("+")
        lhs = lhs[:-1] if append else lhs
        index = None
        if "[" in lhs:
            lhs, index = lhs.split("[", 1)[0], lhs.split("[", 1)[1].rstrip("]")
        return Assign(lhs, self.make_word(a + eq + 1, b), append=append, index=index)

    def resolve(self, x: object) -> object:
        if not isinstance(x, _Pending):
            return x
        reds: list[Redirect] = []
        for r in x.redirects:
            if isinstance(r, Redirect):
                reds.append(r)
                continue
            key, op, fd, quoted = r
            body = self.bodies.get(key)
            if body is not None and not quoted and body.raw:
                lexer = _Lexer(body.raw, body.pos[0], self.sub)
                parts: list = []
                lexer.dquoted(0, len(body.raw), parts)
                body = Word(body.raw, merge_lits(parts), body.pos)
            reds.append(Redirect(op, fd, None, body=body, quoted=quoted))
        return Simple(tuple(x.words), tuple(x.assigns), tuple(reds), pos=(x.start, x.end))


class _Pending:
    """A command whose heredoc bodies may not have been read yet."""

    __slots__ = ("words", "assigns", "redirects", "start", "end")

    def __init__(self, words: list, assigns: list, redirects: list, start: int, end: int):
        self.words, self.assigns, self.redirects, self.start, self.end = words, assigns, redirects, start, end


def scan(src: str, base: int = 0, depth: int = 0, error: str | None = None) -> Script:
    """The token-scan IR of ``src`` (``parser="scan"``); ``error`` says why the parsers failed."""
    try:
        body = _Scanner(src, base, depth).scan()
        return Script(body, src, "scan", error=error or "not parsed")
    except Exception as exc:  # noqa: BLE001 - the scan must never raise
        return Script(None, src, "none", error=f"{error}; scan: {type(exc).__name__}")
