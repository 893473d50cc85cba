"""Lowering of a tree-sitter-bash tree to the IR.

``lower(src, base, depth)`` returns a ``Script`` with ``parser="tree-sitter"`` or raises
``Unparsed`` when the tree must not be trusted: an ERROR or MISSING node (``has_error``), a node
type this lowering does not know, or the upstream #347 shape (a bare newline between two children of
one ``command``, which hides the next line's command among the arguments).

Offsets from tree-sitter are UTF-8 byte offsets; every position in the IR is a character offset
into the whole command (``base`` is the offset of ``src`` in it, for nested parses).
"""

from __future__ import annotations

import re
from bisect import bisect_left

import guard.parse.build as build
from guard.ir import (
    UNKNOWN,
    Arith,
    Assign,
    CmdSub,
    FunctionDef,
    Group,
    Lit,
    Node,
    Param,
    Part,
    ProcSub,
    Redirect,
    Script,
    Simple,
    Subshell,
    Word,
)
from guard.parse._ts_loader import get_parser  # loads tree-sitter on the first call, not here
from guard.parse.nested import reparse
from guard.parse.words import (
    _PATTERN_OPS,
    _Lexer,
    decode_ansi_c,
    lex_word,
    merge_lits,
    unescape_dquoted,
    unescape_unquoted,
)
from guard.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any

MAX_DEPTH = 200
# Budgets (README "Limits"): statements lowered into the IR, and CPU seconds tree-sitter may spend
# on one input. Agent commands use a few hundred statements and well under 10 ms; a pipeline of
# 200,000 stages costs tree-sitter 2 s and 570 MB. Past a budget the result is partial and says so.
MAX_STATEMENTS = 10_000
MAX_WORDS = 20_000
PARSE_CPU_SECONDS = 0.5
QUICK_CPU_SECONDS = 0.02  # in-process try for input over ISOLATE_ABOVE, before any fork
ISOLATE_ABOVE = 8 * 1024  # bytes; 17 of the shared corpus's 29,430 commands are larger
CHILD_CPU_SECONDS = 1
CHILD_WALL_SECONDS = 5.0
CHILD_MEMORY = 768 << 20  # bytes of address space the trial parse may add
_CHUNK = 64 * 1024


class OverBudget(Exception):
    """The parse went past a budget: the caller gives up on this input rather than retrying."""

_WORDLIKE = frozenset({
    "word", "number", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
    "simple_expansion", "expansion", "command_substitution", "process_substitution",
    "arithmetic_expansion", "brace_expression", "extglob_pattern", "regex", "test_operator",
    "variable_name", "special_variable_name", "file_descriptor",
})
_EXPR = frozenset({
    "binary_expression", "unary_expression", "parenthesized_expression", "postfix_expression",
    "ternary_expression", "test_command", "compound_statement", "variable_assignment", "subscript",
})
_CHAIN = frozenset({"pipeline", "list", "negated_command"})
_COMPOUND = frozenset({"subshell", "compound_statement"})
_CHAIN_OPS = frozenset({"|", "|&", "&&", "||", "!"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SKIP = frozenset({"comment"})
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion",
                         "process_substitution"})
_DEFAULT_OPS = frozenset({":-", "-", ":=", "=", ":?", "?", ":+", "+"})
_PLAIN = frozenset(" \t\n\\$'\"`<>")
# Runs of characters of one UTF-8 width: 2, 3 (surrogates too, as surrogatepass writes them), 4.
_WIDE_RUNS = re.compile("([\u0080-\u07ff]+)|([\u0800-\uffff]+)|([\U00010000-\U0010ffff]+)")


class Unparsed(Exception):
    """The tree cannot be trusted; the reason is the message."""


