"""bashlex as the fallback parser: cached LR tables, workarounds W1–W4, lowering to the IR.

Imported only when tree-sitter rejects a command. Loading bashlex normally rebuilds its LALR
tables on every import (~80 ms); here ``bashlex.yacc.yacc`` is swapped, before ``bashlex.parser``
runs, for a version that loads the raw tables from a JSON file in the user cache directory
(keyed on the bashlex files, the bashlex version and the Python version; one file per key) and
writes them on a miss.
Any problem with the cache means a plain import.

Workarounds (monkeypatches, no bashlex code copied):
W1 empty or comment-only input is an empty script (bashlex raises ``AttributeError``);
W2 quoted heredoc delimiters (``<<'EOF'``) end at the unquoted word (bashlex #99);
W3 ``time [-p] cmd`` lowers to ``cmd`` instead of ``NotImplementedError``;
W4 ``$(a && b)``, ``$(a || b)``, ``$(a & b)`` parse (bashlex #54, #83).

Words are lowered from their source text (``guard.parse.words``), never from ``WordNode.word``,
whose quote removal is wrong for ``"gi"'t'``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import guard.parse.build as build
from guard.ir import (
    Assign,
    FunctionDef,
    Group,
    Lit,
    Node,
    Redirect,
    Script,
    Simple,
    Subshell,
    Word,
)
from guard.parse.nested import reparse
from guard.parse.words import _Lexer, is_assignment, lex_word, merge_lits, unescape_unquoted

_bashlex: Any = None
CACHE_FORMAT = 2


# --------------------------------------------------------------------------- loading


def cache_dir() -> str:
    from guard.system.cachedir import cache_root

    return cache_root()


def _cache_key(pkg_dir: str) -> tuple:
    stats = []
    for name in ("parser.py", "yacc.py", "tokenizer.py"):
        st = os.stat(os.path.join(pkg_dir, name))
        stats.append((name, st.st_size, st.st_mtime_ns))
    parent = os.path.dirname(pkg_dir)
    try:
        dist = sorted(d for d in os.listdir(parent) if d.startswith("bashlex-") and d.endswith(".dist-info"))
    except OSError:
        dist = []
    return (CACHE_FORMAT, pkg_dir, tuple(dist), tuple(stats), tuple(sys.version_info[:2]))


def cache_name(key: tuple) -> str:
    """The tables' file for one bashlex install: named by its key, so installs that share a cache
    directory (several virtual environments of one user) each keep their own instead of
    rebuilding and overwriting one file in turn."""
    from zlib import crc32

    return f"bashlex-lr-py{sys.version_info[0]}{sys.version_info[1]}-{crc32(repr(key).encode()):08x}.json"


class _Prod:
    """The parts of a PLY production that ``LRParser.parse`` uses."""

    __slots__ = ("name", "len", "func", "callable", "str")

    def __init__(self, name: str, length: int, func: str | None, fn: Any, text: str):
        self.name, self.len, self.func, self.callable, self.str = name, length, func, fn, text

    def __str__(self) -> str:
        return self.str


class _Tables:
    def __init__(self, prods: list, action: dict, goto: dict):
        self.lr_productions, self.lr_action, self.lr_goto = prods, action, goto


def _cached_yacc_factory(yacc_mod: Any, orig: Any, path: str, key: tuple) -> Any:
    def cached_yacc(*args: Any, **kwargs: Any) -> Any:
        grammar_globals = sys._getframe(1).f_globals
        try:  # only a cache file of this user's that no one else may write; JSON runs nothing
            from guard.system.cachedir import read_private

            raw = read_private(path)
            data = json.loads(raw) if raw is not None else None
            if data is not None and data.get("key") == json.loads(json.dumps(key)):
                prods = []
                for name, length, func, text in data["prods"]:
                    if func is not None and not (isinstance(func, str) and func.startswith("p_")):
                        raise ValueError("not a grammar function")
                    prods.append(_Prod(name, length, func, grammar_globals[func] if func else None, text))
                action = {int(s): dict(a) for s, a in data["action"]}
                goto = {int(s): dict(g) for s, g in data["goto"]}
                return yacc_mod.LRParser(_Tables(prods, action, goto), grammar_globals["p_error"])
        except Exception:  # noqa: BLE001 - a bad or missing cache means rebuild
            pass
        if "inspect" not in vars(yacc_mod) or not hasattr(yacc_mod.inspect, "getsourcelines"):
            import inspect

            yacc_mod.inspect = inspect
        kwargs["module"] = sys.modules[grammar_globals["__name__"]]
        parser = orig(*args, **kwargs)
        try:
            from guard.system.cachedir import write_private

            blob = json.dumps({
                "key": key,
                "action": [[s, list(a.items())] for s, a in parser.action.items()],
                "goto": [[s, list(g.items())] for s, g in parser.goto.items()],
                "prods": [(p.name, p.len, p.func, p.str) for p in parser.productions],
            }).encode()
            write_private(path, blob)
        except Exception:  # noqa: BLE001 - an unwritable cache only costs time
            pass
        return parser

    return cached_yacc


def _import_cached() -> Any:
    import importlib.util
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("bashlex")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        raise ImportError("bashlex")
    pkg_dir = list(spec.submodule_search_locations)[0]
    key = _cache_key(pkg_dir)
    path = os.path.join(cache_dir(), cache_name(key))
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["bashlex"] = pkg
    stub = "inspect" not in sys.modules
    if stub:
        sys.modules["inspect"] = type(sys)("inspect")
    try:
        import bashlex.yacc as yacc_mod
    finally:
        if stub:
            del sys.modules["inspect"]
    yacc_mod.yacc = _cached_yacc_factory(yacc_mod, yacc_mod.yacc, path, key)
    spec.loader.exec_module(pkg)
    return pkg


def _load() -> Any:
    global _bashlex
    if _bashlex is not None:
        return _bashlex
    if "bashlex.parser" in sys.modules:
        import bashlex
    else:
        try:
            bashlex = _import_cached()
        except Exception:  # noqa: BLE001 - fall back to the plain (slow) import
            for name in [m for m in sys.modules if m == "bashlex" or m.startswith("bashlex.")]:
                del sys.modules[name]
            import bashlex
    _apply_workarounds(bashlex)
    _bashlex = bashlex
    return bashlex


def _apply_workarounds(bashlex: Any) -> None:
    heredoc = sys.modules["bashlex.heredoc"]
    parser_mod = sys.modules["bashlex.parser"]
    yp = parser_mod.yaccparser
    if getattr(yp, "_guard_patched", False):
        return

    # W2: compare heredoc lines with the unquoted delimiter.
    orig_make = heredoc.makeheredoc

    def makeheredoc(tokenizer: Any, redirnode: Any, lineno: Any, killleading: Any) -> Any:
        word = redirnode.output.word
        unquoted = "".join(lex_text(word))
        redirnode.output.word = unquoted
        try:
            return orig_make(tokenizer, redirnode, lineno, killleading)
        finally:
            redirnode.output.word = word

    heredoc.makeheredoc = makeheredoc

    # W3: `time [-p]` → the timed pipeline.
    ast = sys.modules["bashlex.ast"]

    def p_timespec(p: Any) -> None:
        p[0] = ast.node(kind="reservedword", word="time", pos=p.lexspan(1))

    for prod in yp.productions:
        if prod.name == "timespec":
            prod.callable = p_timespec
        elif prod.name == "pipeline_command" and prod.callable is not None:
            prod.callable = _time_aware(prod.callable)

    # W4: let `)` end a list inside $( ) wherever EOF would.
    for actions in yp.action.values():
        eof = actions.get("EOF")
        if eof is not None and eof < 0 and "RIGHT_PAREN" not in actions:
            actions["RIGHT_PAREN"] = eof
    yp.set_defaulted_states()
    yp._guard_patched = True


def _time_aware(orig: Any) -> Any:
    def pipeline_command(p: Any) -> None:
        first = p.slice[1]
        if len(p) == 3 and getattr(first, "type", "") == "timespec":
            inner = p[2]
            if not hasattr(inner, "kind"):
                raise ValueError("time without a command")
            p[0] = inner
            return
        orig(p)

    return pipeline_command


def lex_text(word: str) -> list[str]:
    """The literal text of a delimiter word after quote removal."""
    return [p.text if isinstance(p, Lit) else "" for p in lex_word(word)]


# --------------------------------------------------------------------------- lowering


def _comment_only(src: str) -> bool:
    for line in src.splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            return False
    return True


class _Lower:
    def __init__(self, src: str, base: int, depth: int):
        self.src = src
        self.base = base
        self.depth = depth

    def sub(self, kind: str, inner: str, offset: int) -> Script:
        return reparse(inner, offset, self.depth + 1)

    def pos(self, p: tuple[int, int]) -> tuple[int, int]:
        return (self.base + p[0], self.base + p[1])

    def word(self, node: Any) -> Word:
        a, b = node.pos
        raw = self.src[a:b]
        return Word(raw, lex_word(raw, self.base + a, self.sub), self.pos(node.pos))

    # ----------------------------------------------------------------- structure

    def top(self, trees: list[Any]) -> Node | None:
        items: list[tuple[Node, bool]] = []
        for t in trees:
            self.statements(t, items)
        return build.make_sequence(items)

    def statements(self, n: Any, items: list[tuple[Node, bool]]) -> None:
        """Appends the statements of ``n`` (a list splits at ``;``, ``&`` and newlines)."""
        if n.kind != "list":
            items.append((self.chain_of(n), False))
            return
        stream: list = []
        for p in n.parts:
            if p.kind == "operator" and p.op in (";", "&", "\n"):
                node = build.build_chain(stream)
                stream = []
                if node is not None:
                    items.append((node, p.op == "&"))
            elif p.kind == "operator":
                stream.append(p.op)
            else:
                self.flatten(p, stream)
        node = build.build_chain(stream)
        if node is not None:
            items.append((node, False))

    def chain_of(self, n: Any) -> Node:
        stream: list = []
        self.flatten(n, stream)
        node = build.build_chain(stream)
        if node is None:
            raise ValueError(f"empty {n.kind}")
        return node

    def flatten(self, n: Any, out: list) -> None:
        if n.kind == "pipeline":
            for p in n.parts:
                if p.kind == "pipe":
                    out.append(p.pipe)
                elif p.kind == "reservedword" and p.word == "!":
                    out.append("!")
                elif p.kind == "reservedword" and p.word == "time":
                    continue
                else:
                    self.flatten(p, out)
        elif n.kind == "list":
            for p in n.parts:
                if p.kind == "operator":
                    if p.op in (";", "&", "\n"):
                        raise ValueError("statement list inside a pipeline")
                    out.append(p.op)
                else:
                    self.flatten(p, out)
        else:
            out.append(self.node(n))

    def body(self, parts: list[Any]) -> Node | None:
        items: list[tuple[Node, bool]] = []
        for p in parts:
            if p.kind in ("reservedword", "operator"):
                if p.kind == "operator" and p.op == "&" and items:
                    items[-1] = (items[-1][0], True)
                continue
            self.statements(p, items)
        return build.make_sequence(items)

    def clauses(self, parts: list[Any]) -> tuple[Node, ...]:
        out: list[Node] = []
        run: list[Any] = []
        for p in parts:
            if p.kind == "reservedword":
                node = self.body(run)
                if node is not None:
                    out.append(node)
                run = []
            else:
                run.append(p)
        node = self.body(run)
        if node is not None:
            out.append(node)
        return tuple(out)

    def node(self, n: Any) -> Node:
        k = n.kind
        if k == "command":
            return self.command(n)
        if k in ("pipeline", "list"):
            return self.chain_of(n)
        if k == "compound":
            return self.compound(n)
        if k == "function":
            return self.function(n)
        if k in ("if", "while", "until", "for"):
            return self.compound_kind(n, ())
        raise ValueError(f"unsupported bashlex node {k}")

    def compound(self, n: Any) -> Node:
        redirects = tuple(self.redirect(r) for r in getattr(n, "redirects", []) or [])
        parts = n.list
        first = parts[0] if parts else None
        if first is not None and first.kind == "reservedword" and first.word == "(":
            if self.src.startswith("((", n.pos[0]):
                raise ValueError("arithmetic command read as nested subshells")
            inner = self.body(parts[1:-1])
            return Subshell(inner if inner is not None else Simple(()), redirects)
        if first is not None and first.kind == "reservedword" and first.word == "{":
            self.no_heredocs(parts)
            return Group(self.clauses(parts[1:-1]) or (), kind="group", redirects=redirects)
        if len(parts) == 1 and parts[0].kind in ("if", "while", "until", "for"):
            return self.compound_kind(parts[0], redirects)
        raise ValueError("unsupported compound command")

    def compound_kind(self, n: Any, redirects: tuple[Redirect, ...]) -> Node:
        self.no_heredocs(n.parts)
        if n.kind != "for":
            return Group(self.clauses(n.parts), kind=n.kind, redirects=redirects)
        parts = n.parts
        var = parts[1].word if len(parts) > 1 and parts[1].kind == "word" else None
        words: list[Word] = []
        i = 2
        if i < len(parts) and parts[i].kind == "reservedword" and parts[i].word == "in":
            i += 1
            while i < len(parts) and parts[i].kind == "word":
                words.append(self.word(parts[i]))
                i += 1
        while i < len(parts) and not (parts[i].kind == "reservedword" and parts[i].word == "do"):
            i += 1
        return Group(self.clauses(parts[i:]), kind="for", words=tuple(words), loop_var=var,
                     redirects=redirects)

    def no_heredocs(self, parts: list[Any]) -> None:
        """bashlex reads heredoc bodies inside compound commands as commands: refuse those."""
        stack = list(parts)
        while stack:
            p = stack.pop()
            if p.kind == "redirect" and p.type in ("<<", "<<-"):
                raise ValueError("heredoc inside a compound command")
            for attr in ("parts", "list", "redirects"):
                stack.extend(getattr(p, attr, None) or [])
            if p.kind in ("commandsubstitution", "processsubstitution"):
                continue

    def function(self, n: Any) -> Node:
        self.no_heredocs(n.parts)
        name = next((p for p in n.parts if p.kind == "word"), None)
        body = next((p for p in n.parts if p.kind == "compound"), None)
        if name is None or body is None:
            raise ValueError("function without name or body")
        a, b = n.pos
        return FunctionDef(self.src[name.pos[0]:name.pos[1]], self.compound(body), self.src[a:b])

    def command(self, n: Any) -> Node:
        assigns: list[Assign] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        for p in n.parts:
            if (p.kind == "assignment" or (p.kind == "word" and is_assignment(self.src[p.pos[0]:p.pos[1]]))) \
                    and not words:
                assigns.append(self.assign(p))
            elif p.kind in ("word", "assignment"):
                words.append(self.word(p))
            elif p.kind == "redirect":
                redirects.append(self.redirect(p))
            elif p.kind == "reservedword" and p.word == "time" and not words:
                continue
            else:
                raise ValueError(f"unsupported command part {p.kind}")
        if words and words[0].raw in ("time",):
            rest = words[1:]
            while rest and rest[0].raw in ("-p", "--"):
                rest = rest[1:]
            words = rest or words
        return Simple(tuple(words), tuple(assigns), tuple(redirects), pos=self.pos(n.pos))

    def assign(self, p: Any) -> Assign:
        a, b = p.pos
        raw = self.src[a:b]
        eq = raw.find("=")
        lhs, value = raw[:eq], raw[eq + 1:]
        append = lhs.endswith("+")
        if append:
            lhs = lhs[:-1]
        index = None
        if "[" in lhs and lhs.endswith("]"):
            lhs, index = lhs.split("[", 1)[0], lhs[lhs.index("[") + 1:-1]
        start = a + eq + 1
        return Assign(lhs, Word(value, lex_word(value, self.base + start, self.sub),
                                (self.base + start, self.base + b)), append=append, index=index)

    def redirect(self, r: Any) -> Redirect:
        op = r.type
        fd = r.input if isinstance(r.input, int) else None
        out = r.output
        if op in ("<<", "<<-"):
            delim = self.src[out.pos[0]:out.pos[1]] if hasattr(out, "pos") else ""
            quoted = any(q in delim for q in "'\"\\")
            doc = getattr(r, "heredoc", None)
            value = doc.value if doc is not None else ""
            body = value.rsplit("\n", 1)[0] + "\n" if "\n" in value else ""
            start = self.base + (doc.pos[0] if doc is not None else r.pos[1])
            if quoted:
                parts = (Lit(body, True),) if body else ()
            else:
                lexer = _Lexer(body, start, self.sub)
                collected: list = []
                lexer.dquoted(0, len(body), collected)
                parts = merge_lits(collected)
            return Redirect(op, fd, None, body=Word(body, parts, (start, start + len(body))), quoted=quoted)
        if isinstance(out, int):
            target = Word(str(out), (Lit(str(out)),), self.pos(r.pos))
        elif out is not None and getattr(out, "kind", "") == "word":
            target = self.word(out)
        elif self.src[r.pos[0]:r.pos[1]].endswith("-"):
            target = Word("-", (Lit("-"),), self.pos((r.pos[1] - 1, r.pos[1])))
        else:
            target = None
        return Redirect(op, fd, target)


def lower(src: str, base: int = 0, depth: int = 0, ts_error: str | None = None) -> Script:
    """Parse ``src`` with bashlex and lower it; raises on any bashlex failure."""
    if _comment_only(src):  # W1
        return Script(None, src, "bashlex", error=ts_error)
    bashlex = _load()
    trees = bashlex.parse(src)
    body = _Lower(src, base, depth).top(trees)
    return Script(body, src, "bashlex", error=ts_error)


__all__ = ["lower", "cache_dir", "unescape_unquoted"]
