"""JavaScript inline programs (``node -e``, ``bun -e``, ``deno eval``), parsed with tree-sitter.

What is found: ``child_process`` in every form (require/import, destructured or not, the REPL
globals ``node -e`` provides), execa/zx/Bun/Deno process APIs, HTTP requests (fetch,
http(s).request, axios, got) and reads of GitHub token variables from ``process.env``. A small
constant propagation follows string, array, object and template literals through variables.
Source with syntax errors is still walked (tree-sitter recovers); the result is marked partial.
"""

from __future__ import annotations

import json
from functools import lru_cache

from guard.ir import UNKNOWN
from guard.record import dataclass
from guard.resolve.inline.common import UNK, Finding, Unknown, argv_of_string

MAX_STEPS = 600_000
MAX_DEPTH = 60
MAX_VALUE = 100_000
MAX_FINDINGS = 1_000




def _only_counted(n, q: str) -> bool:  # type: ignore[no-untyped-def]
    """``Object.keys(process.env).length``: a count of the variables reads no value and no name."""
    parent = n.parent
    if q not in ("Object.keys", "Object.values", "Object.entries") or parent is None:
        return False
    prop = parent.child_by_field_name("property") if parent.type == "member_expression" else None
    return prop is not None and prop.text == b"length"


@dataclass(frozen=True)
class Ref:
    qual: str
    data: tuple = ()


# Builtin modules `node -e` exposes as globals, and other globals of interest.
_GLOBAL_MODULES = {"child_process", "http", "https", "fs", "util"}
_GLOBALS = {"process", "fetch", "Request", "Bun", "Deno", "JSON", "console", "Object", "require", "axios"}

_CP_SHELL = {"exec", "execSync"}
_CP_FILE = {"spawn", "spawnSync", "execFile", "execFileSync"}
_DUMPERS = {
    "console.log",
    "console.info",
    "console.error",
    "console.warn",
    "console.debug",
    "console.dir",
    "console.table",
    "JSON.stringify",
    "Object.keys",
    "Object.entries",
    "Object.values",
    "util.inspect",
    "process.stdout.write",
    "process.stderr.write",
    "fs.writeFileSync",
    "fs.writeFile",
    "fs.appendFileSync",
    "fs.appendFile",
}
_HTTP_VERBS = {"get", "post", "put", "patch", "delete", "head", "options"}
_BODY_VERBS = {"post", "put", "patch"}


@lru_cache(maxsize=1)
def _parser():  # type: ignore[no-untyped-def]
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_javascript.language()))


def _module_name(spec: str) -> str:
    return spec[5:] if spec.startswith("node:") else spec


def _to_str(v: object) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
    if v is None:
        return "null"
    return UNKNOWN


def _json(v: object, depth: int = 0) -> object:
    if depth > 20:
        return UNKNOWN
    if isinstance(v, dict):
        return {k: _json(x, depth + 1) for k, x in v.items()}
    if isinstance(v, tuple):
        return [_json(x, depth + 1) for x in v]
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return UNKNOWN


_ESC = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _unescape(seq: str) -> str:
    body = seq[1:]
    if not body:
        return ""
    c = body[0]
    if c in _ESC and (c != "0" or len(body) == 1):
        return _ESC[c]
    if c == "x" and len(body) == 3:
        return chr(int(body[1:], 16))
    if c == "u":
        digits = body[2:-1] if body.startswith("u{") else body[1:]
        try:
            return chr(int(digits, 16))
        except (ValueError, OverflowError):
            return UNKNOWN
    if c in "\r\n\u2028\u2029":
        return ""
    return body