class _Lower:
    def __init__(self, src: str, data: bytes, base: int, depth: int):
        self.src = src
        self.data = data
        self.base = base
        self.depth = depth
        self.too_deep = False
        self.statements = 0
        self.words = 0
        self.truncated = False
        self._starts: list[int] | None = None
        self._extra: list[int] = []
        if len(data) != len(src):
            self._starts, self._extra = _multibyte_map(src)

    # ----------------------------------------------------------------- positions and text

    def ch(self, b: int) -> int:
        """Character offset (within src) of byte offset ``b``."""
        if self._starts is None:
            return b
        return b - self._extra[bisect_left(self._starts, b)]

    # span/text/pos run a few hundred thousand times per corpus pass; for ASCII input (nearly
    # all of it) byte and character offsets agree, so they slice directly instead of via ch().

    def span(self, a: int, b: int) -> str:
        if self._starts is None:
            return self.src[a:b]
        return self.src[self.ch(a):self.ch(b)]

    def text(self, n: Any) -> str:
        if self._starts is None:
            return self.src[n.start_byte:n.end_byte]
        return self.src[self.ch(n.start_byte):self.ch(n.end_byte)]

    def pos(self, n: Any) -> tuple[int, int]:
        if self._starts is None:
            return (self.base + n.start_byte, self.base + n.end_byte)
        return (self.base + self.ch(n.start_byte), self.base + self.ch(n.end_byte))

    def enter(self) -> bool:
        """One level deeper; False (and ``too_deep``) past MAX_DEPTH. The caller undoes the step.

        ``body``, ``stmt`` and ``parts`` run this test inline (``depth >= MAX_DEPTH`` before the
        step): they are entered a quarter of a million times per corpus pass.
        """
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.too_deep = True
            return False
        return True

    def opaque_word(self, n: Any) -> Word:
        return Word(self.text(n), (Lit(UNKNOWN),), self.pos(n))

    # ----------------------------------------------------------------- statements

    def body(self, children: list[Any]) -> Node | None:
        """A statement list (children of program, a group, a do_group, …) as one node."""
        if self.depth >= MAX_DEPTH:
            self.too_deep = True
            if not children:
                return None
            first, last = children[0], children[-1]
            word = Word(self.span(first.start_byte, last.end_byte), (Lit(UNKNOWN),),
                        (self.pos(first)[0], self.pos(last)[1]))
            return Simple((word,), pos=word.pos)
        self.depth += 1
        try:
            return self._body(children)
        finally:
            self.depth -= 1

    def _body(self, children: list[Any]) -> Node | None:
        items: list[tuple[Node, bool]] = []
        for c in children:
            if self.truncated:
                break
            t = c.type
            if not c.is_named:
                if t == "&" and items:
                    items[-1] = (items[-1][0], True)
                continue
            if t in _SKIP or t == "heredoc_body":
                continue
            items.append((self.stmt(c), False))
        return build.make_sequence(items)

    def stmt(self, n: Any) -> Node:
        self.statements += 1
        if self.statements > MAX_STATEMENTS:
            self.truncated = True
            return Simple((self.opaque_word(n),), pos=self.pos(n))
        if self.depth >= MAX_DEPTH:
            self.too_deep = True
            return Simple((self.opaque_word(n),), pos=self.pos(n))
        self.depth += 1
        try:
            return self._stmt(n)
        finally:
            self.depth -= 1

    def _stmt(self, n: Any) -> Node:
        t = n.type
        if t == "command":
            return self.command(n)
        if t in ("declaration_command", "unset_command"):
            return self.declaration(n)
        if t == "test_command":
            return self.flat_simple(n, n.children)
        if t == "compound_statement":
            kids = n.children
            if kids and kids[0].type == "((":
                return self.flat_simple(n, kids)
            return Group(self.clauses(kids), kind="group")
        if t == "subshell":
            inner = self.body(n.children)
            return Subshell(inner if inner is not None else Simple((), pos=self.pos(n)))
        if t in _CHAIN or t == "redirected_statement":
            stream: list = []
            self.flatten(n, stream)
            node = build.build_chain(stream)
            if node is None:
                raise Unparsed(f"empty {t}")
            return node
        if t == "if_statement":
            return self.if_stmt(n)
        if t == "while_statement":
            kids = n.children
            kind = kids[0].type if kids and kids[0].type in ("while", "until") else "while"
            return Group(self.clauses(kids), kind=kind)
        if t == "for_statement":
            return self.for_stmt(n)
        if t == "c_style_for_statement":
            return self.c_for(n)
        if t == "case_statement":
            return self.case_stmt(n)
        if t == "function_definition":
            return self.function(n)
        if t == "variable_assignment":
            return Simple((), (self.assign(n),), pos=self.pos(n))
        if t == "variable_assignments":
            assigns = tuple(self.assign(c) for c in n.named_children if c.type == "variable_assignment")
            return Simple((), assigns, pos=self.pos(n))
        raise Unparsed(f"unsupported node {t}")

    def clauses(self, kids: list[Any]) -> tuple[Node, ...]:
        """Statement runs between keywords, each lowered to one node (conditions and bodies)."""
        out: list[Node] = []
        run: list[Any] = []

        def flush() -> None:
            node = self.body(run)
            if node is not None:
                out.append(node)
            run.clear()

        for c in kids:
            if c.is_named and c.type in ("do_group", "elif_clause", "else_clause"):
                flush()
                out.extend(self.clauses(c.children))
            elif c.is_named or c.type == "&":
                run.append(c)
            elif c.type != ";":
                flush()
        flush()
        return tuple(out)

    def if_stmt(self, n: Any) -> Node:
        return Group(self.clauses(n.children), kind="if")

    def for_stmt(self, n: Any) -> Node:
        kids = n.children
        kind = "select" if kids and kids[0].type == "select" else "for"
        var = n.child_by_field_name("variable")
        words = tuple(self.word(c) for c in n.children_by_field_name("value"))
        body = n.child_by_field_name("body")
        clauses = self.clauses(body.children) if body is not None else ()
        return Group(clauses, kind=kind, words=words, loop_var=self.text(var) if var is not None else None)

    def c_for(self, n: Any) -> Node:
        words: list[Word] = []
        body = n.child_by_field_name("body")
        for c in n.children:
            if body is not None and c.id == body.id:
                continue
            if c.is_named:
                self.flat_words(c, words)
        clauses = self.clauses(body.children) if body is not None else ()
        return Group(clauses, kind="arith-for", words=tuple(words))

    def case_stmt(self, n: Any) -> Node:
        words: list[Word] = []
        subject = n.child_by_field_name("value")
        if subject is not None:
            words.append(self.word(subject))
        bodies: list[Node] = []
        for item in n.named_children:
            if item.type != "case_item":
                continue
            stmts = []
            for c in item.children:
                if item.field_name_for_child(_index(item, c)) == "value":
                    words.append(self.word(c))
                elif c.is_named and c.type not in _SKIP:
                    stmts.append(c)
            node = self.body(stmts)
            if node is not None:
                bodies.append(node)
        return Group(tuple(bodies), kind="case", words=tuple(words))

    def function(self, n: Any) -> Node:
        name = n.child_by_field_name("name")
        body = n.child_by_field_name("body")
        if name is None or body is None:
            raise Unparsed("function without name or body")
        node = self.stmt(body)
        redirects = tuple(self.redirect(c, []) for c in n.children_by_field_name("redirect"))
        node = build.attach_redirects(node, redirects)
        return FunctionDef(self.text(name), node, source=self.text(n))

    # ----------------------------------------------------------------- chains

    def flatten(self, n: Any, out: list) -> None:
        """Appends the nodes and operators of a pipeline / and-or list to ``out``."""
        t = n.type
        if t in _CHAIN:
            for c in n.children:
                if self.truncated:
                    break
                if c.is_named:
                    if c.type not in _SKIP:
                        self.flatten(c, out)
                elif c.type in _CHAIN_OPS:
                    out.append(c.type)
                else:
                    raise Unparsed(f"unexpected {c.type!r} in {t}")
            return
        if t == "redirected_statement":
            body = n.child_by_field_name("body")
            self.check_gaps(n.children)
            rest: list = []
            redirects: list[Redirect] = []
            for c in n.children:
                if body is not None and c.id == body.id:
                    continue
                if c.type in _REDIRECTS:
                    redirects.append(self.redirect(c, rest))
                elif c.is_named and c.type not in _SKIP:
                    raise Unparsed(f"unexpected {c.type} in redirected_statement")
            redirects.extend(r for r in rest if isinstance(r, Redirect))
            rest = [r for r in rest if not isinstance(r, Redirect)]
            if body is None:
                out.append(Simple((), redirects=tuple(redirects), pos=self.pos(n)))
            elif body.type in _CHAIN or body.type == "redirected_statement":
                self.flatten(body, out)
                if not out or isinstance(out[-1], str):
                    raise Unparsed("redirect after an operator")
                out[-1] = build.attach_redirects(out[-1], tuple(redirects))
            else:
                node = self.stmt(body)
                firsts = [c for c in n.children if c.type in _REDIRECTS]
                if firsts:
                    node, redirects = self.glued_fd(node, firsts[0], redirects, self.pos(firsts[0])[0])
                out.append(build.attach_redirects(node, tuple(redirects)))
            out.extend(rest)
            return
        out.append(self.stmt(n))

    # ----------------------------------------------------------------- commands

    def check_gaps(self, kids: list[Any]) -> None:
        """Between the children of one command only blanks may stand.

        A bare newline there is upstream #347 (the next line's command read as arguments); any
        other text is something tree-sitter dropped (``python3 - <<'EOF'`` loses the ``-``).
        """
        data = self.data
        for a, b in zip(kids, kids[1:], strict=False):
            end, start = a.end_byte, b.start_byte
            if start > end:
                if not data[end:start].strip(b" \t"):
                    continue  # only blanks: the usual case, decided on the bytes
                gap = self.span(end, start).replace("\\\n", "")
                if "\n" in gap:
                    raise Unparsed("newline inside a command (tree-sitter-bash #347)")
                if gap.strip(" \t"):
                    raise Unparsed(f"tree-sitter dropped {gap.strip()[:20]!r}")

    def command(self, n: Any) -> Node:
        kids = n.children
        self.check_gaps(kids)
        assigns: list[Assign] = []
        redirects: list[Redirect] = []
        arg_nodes: list[Any] = []
        rest: list = []
        compound: list[Any] = []
        for c in kids:
            t = c.type
            if t == "variable_assignment" and not arg_nodes:
                assigns.append(self.assign(c))
            elif t in _REDIRECTS:
                redirects.append(self.redirect(c, rest))
            elif t == "command_name":
                for k in c.children:
                    arg_nodes.append(k)
                    if k.type in _COMPOUND:
                        compound.append(k)
            elif t in _SKIP:
                continue
            else:
                arg_nodes.append(c)
                if t in _COMPOUND:
                    compound.append(c)
        if rest:
            redirects.extend(r for r in rest if isinstance(r, Redirect))
            if any(not isinstance(r, Redirect) for r in rest):
                raise Unparsed("heredoc continuation inside a command")
        if compound:
            # `time ( … )` / `time { …; }`: the timed compound command itself.
            if len(arg_nodes) == 2 and self.text(arg_nodes[0]) == "time" and not assigns:
                return build.attach_redirects(self.stmt(compound[0]), tuple(redirects))
            raise Unparsed(f"{compound[0].type} as a command argument")
        words = self.group_words(arg_nodes)
        words = self.strip_keyword(words)
        return Simple(tuple(words), tuple(assigns), tuple(redirects), pos=self.pos(n))

    @staticmethod
    def glued_fd(node: Node, first: Any, redirects: list[Redirect], start: int) -> tuple[Node, list[Redirect]]:
        """``cat 0<&3-``: tree-sitter reads the ``0`` as an argument; it is the redirect's fd."""
        if not (isinstance(node, Simple) and len(node.words) > 1 and redirects):
            return node, redirects
        last = node.words[-1]
        r = redirects[0]
        if last.raw.isdigit() and last.pos[1] == start and r.fd is None and first.type == "file_redirect":
            redirects = [Redirect(r.op, int(last.raw), r.target, r.body, r.quoted), *redirects[1:]]
            return replace(node, words=node.words[:-1]), redirects
        return node, redirects

    def strip_keyword(self, words: list[Word]) -> list[Word]:
        """``time [-p] cmd`` → ``cmd``; ``coproc cmd`` → ``cmd``."""
        if not words or words[0].raw not in ("time", "coproc"):
            return words
        if words[0].raw == "coproc":
            if any(w.raw in ("{", "}") or w.raw.startswith("(") for w in words[1:]):
                raise Unparsed("coproc with a compound command")
            return words[1:] or words
        i = 1
        while i < len(words) and words[i].raw in ("-p", "--"):
            i += 1
        return words[i:] or words

    def group_words(self, nodes: list[Any]) -> list[Word]:
        """Words from argument nodes; nodes that touch form one word (``$"…"``, ``$(a)`b```)."""
        out: list[Word] = []
        i, count = 0, len(nodes)
        while i < count:
            self.words += 1
            if self.words > MAX_WORDS:  # the rest of the command is one word of unknown text
                self.truncated = True
                raw = self.span(nodes[i].start_byte, nodes[-1].end_byte)
                out.append(Word(raw, (Lit(UNKNOWN),), (self.pos(nodes[i])[0], self.pos(nodes[-1])[1])))
                break
            first = nodes[i]
            j, end = i + 1, first.end_byte
            while j < count and nodes[j].start_byte == end:
                end = nodes[j].end_byte
                j += 1
            if j == i + 1 and first.is_named:  # a word on its own, the usual case
                out.append(self.word(first))
            else:
                out.append(self.joined_word(nodes[i:j]))
            i = j
        return out

    def joined_word(self, g: list[Any]) -> Word:
        """One word from touching nodes (``$"…"``, ``$(a)`b```), or from one anonymous node."""
        parts: list[Part] = []
        for c in g:
            if c.type == "$" and not c.is_named:
                continue
            parts.extend(self.parts(c, False) if c.is_named else (Lit(self.text(c)),))
        start, end = g[0], g[-1]
        raw = self.span(start.start_byte, end.end_byte)
        return Word(raw, merge_lits(parts), (self.pos(start)[0], self.pos(end)[1]))

    def declaration(self, n: Any) -> Node:
        words: list[Word] = []
        redirects: list[Redirect] = []
        rest: list = []
        for c in n.children:
            if not c.is_named:
                words.append(Word(c.type, (Lit(c.type),), self.pos(c)))
            elif c.type == "variable_assignment":
                words.append(self.assign_word(c))
            elif c.type in _REDIRECTS:
                redirects.append(self.redirect(c, rest))
            elif c.type not in _SKIP:
                words.append(self.word(c))
        redirects.extend(r for r in rest if isinstance(r, Redirect))
        if any(not isinstance(r, Redirect) for r in rest):
            raise Unparsed("heredoc continuation inside a declaration")
        return Simple(tuple(words), (), tuple(redirects), pos=self.pos(n))

    def flat_simple(self, n: Any, kids: list[Any]) -> Node:
        words: list[Word] = []
        for c in kids:
            self.flat_words(c, words)
        return Simple(tuple(words), pos=self.pos(n))

    def flat_words(self, n: Any, out: list[Word]) -> None:
        """Test and arithmetic commands: every operand a Word, every operator a literal Word."""
        if not n.is_named:
            out.append(Word(n.type, (Lit(n.type),), self.pos(n)))
        elif n.type in _WORDLIKE or n.type == "concatenation":
            out.append(self.word(n))
        elif n.type in _EXPR:
            if not self.enter():
                self.depth -= 1
                out.append(self.opaque_word(n))
                return
            try:
                for c in n.children:
                    self.flat_words(c, out)
            finally:
                self.depth -= 1
        elif n.type in _SKIP:
            return
        else:
            raise Unparsed(f"unsupported node {n.type} in a test")

    # ----------------------------------------------------------------- assignments, redirects

    def assign(self, n: Any) -> Assign:
        name_node = n.child_by_field_name("name")
        value = n.child_by_field_name("value")
        append = any(not c.is_named and c.type == "+=" for c in n.children)
        index = None
        if name_node is None:
            raise Unparsed("assignment without a name")
        if name_node.type == "subscript":
            idx = name_node.child_by_field_name("index")
            index = self.text(idx) if idx is not None else ""
            inner = name_node.child_by_field_name("name")
            name = self.text(inner) if inner is not None else self.text(name_node).split("[", 1)[0]
        else:
            name = self.text(name_node)
        if value is None:
            return Assign(name, Word("", (), self.pos(n)[1:] * 2), append=append, index=index)
        if value.type == "array":
            elems = tuple(self.word(c) for c in value.named_children if c.type not in _SKIP)
            return Assign(name, None, array=elems, append=append, index=index)
        return Assign(name, self.word(value), append=append, index=index)

    def assign_word(self, n: Any) -> Word:
        """``X=1`` as a declaration argument: one word, ``Lit("X=")`` + the value's parts."""
        value = n.child_by_field_name("value")
        if value is None:
            return Word(self.text(n), (Lit(self.text(n)),), self.pos(n))
        prefix = self.span(n.start_byte, value.start_byte)
        if value.type == "array":
            parts: list[Part] = [Lit(prefix + "(")]
            for i, c in enumerate(x for x in value.named_children if x.type not in _SKIP):
                if i:
                    parts.append(Lit(" "))
                parts.extend(self.parts(c, False))
            parts.append(Lit(")"))
        else:
            parts = [Lit(prefix), *self.parts(value, False)]
        return Word(self.text(n), merge_lits(parts), self.pos(n))

    def redirect(self, n: Any, rest: list) -> Redirect:
        """One redirect; commands tree-sitter nested in a heredoc line are appended to ``rest``."""
        t = n.type
        fd = None
        desc = n.child_by_field_name("descriptor")
        if desc is not None:
            try:
                fd = int(self.text(desc))
            except ValueError:
                fd = None
        if t == "heredoc_redirect":
            return self.heredoc(n, fd, rest)
        op = ""
        target: list[Any] = []
        for c in n.children:
            if desc is not None and c.id == desc.id:
                continue
            if not c.is_named:
                if not op:
                    op = c.type
                continue
            if c.type not in _SKIP:
                target.append(c)
        if op in (">&-", "<&-"):
            return Redirect(op[:2], fd, Word("-", (Lit("-"),), self.pos(n)))
        if op == "<<<":
            op = "<<<"
        if not op:
            raise Unparsed("redirect without an operator")
        words = self.group_words(target)
        return Redirect(op, fd, words[0] if words else None)

    def heredoc(self, n: Any, fd: int | None, rest: list) -> Redirect:
        op = "<<"
        start = body = end = None
        for c in n.children:
            t = c.type
            if not c.is_named:
                if t in ("<<", "<<-") and start is None:
                    op = t
                elif t in _CHAIN_OPS:
                    rest.append(t)
                elif t in (";", "&"):
                    raise Unparsed(f"{t!r} after a heredoc start")
            elif t == "heredoc_start":
                start = c
            elif t == "heredoc_body":
                body = c
            elif t == "heredoc_end":
                end = c
            elif t in _SKIP or t == "file_descriptor":
                continue
            elif t in _REDIRECTS:
                rest.append(self.redirect(c, rest))
            else:
                self.flatten(c, rest)
        if start is None:
            raise Unparsed("heredoc without a delimiter")
        delim = self.text(start)
        quoted = any(q in delim for q in "'\"\\")
        # Body: from the start of the first body line to the start of the terminator line.
        if body is not None:
            b0 = self.ch(body.start_byte)
        elif end is not None:
            b0 = self.ch(end.start_byte)
        else:
            b0 = self.ch(start.end_byte)
        b0 = self.src.rfind("\n", 0, b0) + 1 if b0 > 0 else 0
        if end is not None:
            e0 = self.ch(end.start_byte)
            e0 = max(b0, self.src.rfind("\n", 0, e0) + 1)
        elif body is not None:
            e0 = self.ch(body.end_byte)
        else:
            e0 = b0
        raw = self.src[b0:e0]
        strip = op == "<<-"
        if quoted or body is None:
            text = _strip_tabs(raw) if strip else raw
            word = Word(raw, (Lit(text, True),) if text else (), (self.base + b0, self.base + e0))
        else:
            parts: list[Part] = []
            cursor = b0
            for c in body.named_children:
                if c.type not in _EXPANSIONS:
                    continue
                cs = self.ch(c.start_byte)
                if cs > cursor:
                    parts.extend(self._heredoc_text(self.src[cursor:cs], strip, cursor))
                parts.extend(self.parts(c, True))
                cursor = self.ch(c.end_byte)
            if e0 > cursor:
                parts.extend(self._heredoc_text(self.src[cursor:e0], strip, cursor))
            word = Word(raw, merge_lits(parts), (self.base + b0, self.base + e0))
        return Redirect(op, fd, None, body=word, quoted=quoted)

    def _heredoc_text(self, text: str, strip: bool, offset: int) -> list[Part]:
        """Body text between the expansions tree-sitter found (it misses backticks there)."""
        if strip:
            text = _strip_tabs(text)
        if "`" not in text and "$" not in text:
            return [Lit(unescape_dquoted(text, "$`\\"), True)]
        out: list[Part] = []
        _Lexer(text, self.base + offset, self.sub).dquoted(0, len(text), out)
        return out

    def sub(self, kind: str, inner: str, offset: int) -> Script:
        return reparse(inner, offset, self.depth + 1)

    # ----------------------------------------------------------------- words

    def word(self, n: Any) -> Word:
        t = n.type
        if (t == "word" or t == "number") and self.depth < MAX_DEPTH and self._starts is None:
            # Most words are plain (``-la``, ``src/x.py``) in ASCII text: one literal, no lexing,
            # no merging, byte offsets used as they are.
            a, b = n.start_byte, n.end_byte
            text = self.src[a:b]
            if _PLAIN.isdisjoint(text):
                return Word(text, (Lit(text),) if text else (), (self.base + a, self.base + b))
        return Word(self.text(n), merge_lits(list(self.parts(n, False))), self.pos(n))

    def parts(self, n: Any, quoted: bool) -> tuple[Part, ...] | list[Part]:
        if self.depth >= MAX_DEPTH:
            self.too_deep = True
            return (Lit(UNKNOWN, quoted),)
        self.depth += 1
        try:
            return self._parts(n, quoted)
        finally:
            self.depth -= 1

    def _parts(self, n: Any, quoted: bool) -> tuple[Part, ...] | list[Part]:
        t = n.type
        if t in ("word", "number"):
            text = self.text(n)
            if quoted:
                return (Lit(unescape_dquoted(text), True),)
            if _PLAIN.isdisjoint(text):
                return (Lit(text),)
            return lex_word(text, self.base + self.ch(n.start_byte), None)
        if t in ("string", "translated_string"):
            return self.string(n)
        if t == "raw_string":
            text = self.text(n)
            return (Lit(text[1:-1] if len(text) >= 2 else "", True),)
        if t == "ansi_c_string":
            text = self.text(n)
            return (Lit(decode_ansi_c(text[2:-1] if len(text) >= 3 else ""), True),)
        if t == "concatenation":
            return self.concat(n, quoted)
        if t == "simple_expansion":
            name = self.text(n)[1:]
            return (Param(name, quoted=quoted, index=name if name in ("@", "*") else None),)
        if t == "expansion":
            return (self.expansion(n, quoted),)
        if t == "command_substitution":
            return (CmdSub(self.nested(n), quoted=quoted),)
        if t == "process_substitution":
            text = self.text(n)
            return (ProcSub(self.nested(n), direction=text[:1] if text[:1] in "<>" else "<"),)
        if t == "arithmetic_expansion":
            out: list[Part] = [Arith(self.text(n))]
            self.arith_subs(n, out)
            return out
        if t in ("brace_expression", "extglob_pattern", "regex", "test_operator", "variable_name",
                 "special_variable_name", "file_descriptor"):
            return (Lit(self.text(n), quoted),)
        if not n.is_named:
            return (Lit(self.text(n), quoted),)
        if t == "array":  # `${x:+(a b)}`: tree-sitter reads the parentheses as an array
            return _Lexer(self.text(n), self.base + self.ch(n.start_byte), self.sub).lex(quoted_ctx=quoted)
        raise Unparsed(f"unsupported word node {t}")

    def concat(self, n: Any, quoted: bool) -> list[Part]:
        parts: list[Part] = []
        cursor = n.start_byte
        kids = n.children
        for i, c in enumerate(kids):
            if c.start_byte > cursor:
                parts.append(Lit(unescape_unquoted(self.span(cursor, c.start_byte)), quoted))
            if not c.is_named and c.type == "$" and i + 1 < len(kids) and kids[i + 1].type == "string":
                pass
            elif c.is_named:
                parts.extend(self.parts(c, quoted))
            else:
                parts.append(Lit(self.text(c), quoted))
            cursor = max(cursor, c.end_byte)
        if n.end_byte > cursor:
            parts.append(Lit(unescape_unquoted(self.span(cursor, n.end_byte)), quoted))
        return parts

    def string(self, n: Any) -> list[Part]:
        """``"…"`` (or ``$"…"``): text between the expansions is unescaped double-quoted text."""
        text = self.text(n)
        start = n.start_byte + (2 if text.startswith('$"') else 1)
        stop = n.end_byte - 1 if text.endswith('"') and len(text) >= 2 else n.end_byte
        parts: list[Part] = [Lit("", True)]
        cursor = start
        for c in n.named_children:
            if c.type == "string" and n.type == "translated_string":
                return self.string(c)
            if c.type not in _EXPANSIONS:
                continue
            if c.start_byte > cursor:
                parts.append(Lit(unescape_dquoted(self.span(cursor, c.start_byte)), True))
            parts.extend(self.parts(c, True))
            cursor = c.end_byte
        if stop > cursor:
            parts.append(Lit(unescape_dquoted(self.span(cursor, stop)), True))
        return parts

    def expansion(self, n: Any, quoted: bool) -> Param:
        name = ""
        op = ""
        index: str | None = None
        length = False
        arg_start: int | None = None
        arg_end = n.end_byte
        for c in n.children:
            t = c.type
            if arg_start is not None:
                if t == "}" and not c.is_named:
                    arg_end = c.start_byte
                continue
            if not c.is_named:
                if t in ("${", "}"):
                    if t == "}":
                        arg_end = c.start_byte
                    continue
                if not name and t == "#":
                    length = True
                elif not name and t == "!":
                    op = "!"
                elif name:
                    op += t
                    arg_start = c.end_byte
                else:
                    op += t
            elif not name and t in ("variable_name", "special_variable_name"):
                name = self.text(c)
            elif not name and t == "subscript":
                inner = c.child_by_field_name("name")
                idx = c.child_by_field_name("index")
                name = self.text(inner) if inner is not None else self.text(c).split("[", 1)[0]
                index = self.text(idx) if idx is not None else ""
            else:
                arg_start = c.start_byte
                if t == "}":
                    arg_end = c.start_byte
        arg: Word | None = None
        if arg_start is not None and (arg_end > arg_start or op.lstrip("!") in _DEFAULT_OPS):
            parts: list[Part] = []
            cursor = arg_start
            for c in n.children:
                if c.start_byte < arg_start or c.end_byte > arg_end:
                    continue
                if c.start_byte > cursor:
                    parts.append(Lit(unescape_unquoted(self.span(cursor, c.start_byte)), quoted))
                parts.extend(self.parts(c, quoted) if c.is_named else (Lit(self.text(c), quoted),))
                cursor = c.end_byte
            if arg_end > cursor:
                parts.append(Lit(unescape_unquoted(self.span(cursor, arg_end)), quoted))
            if quoted and op in _PATTERN_OPS:
                # a pattern is read as unquoted text even inside double quotes, as bash reads it:
                # its wildcards match, its quotes and backslashes quote
                parts = list(_Lexer(self.span(arg_start, arg_end), self.base + self.ch(arg_start), self.sub).lex())
            arg = Word(self.span(arg_start, arg_end), merge_lits(parts),
                       (self.base + self.ch(arg_start), self.base + self.ch(arg_end)))
        if length and not name:
            name, length = "#", False
        if op == "!" and not name:
            name, op = "!", ""
        return Param(name or UNKNOWN, quoted=quoted, op=op, arg=arg, index=index, length=length)

    def arith_subs(self, n: Any, out: list[Part]) -> None:
        """Command substitutions inside ``$((…))`` follow the ``Arith`` part."""
        stack = list(reversed(n.named_children))
        seen = 0
        while stack and seen < 10000:
            seen += 1
            c = stack.pop()
            if c.type in ("command_substitution", "process_substitution"):
                out.extend(self.parts(c, False))
            else:
                stack.extend(reversed(c.named_children))

    def nested(self, n: Any) -> Script:
        """The script inside ``$(…)``, backticks or ``<(…)``."""
        kids = n.children
        if kids and kids[0].type == "`" and "`" in self.text(n)[1:-1].replace("\\`", ""):
            raise Unparsed("backticks run together (tree-sitter-bash #278)")
        inner = [c for c in kids if c.is_named]
        opener = kids[0] if kids and not kids[0].is_named else None
        closer = kids[-1] if len(kids) > 1 and not kids[-1].is_named else None
        a = opener.end_byte if opener is not None else n.start_byte
        b = closer.start_byte if closer is not None else n.end_byte
        source = self.span(a, max(a, b))
        if not self.enter():
            self.depth -= 1
            return Script(None, source, "tree-sitter", error="nesting too deep")
        try:
            body = self.body(inner)
        finally:
            self.depth -= 1
        return Script(body, source, "tree-sitter")


