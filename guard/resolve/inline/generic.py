"""One analyser for every language a tree-sitter grammar reads, driven by a dialect table.

A dialect table (``rules/dialects/*.yaml``, checked by ``guard.ruleset``; the resolver is handed
it) names the grammar and says which node types are string literals, command literals, lists,
variables, assignments and calls, and which callees run a shell string, an argv, a command built
step by step (``Command::new("git").arg("push")``) or more code of the same language. This module
knows no language: it parses, follows constant assignments in source order, and reports what the
table says runs, with ``UNKNOWN`` for every part that is not a constant.

The grammar module is imported when a program in its language is first analysed, never before.
"""

from __future__ import annotations

import re

from guard.ir import UNKNOWN
from guard.resolve.inline.common import UNK, Finding, argv_of_string, join_shell

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MAX_FINDINGS = 1_000
MAX_NODES = 400_000  # nodes visited per program; past it the rest is not analysed
MAX_EVAL_DEPTH = 4  # code handed to the language's own eval, analysed this deep
MAX_EVALS = 32  # … and this many times in one program
PARSE_CPU_SECONDS = 1.0  # a grammar's parse of one program (tree-sitter-perl is slow on some input)
MAX_VALUE = 64 * 1024  # characters of one string value; a longer one is not followed
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "e": "\x1b",
    "a": "\a",
    "0": "\0",
    "f": "\f",
    "v": "\v",
    "b": "\b",
}
_HEX = re.compile(r"\\(?:x\{?([0-9a-fA-F]{1,6})\}?|u\{?([0-9a-fA-F]{4,6})\}?)")
_QUOTES = ("'''", '"""', "'", '"', "`")


class Built:
    """A command assembled by calls (a builder): its argv grows as ``arg``-like methods run."""

    __slots__ = ("argv", "cwd", "line", "name", "pos")

    def __init__(self, argv: list[str], line: int, name: str, pos: int) -> None:
        self.argv = argv
        self.cwd: str | None = None
        self.line = line
        self.name = name
        self.pos = pos


class _Walked:
    """A block of code given as an argument (``eval { … }``): the walk reads it where it is."""

    __slots__ = ()


WALKED = _Walked()


class Pairs:
    """A mapping literal (keyword arguments, an options or environment hash)."""

    __slots__ = ("items",)

    def __init__(self, items: dict[str, object]) -> None:
        self.items = items


# ----------------------------------------------------------------------------- the table


class Dialect:
    """A dialect table read into sets and maps (made once per table)."""

    def __init__(self, t: Mapping[str, Any]) -> None:
        self.name = str(t["dialect"])
        grammar = t["grammar"]
        self.module, self.function = str(grammar["module"]), str(grammar.get("function", "language"))
        self.fold = bool(t.get("case_insensitive"))
        self.strings = frozenset(t.get("strings", ()))
        self.quoted = frozenset(t.get("quoted_leaves", ()))  # leaf literals whose text keeps its quotes
        self.escape_char = str(
            t.get("escape_char", "")
        )  # escapes in bare words and "…" leaves (PowerShell's `)
        self.words = frozenset(t.get("words", ()))
        self.escapes = frozenset(t.get("escapes", ()))
        self.tokens = frozenset(t.get("tokens", ()))
        self.variables = frozenset(t.get("variables", ()))
        self.lists = frozenset(t.get("lists", ()))
        self.comma_lists = frozenset(t.get("comma_lists", ()))  # a list only when a comma is in it
        self.commands = frozenset(t.get("commands", ()))
        self.interpolations = frozenset(t.get("interpolations", ()))
        self.blocks = frozenset(t.get("code_blocks", ()))
        self.skip = frozenset(t.get("skip", ()))
        self.fields: dict[str, str | int] = dict(t.get("fields", {}))
        interp = t.get("interpolate")
        self.interp = re.compile(interp["pattern"]) if interp else None
        self.interp_quotes = tuple(interp.get("quotes", ['"'])) if interp else ()
        concat = t.get("concat") or {}
        self.concat_types = frozenset(concat.get("types", ()))
        self.concat_ops = frozenset(concat.get("operators", ()))
        self.assigns = {a["type"]: a for a in t.get("assignments", ())}
        self.assign_ops = frozenset(t.get("assign_operators", ("=", ":=")))
        self.calls = {c["type"]: c for c in t.get("calls", ())}
        pairs = t.get("pairs") or {}
        self.pair_types = frozenset(pairs.get("types", ()))
        self.hash_types = frozenset(pairs.get("hashes", ()))
        self.runs: dict[str, dict[str, Any]] = {}
        self.methods: dict[str, dict[str, Any]] = {}
        for entry in t.get("runs", ()):
            for n in entry.get("names", ()):
                self.runs[self.key(n)] = entry
            for m in entry.get("methods", ()):
                self.methods[self.key(m)] = entry
        builder = t.get("builder") or {}
        self.append = frozenset(self.key(m) for m in builder.get("append", ()))
        self.extend = frozenset(self.key(m) for m in builder.get("extend", ()))
        self.replace = frozenset(self.key(m) for m in builder.get("replace", ()))
        self.chdir = frozenset(self.key(m) for m in builder.get("cwd", ()))
        self.joins = {self.key(n): j for j in t.get("joins", ()) for n in j.get("names", ())}
        self.join_methods = {self.key(m): j for j in t.get("joins", ()) for m in j.get("methods", ())}
        self.makes_list = frozenset(self.key(n) for n in t.get("list_functions", ()))
        self.passes = frozenset(self.key(n) for n in t.get("value_functions", ()))
        env = t.get("environment") or {}
        self.env_read = re.compile(env["read"]) if env.get("read") else None
        self.env_whole = re.compile(env["whole"]) if env.get("whole") else None

    def key(self, name: str) -> str:
        return name.lower() if self.fold else name