class _Analyzer:
    def __init__(self, src: bytes) -> None:
        self.src = src
        self.env: dict[str, object] = {}
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.seen: set = set()
        self.steps = 0

    # ------------------------------------------------------------------ helpers

    def text(self, n) -> str:  # type: ignore[no-untyped-def]
        return n.text.decode("utf-8", "replace")

    def add(self, n, **kw: object) -> None:  # type: ignore[no-untyped-def]
        kw.setdefault("line", n.start_point[0] + 1)
        f = Finding(**kw)  # type: ignore[arg-type]
        key = ("token", f.var, f.line) if f.kind == "token" else f
        if key in self.seen:
            return  # one report per finding; one per token variable and line
        if len(self.findings) >= MAX_FINDINGS:
            msg = f"node: more than {MAX_FINDINGS} findings; the rest are not reported"
            if msg not in self.notes:
                self.notes.append(msg)
            return
        self.seen.add(key)
        self.findings.append(f)

    def note(self, n, text: str) -> None:  # type: ignore[no-untyped-def]
        msg = f"node: {text} at line {n.start_point[0] + 1}"
        if msg not in self.notes:
            self.notes.append(msg)

    # ------------------------------------------------------------------ walk

    def run(self, root) -> None:  # type: ignore[no-untyped-def]
        if root.has_error:
            self.notes.append("node: source has syntax errors; findings are partial")
        stack = [root]
        while stack:
            n = stack.pop()
            self.steps += 1
            if self.steps > MAX_STEPS:
                self.notes.append("node: analysis budget exhausted; findings are partial")
                return
            t = n.type
            if t == "variable_declarator":
                self.declarator(n)
            elif t == "assignment_expression":
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                if left is not None and right is not None and left.type in {"identifier", "member_expression"}:
                    self.env[self.text(left)] = self.ev(right)
            elif t == "import_statement":
                self.import_stmt(n)
            elif t == "call_expression":
                self.promise_then(n)
                self.call(n)
            elif t == "new_expression":
                self.new(n)
            elif t == "ERROR":
                self.error_calls(n)
            elif t in {"member_expression", "subscript_expression"}:
                self.token_read(n)
            elif t == "for_in_statement":
                right = n.child_by_field_name("right")
                op = n.child_by_field_name("operator")
                if right is not None and op is not None and self.text(op) == "in" and self.is_env(right):
                    self.add(n, kind="token", var="*", detail="process.env iterated")
            elif t == "binary_expression":
                op = n.child_by_field_name("operator")
                if op is not None and self.text(op) == "in":
                    key = self.ev(n.child_by_field_name("left"))
                    if isinstance(key, str) and self.is_env(n.child_by_field_name("right")):
                        self.add(n, kind="token", var=key, detail="in process.env")
            stack.extend(reversed(n.children))

    def declarator(self, n) -> None:  # type: ignore[no-untyped-def]
        name = n.child_by_field_name("name")
        value = n.child_by_field_name("value")
        if name is None:
            return
        if value is None:
            if name.type == "identifier":
                self.env[self.text(name)] = UNK
            return
        if name.type == "identifier":
            self.env[self.text(name)] = self.ev(value)
            return
        if name.type == "object_pattern":
            base = self.ev(value)
            for p in name.named_children:
                key = target = None
                if p.type == "shorthand_property_identifier_pattern":
                    key = target = self.text(p)
                elif p.type == "pair_pattern":
                    k, v = p.child_by_field_name("key"), p.child_by_field_name("value")
                    if k is not None and v is not None:
                        key = self.ev(k) if k.type != "property_identifier" else self.text(k)
                        target = self.text(v) if v.type == "identifier" else None
                elif p.type == "object_assignment_pattern":
                    left = p.child_by_field_name("left")
                    if left is not None:
                        key = target = self.text(left)
                if not isinstance(key, str):
                    continue
                if isinstance(base, Ref):
                    if base.qual == "process.env":
                        self.add(p, kind="token", var=key, detail="process.env destructured")
                    val: object = Ref(f"{base.qual}.{key}", base.data)
                elif isinstance(base, dict):
                    val = base.get(key, UNK)
                else:
                    val = UNK
                if target:
                    self.env[target] = val
            return
        if name.type == "array_pattern":
            base = self.ev(value)
            idents = [c for c in name.named_children]
            for i, c in enumerate(idents):
                if c.type == "identifier":
                    self.env[self.text(c)] = base[i] if isinstance(base, tuple) and i < len(base) else UNK

    def import_stmt(self, n) -> None:  # type: ignore[no-untyped-def]
        src = n.child_by_field_name("source")
        if src is None:
            return
        mod = self.ev(src)
        if not isinstance(mod, str):
            return
        mod = _module_name(mod)
        for clause in n.named_children:
            if clause.type != "import_clause":
                continue
            for c in clause.named_children:
                if c.type == "identifier":  # default import
                    self.env[self.text(c)] = Ref(mod)
                elif c.type == "namespace_import":
                    for ident in c.named_children:
                        if ident.type == "identifier":
                            self.env[self.text(ident)] = Ref(mod)
                elif c.type == "named_imports":
                    for spec in c.named_children:
                        if spec.type != "import_specifier":
                            continue
                        nm = spec.child_by_field_name("name")
                        alias = spec.child_by_field_name("alias") or nm
                        if nm is not None and alias is not None:
                            self.env[self.text(alias)] = Ref(f"{mod}.{self.text(nm)}")

    # ------------------------------------------------------------------ values

    def ref(self, n) -> Ref | None:  # type: ignore[no-untyped-def]
        v = self.ev(n)
        return v if isinstance(v, Ref) else None

    def is_env(self, n) -> bool:  # type: ignore[no-untyped-def]
        r = self.ref(n) if n is not None else None
        return r is not None and r.qual in {"process.env", "Bun.env"}

    def ev(self, n, depth: int = 0) -> object:  # type: ignore[no-untyped-def]
        self.steps += 1
        if n is None or depth > MAX_DEPTH:
            return UNK
        d = depth + 1
        t = n.type
        if t == "string":
            out = []
            for c in n.named_children:
                if c.type == "string_fragment":
                    out.append(self.text(c))
                elif c.type == "escape_sequence":
                    out.append(_unescape(self.text(c)))
            return "".join(out)
        if t == "template_string":
            out = []
            for c in n.named_children:
                if c.type == "string_fragment":
                    out.append(self.text(c))
                elif c.type == "escape_sequence":
                    out.append(_unescape(self.text(c)))
                elif c.type == "template_substitution":
                    inner = c.named_children[0] if c.named_children else None
                    out.append(_to_str(self.ev(inner, d)))
            return "".join(out)[:MAX_VALUE]
        if t == "number":
            txt = self.text(n).replace("_", "")
            try:
                return int(txt, 0) if not any(ch in txt for ch in ".eE") or txt.lower().startswith("0x") else float(txt)
            except ValueError:
                return UNK
        if t in {"true", "false"}:
            return t == "true"
        if t in {"null", "undefined"}:
            return None
        if t == "identifier":
            name = self.text(n)
            if name in self.env:
                return self.env[name]
            if name in _GLOBAL_MODULES or name in _GLOBALS:
                return Ref(name)
            return UNK
        if t in {"parenthesized_expression", "await_expression"}:
            inner = n.named_children[-1] if n.named_children else None
            return self.ev(inner, d)
        if t == "member_expression":
            obj, prop = n.child_by_field_name("object"), n.child_by_field_name("property")
            key = self.text(n)
            if key in self.env:
                return self.env[key]
            base = self.ev(obj, d)
            name = self.text(prop) if prop is not None else ""
            if isinstance(base, Ref):
                return Ref(f"{base.qual}.{name}", base.data)
            if isinstance(base, dict):
                return base.get(name, UNK)
            if isinstance(base, tuple | str) and name == "length":
                return len(base)
            return UNK
        if t == "subscript_expression":
            base = self.ev(n.child_by_field_name("object"), d)
            idx = self.ev(n.child_by_field_name("index"), d)
            if isinstance(base, Ref) and isinstance(idx, str):
                return Ref(f"{base.qual}.{idx}", base.data)
            if isinstance(base, tuple | str) and isinstance(idx, int) and 0 <= idx < len(base):
                return base[idx]
            if isinstance(base, dict) and isinstance(idx, str):
                return base.get(idx, UNK)
            return UNK
        if t == "binary_expression":
            op = n.child_by_field_name("operator")
            if op is None or self.text(op) != "+":
                return UNK
            left = self.ev(n.child_by_field_name("left"), d)
            right = self.ev(n.child_by_field_name("right"), d)
            if isinstance(left, int | float) and isinstance(right, int | float) and not isinstance(left, bool):
                return left + right
            if isinstance(left, str) or isinstance(right, str):
                ls, rs = _to_str(left), _to_str(right)
                if ls == UNKNOWN and rs == UNKNOWN:
                    return UNK
                return (ls + rs)[:MAX_VALUE]
            return UNK
        if t == "array":
            items: list[object] = []
            for c in n.named_children:
                if c.type == "spread_element":
                    inner = self.ev(c.named_children[0] if c.named_children else None, d)
                    if isinstance(inner, tuple):
                        items.extend(inner)
                    else:
                        items.append(UNKNOWN)
                elif c.type != "comment":
                    items.append(self.ev(c, d))
            return tuple(items)
        if t == "object":
            obj: dict[str, object] = {}
            for c in n.named_children:
                if c.type == "pair":
                    k = c.child_by_field_name("key")
                    v = c.child_by_field_name("value")
                    if k is None:
                        continue
                    if k.type in {"property_identifier"}:
                        key = self.text(k)
                    elif k.type == "computed_property_name":
                        kv = self.ev(k.named_children[0] if k.named_children else None, d)
                        key = kv if isinstance(kv, str) else UNKNOWN
                    else:
                        kv = self.ev(k, d)
                        key = _to_str(kv)
                    obj[key] = self.ev(v, d)
                elif c.type == "shorthand_property_identifier":
                    obj[self.text(c)] = self.env.get(self.text(c), UNK)
                elif c.type == "spread_element":
                    inner = self.ev(c.named_children[0] if c.named_children else None, d)
                    if isinstance(inner, dict):
                        obj.update(inner)
            return obj
        if t == "ternary_expression":
            a = self.ev(n.child_by_field_name("consequence"), d)
            b = self.ev(n.child_by_field_name("alternative"), d)
            return a if a == b and not isinstance(a, Unknown) else UNK
        if t == "call_expression":
            return self.ev_call(n, d)
        if t == "new_expression":
            ctor = self.ref(n.child_by_field_name("constructor"))
            if ctor is None:
                return UNK
            if ctor.qual in {"Request", "undici.Request", "node-fetch.Request"}:
                vals = [self.ev(a, d) for a in self.args_of(n)]
                return Ref("Request()", (vals[0] if vals else UNK, vals[1] if len(vals) > 1 else {}))
            return Ref(f"{ctor.qual}()")
        return UNK

    def args_of(self, n) -> list:  # type: ignore[no-untyped-def]
        a = n.child_by_field_name("arguments")
        if a is None:
            return []
        if a.type == "template_string":
            return [a]
        return [c for c in a.named_children if c.type != "comment"]

    def ev_call(self, n, d: int) -> object:  # type: ignore[no-untyped-def]
        fn = n.child_by_field_name("function")
        args = self.args_of(n)
        if fn is None:
            return UNK
        if fn.type == "identifier" and self.text(fn) == "require" and "require" not in self.env and args:
            mod = self.ev(args[0], d)
            return Ref(_module_name(mod)) if isinstance(mod, str) and UNKNOWN not in mod else UNK
        if fn.type == "import" and args:
            mod = self.ev(args[0], d)
            return Ref(_module_name(mod)) if isinstance(mod, str) and UNKNOWN not in mod else UNK
        if fn.type == "member_expression":
            recv = self.ev(fn.child_by_field_name("object"), d)
            prop = fn.child_by_field_name("property")
            m = self.text(prop) if prop is not None else ""
            vals = [self.ev(a, d) for a in args]
            if isinstance(recv, tuple) and m == "join":
                sep = vals[0] if vals else ","
                if isinstance(sep, str):
                    return sep.join(_to_str(x) for x in recv)[:MAX_VALUE]
                return UNK
            if isinstance(recv, tuple) and m == "concat":
                out = list(recv)
                for v in vals:
                    out.extend(v) if isinstance(v, tuple) else out.append(v)
                return tuple(out)
            if isinstance(recv, str):
                if m == "split" and vals and isinstance(vals[0], str):
                    return tuple(recv.split(vals[0])) if vals[0] else tuple(recv)
                if m in {"trim", "trimStart", "trimEnd", "toLowerCase", "toUpperCase"} and not vals:
                    return {"trim": recv.strip, "trimStart": recv.lstrip, "trimEnd": recv.rstrip,
                            "toLowerCase": recv.lower, "toUpperCase": recv.upper}[m]()
                if m == "concat":
                    return (recv + "".join(_to_str(v) for v in vals))[:MAX_VALUE]
                if m in {"replace", "replaceAll"} and len(vals) == 2 and all(isinstance(v, str) for v in vals):
                    return recv.replace(vals[0], vals[1], -1 if m == "replaceAll" else 1)[:MAX_VALUE]  # type: ignore[arg-type]
                return UNK
            if isinstance(recv, Ref):
                q = f"{recv.qual}.{m}"
                if q == "JSON.stringify" and vals:
                    return json.dumps(_json(vals[0]), ensure_ascii=False)
                if q in {"path.join", "path.resolve"}:
                    return "/".join(_to_str(v) for v in vals)
                if q == "axios.create" and vals and isinstance(vals[0], dict):
                    base = vals[0].get("baseURL")
                    return Ref("axios.create()", (_to_str(base) if base is not None else "",))
                return Ref(f"{q}()", recv.data)
            return UNK
        r = self.ref(fn)
        if r is not None:
            return Ref(f"{r.qual}()", r.data)
        return UNK

    # ------------------------------------------------------------------ calls

    def call(self, n) -> None:  # type: ignore[no-untyped-def]
        fn = n.child_by_field_name("function")
        if fn is not None:
            self.call_with(n, fn, self.args_of(n))

    def promise_then(self, n) -> None:  # type: ignore[no-untyped-def]
        """``import('child_process').then(cp => cp.execSync(…))``: the callback's parameter is the
        module (or the object) the promise resolves to."""
        fn = n.child_by_field_name("function")
        if fn is None or fn.type != "member_expression":
            return
        prop = fn.child_by_field_name("property")
        args = self.args_of(n)
        if prop is None or self.text(prop) != "then" or not args:
            return
        obj = fn.child_by_field_name("object")
        base = self.ev(obj)
        if not isinstance(base, Ref) or "(" in base.qual or args[0].type not in {"arrow_function", "function_expression", "function"}:
            return
        cb = args[0]
        param = cb.child_by_field_name("parameter")
        if param is None:
            params = cb.child_by_field_name("parameters")
            param = params.named_children[0] if params is not None and params.named_children else None
        if param is None:
            return
        if param.type == "identifier":
            self.env[self.text(param)] = base
        elif param.type == "object_pattern":
            for p in param.named_children:
                if p.type == "shorthand_property_identifier_pattern":
                    self.env[self.text(p)] = Ref(f"{base.qual}.{self.text(p)}", base.data)

    def error_calls(self, n) -> None:  # type: ignore[no-untyped-def]
        """Inside a syntax error, ``callee ( args…`` without its closing parenthesis."""
        kids = n.children
        for i, c in enumerate(kids):
            if c.type != "(" or i == 0 or kids[i - 1].type not in {"identifier", "member_expression"}:
                continue
            args = []
            for a in kids[i + 1 :]:
                if a.type in {")", ";"}:
                    break
                if a.is_named and a.type != "comment":
                    args.append(a)
            self.call_with(n, kids[i - 1], args)

    def call_with(self, n, fn, args: list) -> None:  # type: ignore[no-untyped-def]
        r = self.ref(fn)
        if r is None:
            return
        q = r.qual
        if q in _DUMPERS and not _only_counted(n, q):
            for a in args:
                if self.bare_env(a, 0):
                    self.add(n, kind="token", var="*", detail=f"process.env passed to {q}")
                    break
        head, _, last = q.rpartition(".")
        if head == "child_process":
            self.child_process(n, last, args)
        elif q in {"zx.$", "execa.$", "Bun.$", "bun.$"} or (q == "$" and args and args[0].type == "template_string"):
            if args and args[0].type == "template_string":
                v = self.ev(args[0])
                self.shell(n, v, None, q)
        elif q in {"execa.execa", "execa.execaSync", "execa", "execa.default"}:
            prog = self.ev(args[0]) if args else UNK
            rest = self.ev(args[1]) if len(args) > 1 else ()
            opts = self.ev(args[2]) if len(args) > 2 else (rest if isinstance(rest, dict) else {})
            self.argv(n, (prog, *(rest if isinstance(rest, tuple) else ())), self.cwd_of(opts), q)
        elif q in {"execa.execaCommand", "execa.execaCommandSync"}:
            v = self.ev(args[0]) if args else UNK
            opts = self.ev(args[1]) if len(args) > 1 else {}
            if isinstance(v, str):
                self.argv(n, argv_of_string(v), self.cwd_of(opts), q)
            else:
                self.note(n, f"{q} argument not constant")
        elif q in {"Bun.spawn", "Bun.spawnSync", "bun.spawn", "bun.spawnSync"}:
            first = self.ev(args[0]) if args else UNK
            opts = self.ev(args[1]) if len(args) > 1 else {}
            if isinstance(first, dict):
                opts, first = first, first.get("cmd", UNK)
            self.argv(n, first, self.cwd_of(opts), q)
        elif q == "Deno.run":
            opts = self.ev(args[0]) if args else UNK
            cmd = opts.get("cmd", UNK) if isinstance(opts, dict) else UNK
            self.argv(n, cmd, self.cwd_of(opts), q)
        elif q in {"Deno.env.get"}:
            v = self.ev(args[0]) if args else UNK
            if isinstance(v, str):
                self.add(n, kind="token", var=v, detail=q)
        elif q in {"Deno.env.toObject"}:
            self.add(n, kind="token", var="*", detail=q)
        else:
            self.http(n, r, args)

    def child_process(self, n, fn: str, args: list) -> None:  # type: ignore[no-untyped-def]
        q = f"child_process.{fn}"
        vals = [self.ev(a) for a in args]
        if fn in _CP_SHELL:
            opts = vals[1] if len(vals) > 1 and isinstance(vals[1], dict) else {}
            self.shell(n, vals[0] if vals else UNK, self.cwd_of(opts), q)
        elif fn in _CP_FILE:
            prog = vals[0] if vals else UNK
            rest: object = ()
            opts: object = {}
            if len(vals) > 1:
                if isinstance(vals[1], dict):
                    opts = vals[1]
                else:
                    rest = vals[1]
                    if len(vals) > 2 and isinstance(vals[2], dict):
                        opts = vals[2]
            if not isinstance(rest, tuple):
                rest = (UNKNOWN,)
            shell = opts.get("shell") if isinstance(opts, dict) else None
            if shell not in (None, False, "", 0):
                cmd = " ".join(_to_str(x) for x in (prog, *rest))
                self.shell(n, cmd if cmd != UNKNOWN else UNK, self.cwd_of(opts), q)
            else:
                self.argv(n, (prog, *rest), self.cwd_of(opts), q)
        elif fn == "fork":
            mod = vals[0] if vals else UNK
            rest = vals[1] if len(vals) > 1 and isinstance(vals[1], tuple) else ()
            opts = vals[-1] if len(vals) > 1 and isinstance(vals[-1], dict) else {}
            self.argv(n, ("node", mod, *rest), self.cwd_of(opts), q)

    def new(self, n) -> None:  # type: ignore[no-untyped-def]
        ctor = self.ref(n.child_by_field_name("constructor"))
        if ctor is None:
            return
        args = self.args_of(n)
        if ctor.qual == "Deno.Command":
            prog = self.ev(args[0]) if args else UNK
            opts = self.ev(args[1]) if len(args) > 1 else {}
            rest = opts.get("args", ()) if isinstance(opts, dict) else ()
            self.argv(n, (prog, *(rest if isinstance(rest, tuple) else (UNKNOWN,))), self.cwd_of(opts), "Deno.Command")

    def cwd_of(self, opts: object) -> str | None:
        if not isinstance(opts, dict) or "cwd" not in opts:
            return None
        v = opts["cwd"]
        if v is None:
            return None
        return v if isinstance(v, str) else UNKNOWN

    def shell(self, n, v: object, cwd: str | None, q: str) -> None:  # type: ignore[no-untyped-def]
        if not isinstance(v, str) or v == UNKNOWN:
            self.note(n, f"{q} argument not constant")
            return
        self.add(n, kind="shell", shell=v, cwd=cwd, detail=q)

    def argv(self, n, v: object, cwd: str | None, q: str) -> None:  # type: ignore[no-untyped-def]
        if not isinstance(v, tuple) or not v:
            self.note(n, f"{q} argument not constant")
            return
        argv = tuple(_to_str(x) for x in v)
        if argv[0] == UNKNOWN:
            self.note(n, f"{q} program not constant")
        self.add(n, kind="argv", argv=argv, cwd=cwd, detail=q)

    # ------------------------------------------------------------------ HTTP

    def http(self, n, r: Ref, args: list) -> None:  # type: ignore[no-untyped-def]
        q = r.qual
        vals = [self.ev(a) for a in args]
        if q in {"fetch", "node-fetch", "node-fetch.default", "undici.fetch", "cross-fetch"}:
            url = vals[0] if vals else UNK
            opts = vals[1] if len(vals) > 1 and isinstance(vals[1], dict) else {}
            if isinstance(url, Ref) and url.qual == "Request()":  # fetch(new Request(url, init))
                url, init = url.data
                opts = {**(init if isinstance(init, dict) else {}), **opts}
            body = opts.get("body")
            method = opts.get("method", "POST" if body is not None else "GET")
            self.http_add(n, method, _url(url), body, q)
            return
        if q in {"https.request", "http.request", "https.get", "http.get"}:
            scheme = q.split(".")[0]
            opts: object = {}
            url: str
            if vals and isinstance(vals[0], str):
                url = vals[0]
                if len(vals) > 1 and isinstance(vals[1], dict):
                    opts = vals[1]
            elif vals and isinstance(vals[0], dict):
                opts = vals[0]
                o = vals[0]
                host = o.get("hostname", o.get("host", UNK))
                port = o.get("port")
                path = o.get("path", "/")
                url = f"{scheme}://{_to_str(host)}" + (f":{_to_str(port)}" if port is not None else "") + _to_str(path)
            else:
                url = UNKNOWN
            method = opts.get("method", "GET") if isinstance(opts, dict) else "GET"
            if q.endswith(".get"):
                method = "GET"
            self.http_add(n, method, url, None, q)
            return
        lib, _, verb = q.rpartition(".")
        if lib in {"axios", "axios.create()", "got", "ky"} or q in {"axios", "axios.create()", "got", "ky"}:
            base = r.data[0] if r.data else ""
            if q in {"axios", "axios.create()", "got", "ky"}:  # axios(url, config) / axios(config)
                if vals and isinstance(vals[0], dict):
                    cfg = vals[0]
                    url = cfg.get("url", UNK)
                else:
                    url = vals[0] if vals else UNK
                    cfg = vals[1] if len(vals) > 1 and isinstance(vals[1], dict) else {}
                body = cfg.get("data", cfg.get("json", cfg.get("body")))
                method = cfg.get("method", "POST" if body is not None else "GET")
            elif verb == "request":
                cfg = vals[0] if vals and isinstance(vals[0], dict) else {}
                url = cfg.get("url", UNK)
                body = cfg.get("data")
                method = cfg.get("method", "GET")
            elif verb in _HTTP_VERBS:
                url = vals[0] if vals else UNK
                method = verb
                if lib.startswith("axios") and verb in _BODY_VERBS:
                    body = vals[1] if len(vals) > 1 else None
                else:
                    cfg = vals[1] if len(vals) > 1 and isinstance(vals[1], dict) else {}
                    body = cfg.get("data", cfg.get("json", cfg.get("body")))
            else:
                return
            url_s = _url(url)
            if base and url_s and not url_s.startswith(("http://", "https://", UNKNOWN)):
                url_s = base.rstrip("/") + "/" + url_s.lstrip("/")
            self.http_add(n, method, url_s, body, q)

    def http_add(self, n, method: object, url: str, body: object, q: str) -> None:  # type: ignore[no-untyped-def]
        m = method.upper() if isinstance(method, str) else UNKNOWN
        if body is None:
            text = None
        elif isinstance(body, str):
            text = body
        elif isinstance(body, dict | tuple):
            text = json.dumps(_json(body), ensure_ascii=False)
        else:
            text = UNKNOWN
        self.add(n, kind="http", method=m, url=url, body=text, detail=q)

    # ------------------------------------------------------------------ tokens

    def token_read(self, n) -> None:  # type: ignore[no-untyped-def]
        if n.parent is not None and n.parent.type == "assignment_expression" and n.parent.child_by_field_name("left") == n:
            return  # process.env.X = … writes, it does not read
        obj = n.child_by_field_name("object")
        if not self.is_env(obj):
            return
        if n.type == "member_expression":
            prop = n.child_by_field_name("property")
            key: object = self.text(prop) if prop is not None else UNK
        else:
            key = self.ev(n.child_by_field_name("index"))
        if isinstance(key, str):
            self.add(n, kind="token", var=key, detail="process.env")
        elif not isinstance(key, str):
            self.note(n, "environment variable name not constant")

    def bare_env(self, n, depth: int) -> bool:  # type: ignore[no-untyped-def]
        if depth > MAX_DEPTH:
            return False
        if n.type in {"member_expression", "subscript_expression", "identifier"} and self.is_env(n):
            return True
        if n.type in {"member_expression", "subscript_expression"} and self.is_env(n.child_by_field_name("object")):
            return False
        if n.type == "member_expression" and n.named_children and n.named_children[0].type == "call_expression":
            prop = n.child_by_field_name("property")
            fn = n.named_children[0].child_by_field_name("function")
            if prop is not None and prop.text == b"length" and fn is not None and fn.text in (
                    b"Object.keys", b"Object.values", b"Object.entries"):
                return False  # Object.keys(process.env).length: a count, no name or value
        return any(self.bare_env(c, depth + 1) for c in n.named_children)


def _url(v: object) -> str:
    return v if isinstance(v, str) else UNKNOWN


def analyze_node(source: str) -> tuple[list[Finding], list[str]]:
    """Findings and unresolved notes for a JavaScript program given as text."""
    src = source.encode("utf-8", "surrogatepass")
    tree = _parser().parse(src)
    an = _Analyzer(src)
    try:
        an.run(tree.root_node)
    except RecursionError:
        an.notes.append("node: source nested too deeply; findings are partial")
    return an.findings, an.notes