def _multibyte_map(src: str) -> tuple[list[int], list[int]]:
    """For ``ch``: the byte offset of each character that takes more than one UTF-8 byte, and the
    running count of extra bytes before and after each of them (``extra[0]`` is 0).

    Only the non-ASCII characters are visited, a run of characters of one width at a time: within
    a run both lists step evenly, so each run is two ranges (box-drawing lines and emoji in a
    here-document cost a run each, not a match per character).
    """
    starts: list[int] = []
    extra = [0]
    total = 0
    for m in _WIDE_RUNS.finditer(src):
        n = 2 if m.group(1) else 3 if m.group(2) else 4
        first, count = m.start() + total, m.end() - m.start()
        starts.extend(range(first, first + count * n, n))
        extra.extend(range(total + n - 1, total + count * (n - 1) + 1, n - 1))
        total += count * (n - 1)
    return starts, extra


def _index(parent: Any, child: Any) -> int:
    for i, c in enumerate(parent.children):
        if c.id == child.id:
            return i
    return -1


def _strip_tabs(text: str) -> str:
    return "\n".join(line.lstrip("\t") for line in text.split("\n"))


# ``coproc [NAME] COMPOUND``: tree-sitter-bash has no coproc, so the keyword and the name are
# blanked (same length, every offset kept) and the compound command parses as itself; bash runs
# it in the background with pipes, which changes nothing that guard decides.
_COPROC = re.compile(
    rb"(?:(?<=^)|(?<=[\n;&|(!{])|(?<=\bthen)|(?<=\bdo)|(?<=\belse))([ \t]*)(coproc[ \t]+(?:[A-Za-z_]\w*[ \t]+)?)"
    rb"(?=\{[ \t\n]|\(|\[\[|(?:if|while|until|for|case|select)[ \t\n])"
)