_DIALECTS: dict[int, tuple[object, Dialect]] = {}
_LANGUAGES: dict[tuple[str, str], object] = {}


def dialect_of(table: Mapping[str, Any]) -> Dialect:
    got = _DIALECTS.get(id(table))
    if got is None or got[0] is not table:
        if len(_DIALECTS) > 64:
            _DIALECTS.clear()
        got = _DIALECTS[id(table)] = (table, Dialect(table))
    return got[1]  # type: ignore[return-value]


def parser_for(d: Dialect) -> Any:
    """A parser of the dialect's grammar; the grammar module is imported here, on first use."""
    import importlib

    from tree_sitter import Language, Parser

    key = (d.module, d.function)
    lang = _LANGUAGES.get(key)
    if lang is None:
        import warnings

        mod = importlib.import_module(d.module)
        with (
            warnings.catch_warnings()
        ):  # grammars built for ABI 14 hand over an int, which tree-sitter deprecates
            warnings.simplefilter("ignore", DeprecationWarning)
            lang = _LANGUAGES[key] = Language(getattr(mod, d.function)())
    return Parser(lang)


# ----------------------------------------------------------------------------- analysis


def analyze_dialect(table: Mapping[str, Any], source: str) -> tuple[list[Finding], list[str]]:
    """What a program in the table's dialect runs, and notes on what stayed unknown."""
    d = dialect_of(table)
    try:
        parser = parser_for(d)
    except (ImportError, AttributeError, ValueError) as exc:
        return [], [f"{d.name}: grammar {d.module} not available ({type(exc).__name__}), not analysed"]
    a = _Analysis(d, parser, source.encode("utf-8", "surrogatepass"))
    a.run(0)
    out = a.results() + _env_reads(d, source)
    return out, a.notes


def _env_reads(d: Dialect, source: str) -> list[Finding]:
    """Reads of named environment variables (the rule set decides which are tokens) and a walk
    over the whole environment next to a credential word."""
    out: list[Finding] = []
    if d.env_read is not None:
        for m in d.env_read.finditer(source):
            name = next((g for g in m.groups() if g), "")
            if name and _HUNT.search(name):
                out.append(Finding(kind="token", var=name, detail=f"{d.name} environment read"))
    if d.env_whole is not None and d.env_whole.search(source) and _HUNT.search(source):
        out.append(Finding(kind="token", var="*", detail=f"{d.name} environment searched"))
    return out[:50]


_HUNT = re.compile(r"token|secret|github|\bgh|_pat|auth|cred", re.I)