def _blank_coproc(data: bytes) -> bytes:
    return _COPROC.sub(lambda m: m.group(1) + b" " * len(m.group(2)), data)


def lower(src: str, base: int = 0, depth: int = 0) -> Script:
    """Parse ``src`` with tree-sitter and lower it; raises ``Unparsed`` when the tree is not trusted."""
    data = src.encode("utf-8", "surrogatepass")
    if b"coproc" in data:
        data = _blank_coproc(data)
    tree = _parse_bytes(data)
    if tree is None:
        raise Unparsed("tree-sitter returned no tree")
    root = tree.root_node
    if root.has_error:
        raise Unparsed("tree-sitter found a syntax error")
    low = _Lower(src, data, base, depth)
    body = low.body(root.children)
    error = None
    if low.truncated:
        error = f"command too large: past {MAX_STATEMENTS} statements or {MAX_WORDS} words it was not analysed"
    elif low.too_deep:
        error = f"nesting deeper than {MAX_DEPTH} levels was not analysed"
    return Script(body, src, "tree-sitter", error=error)


def _parse_bytes(data: bytes) -> Any:
    """tree-sitter's tree for ``data``, within the parse budgets.

    tree-sitter's error recovery is quadratic on long flat input: 16,000 pipeline stages and an
    unbalanced ``(`` cost it 12 s and 2.2 GB, and more ends in the kernel's OOM killer. Input
    over ``ISOLATE_ABOVE`` bytes is first parsed here under a small CPU budget
    (``QUICK_CPU_SECONDS``, well above what any clean agent command needs: a 50 KB one takes
    under 1 ms, and the memory error recovery can take in that time is a few MB). Only input it
    does not finish goes on to a forked child under CPU and memory limits, and is parsed here
    only if the child parsed it cleanly, without error recovery. The fork costs 10-20 ms, twenty
    times the parse itself, so it is kept for input that is costly anyway. Each parse is fed
    through a reader so tree-sitter's progress callback can stop it (returning early from the
    reader, or raising in it, is not safe in the binding).
    """
    if len(data) <= ISOLATE_ABOVE:
        return get_parser().parse(data)
    tree = _budgeted_parse(data, QUICK_CPU_SECONDS)
    if tree is not None:
        return tree
    verdict = _trial_parse(data)
    if verdict == "error":
        raise Unparsed("tree-sitter found a syntax error")
    if verdict == "budget":
        raise OverBudget(f"tree-sitter needed more than {CHILD_CPU_SECONDS} s of CPU or {CHILD_MEMORY >> 20} MiB")
    tree = _budgeted_parse(data, PARSE_CPU_SECONDS)
    if tree is None:
        raise OverBudget(f"parsing took more than {PARSE_CPU_SECONDS} s of CPU")
    return tree