class _Analysis:
    def __init__(self, d: Dialect, parser: Any, src: bytes, depth: int = 0) -> None:
        self.d = d
        self.parser = parser
        self.src = src
        self.depth = depth
        self.vars: dict[str, object] = {}
        self.memo: dict[int, object] = {}
        self.findings: list[tuple[int, Finding]] = []  # (where in the source, the finding)
        self.pos = 0  # the start of the node the walk is at
        self.notes: list[str] = []
        self.seen: set[Finding] = set()
        self.built: list[Built] = []
        self.visited = 0
        self.evals = [0]  # evals analysed, shared with the evals' own analyses

    # ------------------------------------------------------------------ reporting

    def add(self, f: Finding) -> None:
        if f in self.seen:
            return
        if len(self.findings) >= MAX_FINDINGS:
            self.note_once(f"{self.d.name}: more than {MAX_FINDINGS} findings; the rest are not reported")
            return
        self.seen.add(f)
        self.findings.append((self.pos, f))

    def note_once(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def note(self, line: int, text: str) -> None:
        self.note_once(f"{self.d.name}: {text} at line {line}")

    def shell(self, line: int, v: object, name: str, cwd: str | None) -> None:
        if isinstance(v, tuple):
            v = join_shell(tuple(x if isinstance(x, str) else UNKNOWN for x in v))
        if not isinstance(v, str) or not v.strip(UNKNOWN + " "):
            self.note(line, f"{name or 'command'} argument not constant")
            return
        self.add(
            Finding(kind="shell", shell=v, cwd=cwd, detail=f"{self.d.name} {name}" if name else "", line=line)
        )

    def argv(self, line: int, words: list[object], name: str, cwd: str | None) -> None:
        argv = tuple(_flat(words))
        if not argv or argv[0] == UNKNOWN:
            self.note(line, f"{name or 'command'} program not constant")
            if not argv:
                return
        self.add(
            Finding(
                kind="argv", argv=argv, cwd=cwd, detail=f"{self.d.name} {name}" if name else "", line=line
            )
        )

    def results(self) -> list[Finding]:
        """What runs, in source order (a built command where it was made)."""
        found = list(self.findings)
        for b in self.built:
            argv = tuple(b.argv)
            if not argv or argv[0] == UNKNOWN:
                self.note(b.line, f"{b.name} program not constant")
                if not argv:
                    continue
            f = Finding(kind="argv", argv=argv, cwd=b.cwd, detail=f"{self.d.name} {b.name}", line=b.line)
            if f not in self.seen:
                self.seen.add(f)
                found.append((b.pos, f))
        found.sort(key=lambda pf: pf[0])
        return [f for _, f in found[:MAX_FINDINGS]]

    # ------------------------------------------------------------------ the walk

    def run(self, line0: int) -> None:
        from guard.parse.treesitter import budgeted_parse

        tree = budgeted_parse(self.parser, self.src, PARSE_CPU_SECONDS)
        if tree is None:
            self.note_once(f"{self.d.name}: parsing took more than {PARSE_CPU_SECONDS} s of CPU, not analysed")
            return
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            self.pos = node.start_byte
            self.visited += 1
            if self.visited > MAX_NODES:
                self.note_once(f"{self.d.name}: program too large, the rest not analysed")
                return
            t = node.type
            if t in self.d.assigns:
                self.assign(node, self.d.assigns[t])
            elif t in self.d.calls:
                self.call(node, self.d.calls[t], line0)
            elif t in self.d.commands:
                line = line0 + node.start_point[0] + 1
                self.shell(line, self.string(node), "backticks", None)
            stack.extend(reversed(node.children))

    def assign(self, node: Any, spec: Mapping[str, Any]) -> None:
        left, right = _part(node, spec["left"]), _part(node, spec["right"])
        if left is None:
            return
        left = self.unwrap(left)
        if left.type not in self.d.variables:
            self.set_field(left, right)
            return
        ops = {c.type for c in node.children if not c.is_named}
        name = self.d.key(self.text(left))
        if ops and not ops & self.d.assign_ops:
            self.vars[name] = UNK  # x .= y, x += y: not followed
            return
        self.vars[name] = self.value(right) if right is not None else UNK

    def set_field(self, left: Any, right: Any) -> None:
        """``cmd.Dir = "/tmp"``: a field of a command being built that names its folder."""
        named = [c for c in left.named_children if c.type not in self.d.skip]
        if len(named) != 2 or right is None or self.d.key(self.text(named[1])) not in self.d.chdir:
            return
        b = self.value(named[0])
        if isinstance(b, Built):
            v = self.value(right)
            b.cwd = v if isinstance(v, str) else UNKNOWN

    def call(self, node: Any, spec: Mapping[str, Any], line0: int) -> None:
        got = self.callee(node, spec)
        if got is None:
            return
        name, method, receiver = got
        d = self.d
        entry = d.runs.get(d.key(name))
        if entry is None and method and receiver is not None:
            entry = d.methods.get(d.key(method))
        if entry is None:
            entry = spec.get("default")
            if entry is None:
                if (
                    method
                    and receiver is not None
                    and d.key(method) in (d.append | d.extend | d.replace | d.chdir)
                ):
                    self.value(node)  # a builder step: it changes the command being built
                return
        kind = str(entry["as"])
        line = line0 + node.start_point[0] + 1
        if kind == "builder":
            self.value(node)
            return
        args, opts = self.arguments(node, spec)
        if spec.get("callee_value"):
            args.insert(0, name)  # a shell-like command: its name is argv[0]
        if d.key(name) not in d.runs and entry.get("methods") and receiver is not None:
            args = [self.value(receiver)]  # "git push".execute(): the receiver is the command
        if entry is spec.get("default"):
            name = ""  # every command of a shell-like dialect runs: the via chain names the dialect's launch alone
        self.runs(line, name, kind, entry, args, opts)

    def runs(
        self,
        line: int,
        name: str,
        kind: str,
        entry: Mapping[str, Any],
        args: list[object],
        opts: dict[str, object],
    ) -> None:
        cwd = self.cwd(entry, args, opts)
        skip = int(entry.get("skip", 0))
        args = [a for a in args if not isinstance(a, Pairs)][skip:]
        if kind == "http":
            self.http(line, name, entry, args, opts)
            return
        if entry.get("drop_options"):
            args = _drop_options(args, entry.get("with_value", ()), self.d)
        if "args" in entry:
            args = args[: int(entry["args"])]
        if kind == "shell":
            self.shell(line, args[0] if args else UNK, name, cwd)
        elif kind == "argv":
            self.argv(line, args, name, cwd)
        elif kind == "split":
            if len(args) == 1 and isinstance(args[0], str):
                self.argv(line, list(args[0].split()), name, cwd)
            else:
                self.argv(line, args, name, cwd)
        elif kind == "auto":
            if len(args) == 1 and not isinstance(args[0], tuple):
                self.shell(line, args[0], name, cwd)
            elif args:
                self.argv(line, args, name, cwd)
            else:
                self.note(line, f"{name} argument not constant")
        elif kind == "each":  # every argument is one command (Open3.pipeline)
            for a in args:
                self.runs(line, name, "auto", {}, [a], {})
        elif kind == "pipe-open":
            self.pipe_open(line, name, args, cwd)
        elif kind == "eval" and not (args and args[0] is WALKED):
            self.eval(line, name, args[0] if args else UNK)

    def http(self, line: int, name: str, entry: Mapping[str, Any], args: list[object], opts: dict[str, object]) -> None:
        """An HTTP request: its URL, method and body where the entry says (an argument's index, a
        -Option's value, a keyword), the method a fixed word or GET."""
        plain = _drop_options(args, entry.get("with_value", ()), self.d) if entry.get("drop_options") else args

        def pick(where: object) -> object:
            for w in where if isinstance(where, list) else [where]:
                if isinstance(w, int) and w < len(plain):
                    return plain[w]
                if isinstance(w, str) and w.startswith("-"):
                    keys = [self.d.key(a) if isinstance(a, str) else a for a in args]
                    if self.d.key(w) in keys and keys.index(self.d.key(w)) + 1 < len(args):
                        return args[keys.index(self.d.key(w)) + 1]
                elif isinstance(w, str) and w in opts:
                    return opts[w]
            return None

        url = pick(entry.get("url", 0))
        method = entry.get("method_is") or pick(entry.get("method", [])) or "GET"
        body = pick(entry.get("body", []))
        if not isinstance(url, str) or not url.strip(UNKNOWN):
            self.note(line, f"{name} URL not constant")
            return
        self.add(Finding(kind="http", method=method.upper() if isinstance(method, str) else UNKNOWN, url=url,
                         body=None if body is None else body if isinstance(body, str) else UNKNOWN,
                         detail=f"{self.d.name} {name}", line=line))

    def pipe_open(self, line: int, name: str, args: list[object], cwd: str | None) -> None:
        """``open(FH, "cmd |")``, ``open(FH, "-|", "git", "fetch")``, Ruby's ``open("|cmd")``."""
        target = [a for a in args if isinstance(a, str) and ("|" in a)]
        for i, a in enumerate(args):
            if isinstance(a, str) and a.replace(" ", "") in ("-|", "|-"):
                rest = args[i + 1 :]
                if len(rest) == 1 and not isinstance(rest[0], tuple):
                    self.shell(line, rest[0], name, cwd)
                elif rest:
                    self.argv(line, rest, name, cwd)
                return
        for a in target:
            s = a.strip()
            if s.startswith("|"):
                self.shell(line, s[1:].strip(), name, cwd)
            elif s.endswith("|"):
                self.shell(line, s[:-1].strip(), name, cwd)

    def eval(self, line: int, name: str, code: object) -> None:
        if not isinstance(code, str) or UNKNOWN in code:
            self.note(line, f"{name} argument not constant")
            return
        if self.depth >= MAX_EVAL_DEPTH:
            self.note(line, f"{name} nested too deeply")
            return
        if self.evals[0] >= MAX_EVALS:
            self.note_once(f"{self.d.name}: code handed to {name} read {MAX_EVALS} times; the rest not analysed")
            return
        self.evals[0] += 1
        sub = _Analysis(self.d, self.parser, code.encode("utf-8", "surrogatepass"), self.depth + 1)
        sub.vars = dict(self.vars)
        sub.evals = self.evals
        sub.run(line - 1)
        for f in sub.results():
            self.add(f)
        for n in sub.notes:
            self.note_once(n)

    def cwd(self, entry: Mapping[str, Any], args: list[object], opts: dict[str, object]) -> str | None:
        where = entry.get("cwd")
        if where is None:
            return None
        for a in args:  # an options hash among the arguments (Ruby's spawn(cmd, {chdir: …}))
            if isinstance(a, Pairs):
                opts = {**opts, **a.items}
        v: object = None
        if isinstance(where, str) and where.startswith("-"):  # -WorkingDirectory DIR
            keys = [self.d.key(a) if isinstance(a, str) else a for a in args]
            at = keys.index(self.d.key(where)) if self.d.key(where) in keys else -1
            v = args[at + 1] if 0 <= at < len(args) - 1 else None
        elif isinstance(where, int):
            plain = [a for a in args if not isinstance(a, Pairs)]
            v = plain[where] if where < len(plain) else None
        elif where in opts:
            v = opts[where]
        if v is None:
            return None
        return v if isinstance(v, str) else UNKNOWN

    # ------------------------------------------------------------------ nodes

    def callee(self, node: Any, spec: Mapping[str, Any]) -> tuple[str, str, Any] | None:
        """The callee's name as written (``Open3.capture2``, ``Runtime.getRuntime().exec``), its
        last segment (the method), and the receiver node when it is a method call."""
        if "name" in spec:
            return str(spec["name"]), "", None  # a node that is one callee (Perl's eval BLOCK or STRING)
        keys = spec["function"]
        keys = keys if isinstance(keys, list) else [keys]
        parts = [_part(node, k) for k in keys]
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        if spec.get("callee_value"):
            v = self.value(parts[-1])
            name = v if isinstance(v, str) and UNKNOWN not in v else self.text(parts[-1])
            return _strip_quotes(name), "", None
        name = ".".join(re.sub(r"\s+", "", self.text(p)) for p in parts)
        receiver = parts[0] if len(parts) > 1 else None
        last = parts[-1]
        if receiver is None:
            named = [c for c in last.named_children if c.type not in self.d.skip]
            if len(named) >= 2:
                receiver, last = named[0], named[-1]
        method = re.split(r"\.|::|->", self.text(last))[-1] if receiver is not None else ""
        return name, method, receiver

    def arguments(self, node: Any, spec: Mapping[str, Any]) -> tuple[list[object], dict[str, object]]:
        key = spec.get("arguments")
        holder = _part(node, key) if key is not None else None
        if holder is None:
            return [], {}
        kids = (
            holder.named_children
            if holder.type in self.d.lists or holder.type in spec.get("argument_lists", ())
            else [holder]
        )
        args: list[object] = []
        opts: dict[str, object] = {}
        for k in kids:
            if k.type in self.d.skip:
                continue
            k = self.unwrap(k)
            if k.type in self.d.pair_types:
                key_, val = self.pair(k)
                if key_ is not None:
                    opts[key_] = val
                continue
            args.append(self.value(k))
        return args, opts

    def pair(self, node: Any) -> tuple[str | None, object]:
        named = [c for c in node.named_children if c.type not in self.d.skip]
        if len(named) < 2:
            return None, UNK
        k = self.value(named[0])
        key = k if isinstance(k, str) else self.text(named[0])
        return key.strip(":").strip(), self.value(named[-1])

    def unwrap(self, node: Any) -> Any:
        """Through nodes that only hold one other (parentheses, argument wrappers, PowerShell's
        expression ladder) and the fields the table names as a node's value."""
        d = self.d
        for _ in range(64):
            t = node.type
            if t in d.comma_lists and not any(c.type == "," for c in node.children):
                named = [c for c in node.named_children if c.type not in d.skip]
                if len(named) != 1:
                    return node
                node = named[0]
                continue
            if t in d.fields:
                inner = _part(node, d.fields[t])
                if inner is None:
                    return node
                node = inner
                continue
            if t in d.concat_types and len([c for c in node.named_children if c.type not in d.skip]) == 1:
                node = next(c for c in node.named_children if c.type not in d.skip)
                continue
            if (
                t in d.strings
                or t in d.quoted
                or t in d.words
                or t in d.tokens
                or t in d.variables
                or t in d.lists
                or t in d.comma_lists
                or t in d.commands
                or t in d.calls
                or t in d.concat_types
                or t in d.pair_types
                or t in d.hash_types
                or t in d.escapes
                or t in d.blocks
            ):
                return node
            named = [c for c in node.named_children if c.type not in d.skip]
            if len(named) != 1:
                return node
            node = named[0]
        return node

    def text(self, node: Any) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def value(self, node: Any) -> object:
        node = self.unwrap(node)
        got = self.memo.get(node.id)
        if got is None:
            got = self.memo[node.id] = self._value(node, 0)
        return got

    def _value(self, node: Any, depth: int) -> object:
        d = self.d
        t = node.type
        if depth > 64:
            return UNK
        if t in d.strings or t in d.quoted or t in d.commands:
            return self.string(node)
        if t in d.blocks:
            return WALKED
        if t in d.words:
            return tuple(self.string(node).split())
        if t in d.tokens:
            return self.unescape_bare(self.text(node))
        if t in d.variables:
            return self.vars.get(self.d.key(self.text(node)), UNK)
        if t in d.lists or t in d.comma_lists:
            items: list[object] = []
            for c in node.named_children:
                if c.type in d.skip:
                    continue
                v = self.value(c)
                if isinstance(v, tuple):
                    items.extend(v)
                elif not isinstance(v, Pairs):
                    items.append(v if isinstance(v, str) else UNKNOWN)
            return tuple(items)
        if t in d.hash_types:
            opts: dict[str, object] = {}
            for c in node.named_children:
                c = self.unwrap(c)
                if c.type in d.pair_types:
                    k, v = self.pair(c)
                    if k is not None:
                        opts[k] = v
            return Pairs(opts)
        if t in d.concat_types:
            ops = {c.type for c in node.children if not c.is_named}
            named = [c for c in node.named_children if c.type not in d.skip]
            if ops & d.concat_ops and len(named) == 2:
                a, b = self.value(named[0]), self.value(named[1])
                if (isinstance(a, str) or isinstance(b, str)) and len(a if isinstance(a, str) else "") + len(
                        b if isinstance(b, str) else "") <= MAX_VALUE:
                    return (a if isinstance(a, str) else UNKNOWN) + (b if isinstance(b, str) else UNKNOWN)
            return UNK
        if t in d.calls:
            return self.call_value(node, d.calls[t])
        return UNK

    def call_value(self, node: Any, spec: Mapping[str, Any]) -> object:
        """The value of a call: a command being built, a join of a list, a list made by a
        function; anything else is not a constant."""
        got = self.callee(node, spec)
        if got is None:
            return UNK
        name, method, receiver = got
        d = self.d
        k, m = d.key(name), d.key(method)
        entry = d.runs.get(k)
        line = node.start_point[0] + 1
        if entry is not None and entry.get("as") == "builder":
            args, _ = self.arguments(node, spec)
            b = Built(list(_flat(args[int(entry.get("skip", 0)) :])), line, name, node.start_byte)
            self.built.append(b)
            return b
        if receiver is not None and m in d.append | d.extend | d.replace | d.chdir:
            b = self.value(receiver)
            if isinstance(b, Built):
                args, _ = self.arguments(node, spec)
                if m in d.chdir:
                    b.cwd = args[0] if args and isinstance(args[0], str) else UNKNOWN
                elif m in d.replace:
                    b.argv[:] = list(_flat(args))
                elif m in d.append:
                    b.argv.extend(_flat(args[:1]))
                else:
                    b.argv.extend(_flat(args))
                return b
        if k in d.passes:  # new File("/tmp/x"), Paths.get("/tmp/x"): the value given
            args, _ = self.arguments(node, spec)
            return args[0] if len(args) == 1 else UNK
        if k in d.makes_list:
            args, _ = self.arguments(node, spec)
            return tuple(_flat(args))
        join = d.joins.get(k)
        if join is None and receiver is not None:
            join = d.join_methods.get(m)
            if join is not None:
                args, _ = self.arguments(node, spec)
                return _join(self.value(receiver), args[0] if args else join.get("separator", ""))
        if join is not None:
            args, _ = self.arguments(node, spec)
            li, si = int(join.get("list", 0)), join.get("separator_arg")
            seq = tuple(_flat(args[li:])) if join.get("rest") else args[li] if li < len(args) else UNK
            sep = args[int(si)] if si is not None and int(si) < len(args) else join.get("separator", "")
            return _join(seq, sep)
        return UNK

    def string(self, node: Any) -> str:
        """A string literal's value: its text between the delimiters, escapes decoded, variables
        and interpolations filled in (``UNKNOWN`` where not constant)."""
        kids = node.children
        named = [k for k, c in enumerate(kids) if c.is_named]
        if named:  # the delimiters are the unnamed tokens before the first named part and after the last
            i, j = named[0], named[-1] + 1
            start = kids[i - 1].end_byte if i > 0 else node.start_byte
            end = kids[j].start_byte if j < len(kids) else node.end_byte
        elif len(kids) >= 2:  # "" or " ": only the delimiters
            start, end = kids[0].end_byte, kids[-1].start_byte
        else:
            start, end = node.start_byte, node.end_byte
        if (
            node.type in self.d.quoted
            and end - start >= 2
            and self.src[start : start + 1] in (b'"', b"'")
            and self.src[end - 1 : end] == self.src[start : start + 1]
        ):
            start, end = start + 1, end - 1  # a literal whose quotes are its own text
        if not kids:
            text = self.text(node)
            if node.type not in self.d.quoted:
                return text
            inner = _strip_quotes(text)
            return self.interpolate(self.unescape_bare(inner) if text.startswith('"') else inner, text)
        if start >= end:
            return ""
        return self.interpolate(self.span(node, start, end), self.text(node))

    def span(self, node: Any, start: int, end: int) -> str:
        d = self.d
        out: list[str] = []
        pos = start
        for c in node.children:
            if c.end_byte <= start or c.start_byte >= end:
                continue
            if c.start_byte > pos:
                out.append(self.src[pos : c.start_byte].decode("utf-8", "replace"))
            t = c.type
            if t in d.escapes:
                out.append(_unescape(self.text(c)))
            elif t in d.variables:
                v = self.vars.get(self.d.key(self.text(c)), UNK)
                out.append(_as_text(v))
            elif t in d.interpolations:
                out.append(_as_text(self.value(c)))
            elif t in d.strings:
                out.append(self.span(c, c.start_byte, c.end_byte))
            elif c.is_named and c.named_children:
                out.append(UNKNOWN)  # an expression inside the string (``$h{a}``, ``${x.y}``)
            else:
                out.append(self.text(c))
            pos = c.end_byte
        if pos < end:
            out.append(self.src[pos:end].decode("utf-8", "replace"))
        return "".join(out)

    def unescape_bare(self, text: str) -> str:
        """A word or double-quoted text with the dialect's escape character read (``g`it`` is git)."""
        e = self.d.escape_char
        if not e or e not in text:
            return text
        out: list[str] = []
        i = 0
        while i < len(text):
            if text[i] == e and i + 1 < len(text):
                out.append(
                    _ESCAPES.get(text[i + 1], text[i + 1]) if text[i + 1] in "ntr0afv" else text[i + 1]
                )
                i += 2
                continue
            out.append(text[i])
            i += 1
        return "".join(out)

    def interpolate(self, text: str, quoted: str) -> str:
        """Variables a grammar leaves inside a string's text (Groovy's ``"$g"``), in a literal
        opened by one of the interpolating quotes."""
        if self.d.interp is None or not quoted.startswith(self.d.interp_quotes):
            return text
        return self.d.interp.sub(
            lambda m: _as_text(self.vars.get(next(g for g in m.groups() if g), UNK)), text
        )


def _part(node: Any, key: str | int | None) -> Any:
    """A node's part: a field, else the first named child of that type, or the named child at
    an index."""
    if key is None:
        return None
    if isinstance(key, int):
        named = node.named_children
        return named[key] if -len(named) <= key < len(named) else None
    got = node.child_by_field_name(key)
    if got is not None:
        return got
    return next((c for c in node.named_children if c.type == key), None)


def _flat(items: list[object]) -> list[str]:
    out: list[str] = []
    for a in items:
        if isinstance(a, tuple):
            out.extend(x if isinstance(x, str) else UNKNOWN for x in a)
        elif isinstance(a, Built):
            out.extend(a.argv)
        elif isinstance(a, Pairs):
            continue
        else:
            out.append(a if isinstance(a, str) else UNKNOWN)
    return out


def _as_text(v: object) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, tuple):
        return " ".join(x if isinstance(x, str) else UNKNOWN for x in v)
    return UNKNOWN