def _budgeted_parse(data: bytes, seconds: float) -> Any:
    return budgeted_parse(get_parser(), data, seconds)


def budgeted_parse(parser: Any, data: bytes, seconds: float) -> Any:
    """``parser``'s tree for ``data``, or None when parsing took more than ``seconds`` of this
    thread's CPU time (the parser is then reset, so the next parse starts afresh). Any grammar:
    the inline dialects' parsers use it too."""
    import time

    start = time.thread_time()

    def read(offset: int, _point: Any) -> bytes:
        return data[offset : offset + _CHUNK]

    def over(*_state: Any) -> bool:
        return time.thread_time() - start > seconds

    try:
        return parser.parse(read, progress_callback=over)
    except ValueError:  # "Parsing failed": the callback stopped it
        parser.reset()
        return None


def _trial_parse(data: bytes) -> str:
    """Parse ``data`` in a forked child under limits: ``"ok"``, ``"error"`` (a syntax error, so
    error recovery would run here) or ``"budget"`` (the child went past a limit or was killed)."""
    import os
    import time

    try:
        pid = os.fork()
    except OSError:
        return "ok"  # no child to be had: parse here, as before the trial existed
    if pid == 0:  # the child: parse, answer with the exit status, never return
        code = 4
        try:
            import resource

            with open("/proc/self/statm") as fh:
                size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            resource.setrlimit(resource.RLIMIT_AS, (size + CHILD_MEMORY, size + CHILD_MEMORY))
            resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS + 1))
            tree = get_parser().parse(data)
            code = 3 if tree is None or tree.root_node.has_error else 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + CHILD_WALL_SECONDS
    pause = 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "budget"
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    code = os.waitstatus_to_exitcode(status)
    return "ok" if code == 0 else "error" if code == 3 else "budget"