def _join(seq: object, sep: object) -> object:
    if not isinstance(seq, tuple):
        return UNK
    return (sep if isinstance(sep, str) else UNKNOWN).join(x if isinstance(x, str) else UNKNOWN for x in seq)


def _strip_quotes(text: str) -> str:
    for q in _QUOTES:
        if len(text) >= 2 * len(q) and text.startswith(q) and text.endswith(q):
            return text[len(q) : -len(q)]
    return text


def _unescape(text: str) -> str:
    if len(text) < 2 or text[0] != "\\":
        return text
    m = _HEX.fullmatch(text)
    if m:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code < 0x110000 else UNKNOWN
    if len(text) == 2:
        return _ESCAPES.get(text[1], text[1])
    if text[1] in "01234567" and text[1:].isdigit():
        return chr(int(text[1:], 8) & 0xFF)
    return text[1:]


def _drop_options(args: list[object], with_value: list[str] | tuple[str, ...], d: Dialect) -> list[object]:
    """A command's words without its named parameters (PowerShell's ``-Wait``, and ``-Name
    VALUE`` for the listed ones)."""
    takes = {d.key(o) for o in with_value}
    out: list[object] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if isinstance(a, str) and a.startswith("-") and len(a) > 1 and not a[1].isdigit():
            skip = d.key(a) in takes
            continue
        out.append(a)
    return out


__all__ = ["UNK", "analyze_dialect", "argv_of_string", "dialect_of", "parser_for"]
