"""Python inline programs, analysed with ``ast`` and a small constant propagation.

What is found: process launches (``subprocess``, ``os.system``/``popen``/``exec*``/``spawn*``,
``pty.spawn``, ``asyncio`` subprocesses), git libraries (GitPython, dulwich, pygit2), HTTP
requests (requests, httpx, aiohttp, urllib, http.client) and reads of GitHub token variables.
Source that does not parse falls back to a conservative scan of its string literals.
"""

from __future__ import annotations

import ast
import io
import json
import posixpath
import re
import shlex
import tokenize
import unicodedata

import re2

from guard.ir import UNKNOWN
from guard.record import dataclass, field
from guard.resolve.inline.common import (
    UNK,
    Finding,
    Unknown,
    argv_of_string,
    join_shell,
    looks_like_command,
)

# Literal patterns, compiled at import (before the analysis server forks its workers).
_GITPYTHON_CALL = re.compile(r"(?:^git\.(?:cmd\.)?Git\(\)|\.git)\.(\w+)$")


MAX_STEPS = 400_000  # expression nodes evaluated per source
MAX_DEPTH = 60  # expression nesting followed by the evaluator
MAX_LOOP_ITEMS = 8  # a for-loop over a constant list is unrolled up to this many items
MAX_EXEC_NESTING = 3  # exec("…") analysed recursively this deep
MAX_VALUE = 100_000  # characters of a propagated constant
MAX_FINDINGS = 1_000

# Compiled at import (as the analysis server's warm-up loads this module), not at first use in a worker.
_OPENER_OPEN = re.compile(r"^(urllib\.request|urllib2)\.build_opener\(\)\.open$")
_CONNECTION_REQUEST = re.compile(r"^http\.client\.HTTPS?Connection\(\)\.(request|putrequest)$")




def _child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, in the same order, without its two generators:
    the expression scan asks this of every node it visits (about 200,000 per corpus pass)."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, ast.AST))
    return out


# Each node class's field names, last first, for the expression scan (built on first sight).
_REVERSED_FIELDS: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True)
class Ref:
    """A module, function or object the analysis tracks by qualified name.

    ``qual`` is a dotted path where ``()`` marks a call result: ``subprocess.run``,
    ``git.Repo.clone_from()``, ``requests.Session().post``. ``path`` is the repository path or
    host an object stands for; ``data`` holds request parts for urllib Request objects.
    """

    qual: str
    path: object = UNK
    data: tuple = ()


_SUBPROCESS_POPEN = {"run", "call", "check_call", "check_output", "Popen"}
_SHELL_CALLS = {
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "os.system",
    "os.popen",
    "commands.getoutput",
    "commands.getstatusoutput",
    "asyncio.create_subprocess_shell",
    "asyncio.subprocess.create_subprocess_shell",
    "platform.popen",
}
_EXEC_V = {"execv", "execve", "execvp", "execvpe"}
_EXEC_L = {"execl", "execle", "execlp", "execlpe"}
_SPAWN_V = {"spawnv", "spawnve", "spawnvp", "spawnvpe"}
_SPAWN_L = {"spawnl", "spawnle", "spawnlp", "spawnlpe"}
_STAR_EXPORTS = {
    "subprocess": ("run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"),
    "os": ("system", "popen", "environ", "getenv", *_EXEC_V, *_EXEC_L, *_SPAWN_V, *_SPAWN_L),
    "pty": ("spawn",),
}
_HTTP_METHODS = {"get", "post", "put", "patch", "delete", "head", "options"}
_HTTP_CLIENT_RE = re.compile(
    r"^(requests|httpx|aiohttp)"
    r"(?:\.(?:Session|session|Client|AsyncClient|ClientSession)\(\))?"
    r"\.(get|post|put|patch|delete|head|options|request|stream)$"
)
_DUMPERS = {
    "print",
    "pprint.pprint",
    "pprint.pp",
    "json.dump",
    "json.dumps",
    "repr",
    "str",
    "sys.stdout.write",
    "sys.stderr.write",
    "logging.info",
    "logging.debug",
    "logging.warning",
    "logging.error",
}
_DUMP_METHODS = {"write", "writelines", "info", "debug", "warning", "error", "critical", "log", "dump", "dumps"}
_GITPYTHON_OPS = {
    "push": "push",
    "pull": "pull",
    "fetch": "fetch",
    "commit": "commit",
    "add": "add",
    "remove": "rm",
    "move": "mv",
    "write": "write",
    "create_remote": "remote",
    "create_head": "branch",
    "create_tag": "tag",
    "delete_head": "branch",
    "delete_tag": "tag",
    "delete_remote": "remote",
    "checkout": "checkout",
    "merge": "merge",
    "reset": "reset",
    "clone": "clone",
    "set_value": "config",
    "do_commit": "commit",
    "create_commit": "commit",
    "create_branch": "branch",
    "create_reference": "write",
    "create_note": "notes",
    "stash": "stash",
}
_DULWICH_OPS = {
    "clone": "clone",
    "init": "init",
    "commit": "commit",
    "push": "push",
    "add": "add",
    "pull": "pull",
    "fetch": "fetch",
    "rm": "rm",
    "remove": "rm",
    "tag_create": "tag",
    "branch_create": "branch",
    "branch_delete": "branch",
    "checkout_branch": "checkout",
    "checkout": "checkout",
    "reset": "reset",
    "remote_add": "remote",
    "update_server_info": "write",
    "stash_push": "stash",
}


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 0)


def _to_str(v: object) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int | float):
        return str(v)
    return UNKNOWN


def _is_known(v: object) -> bool:
    return not isinstance(v, Unknown | Ref)


def _json_text(v: object) -> str:
    """JSON serialisation of a (partly) constant value; unknown leaves become UNKNOWN strings."""

    def clean(x: object, depth: int = 0) -> object:
        if depth > 20:
            return UNKNOWN
        if isinstance(x, dict):
            return {_to_str(k): clean(val, depth + 1) for k, val in x.items()}
        if isinstance(x, tuple | list):
            return [clean(i, depth + 1) for i in x]
        if isinstance(x, str | int | float | bool) or x is None:
            return x
        return UNKNOWN

    return json.dumps(clean(v), ensure_ascii=False)


@dataclass
class _State:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seen: set = field(default_factory=set)
    steps: int = 0
    exec_nesting: int = 0
    line_offset: int = 0
    argv: tuple[str, ...] | None = None  # sys.argv when the command line gives it


class _Budget(Exception):
    pass


def _record(st: _State, f: Finding) -> None:
    """Keep a finding once; one token finding per variable and line; at most MAX_FINDINGS."""
    key = ("token", f.var, f.line) if f.kind == "token" else f
    if key in st.seen:
        return
    if len(st.findings) >= MAX_FINDINGS:
        msg = f"python: more than {MAX_FINDINGS} findings; the rest are not reported"
        if msg not in st.notes:
            st.notes.append(msg)
        return
    st.seen.add(key)
    st.findings.append(f)


class _Analyzer:
    def __init__(self, state: _State, environ: bool = True) -> None:
        self.st = state
        # False when the source cannot name the environment (``_ENVIRON_REACH``): every
        # is_environ test would answer False without evaluating anything, so none is made.
        self.environ = environ
        self.deferred: list[tuple[ast.AST, dict]] = []
        self.cwd: str | None = None  # after os.chdir(...)

    # ------------------------------------------------------------------ reporting

    def add(self, node: ast.AST, **kw: object) -> None:
        kw.setdefault("line", _line(node) + self.st.line_offset)
        if kw.get("kind") in {"argv", "shell", "gitlib"} and kw.get("cwd") is None and self.cwd is not None:
            kw["cwd"] = self.cwd
        _record(self.st, Finding(**kw))  # type: ignore[arg-type]

    def note(self, node: ast.AST, text: str) -> None:
        msg = f"python: {text} at line {_line(node) + self.st.line_offset}"
        if msg not in self.st.notes:
            self.st.notes.append(msg)

    # ------------------------------------------------------------------ statements

    def module(self, tree: ast.Module) -> None:
        env: dict = {}
        self.block(tree.body, env)
        while self.deferred:
            fn, outer = self.deferred.pop(0)
            local = dict(outer)
            args = fn.args  # type: ignore[attr-defined]
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None:
                    local[a.arg] = UNK
            saved = self.cwd
            self.block(fn.body, local)  # type: ignore[attr-defined]
            self.cwd = saved

    def block(self, stmts: list[ast.stmt], env: dict) -> None:
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s: ast.stmt, env: dict) -> None:
        self.st.steps += 1
        if self.st.steps > MAX_STEPS:
            raise _Budget
        if isinstance(s, ast.Import):
            for a in s.names:
                if a.asname:
                    env[a.asname] = Ref(a.name)
                else:
                    top = a.name.split(".")[0]
                    env[top] = Ref(top)
        elif isinstance(s, ast.ImportFrom):
            mod = s.module or ""
            for a in s.names:
                if a.name == "*":
                    for n in _STAR_EXPORTS.get(mod, ()):
                        env[n] = Ref(f"{mod}.{n}")
                else:
                    env[a.asname or a.name] = Ref(f"{mod}.{a.name}" if mod else a.name)
        elif isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in s.decorator_list:
                self.scan(d, env)
            for d in [*s.args.defaults, *[k for k in s.args.kw_defaults if k is not None]]:
                self.scan(d, env)
            env[s.name] = UNK
            self.deferred.append((s, env))
        elif isinstance(s, ast.ClassDef):
            for d in [*s.decorator_list, *s.bases]:
                self.scan(d, env)
            self.block(s.body, dict(env))
            env[s.name] = UNK
        elif isinstance(s, ast.Assign):
            self.scan(s.value, env)
            val = self.ev(s.value, env)
            for t in s.targets:
                self.bind(t, val, env)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.scan(s.value, env)
                self.bind(s.target, self.ev(s.value, env), env)
        elif isinstance(s, ast.AugAssign):
            self.scan(s.value, env)
            cur = self.ev(s.target, env)
            add = self.ev(s.value, env)
            if isinstance(s.op, ast.Add) and isinstance(cur, str) and isinstance(add, str):
                self.bind(s.target, (cur + add)[:MAX_VALUE], env)
            elif isinstance(s.op, ast.Add) and isinstance(cur, tuple) and isinstance(add, tuple):
                self.bind(s.target, cur + add, env)
            else:
                self.bind(s.target, UNK, env)
        elif isinstance(s, ast.For | ast.AsyncFor):
            self.scan(s.iter, env)
            self.check_env_iteration(s.iter, env)
            items = self.ev(s.iter, env)
            if isinstance(items, tuple) and 0 < len(items) <= MAX_LOOP_ITEMS:
                for item in items:
                    self.bind(s.target, item, env)
                    self.block(s.body, env)
            else:
                self.bind(s.target, UNK, env)
                self.block(s.body, env)
            self.block(s.orelse, env)
        elif isinstance(s, ast.With | ast.AsyncWith):
            for item in s.items:
                self.scan(item.context_expr, env)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, self.ev(item.context_expr, env), env)
            self.block(s.body, env)
        elif isinstance(s, ast.If | ast.While):
            self.scan(s.test, env)
            self.block(s.body, env)
            self.block(s.orelse, env)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            self.block(s.body, env)  # type: ignore[attr-defined]
            for h in s.handlers:  # type: ignore[attr-defined]
                if h.name:
                    env[h.name] = UNK
                self.block(h.body, env)
            self.block(s.orelse, env)  # type: ignore[attr-defined]
            self.block(s.finalbody, env)  # type: ignore[attr-defined]
        elif isinstance(s, ast.Match):
            self.scan(s.subject, env)
            for case in s.cases:
                self.block(case.body, env)
        else:
            for child in _child_nodes(s):
                if isinstance(child, ast.expr):
                    self.scan(child, env)

    def bind(self, target: ast.expr, val: object, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = val
        elif isinstance(target, ast.Attribute):
            key = _dotted(target)
            if key:
                env[key] = val
        elif isinstance(target, ast.Tuple | ast.List):
            elts = target.elts
            if isinstance(val, tuple) and len(val) == len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                for e, v in zip(elts, val, strict=True):
                    self.bind(e, v, env)
            else:
                for e in elts:
                    self.bind(e.value if isinstance(e, ast.Starred) else e, UNK, env)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, UNK, env)

    # ------------------------------------------------------------------ expressions

    def scan(self, expr: ast.expr, env: dict) -> None:
        """Report every call, token read and environment dump inside an expression."""
        st = self.st
        stack: list[ast.AST] = [expr]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            st.steps += 1
            if st.steps > MAX_STEPS:
                raise _Budget
            kind = type(node)
            if kind is ast.Name or kind is ast.Constant:
                # Leaves, a third of what is visited: a Constant has no child nodes and a Name
                # only its context (Load/Store), which would be popped next and only counted.
                if kind is ast.Name:
                    st.steps += 1
                    if st.steps > MAX_STEPS:
                        raise _Budget
                continue
            fields = _REVERSED_FIELDS.get(kind)
            if fields is None:
                fields = _REVERSED_FIELDS[kind] = tuple(reversed(kind._fields))
            if not fields:
                continue  # a context or an operator (Load, Add …): counted, nothing in it
            if isinstance(node, ast.Call):
                self.call(node, env)
            elif isinstance(node, ast.Subscript):
                self.check_env_subscript(node, env)
            elif isinstance(node, ast.Compare):
                self.check_env_membership(node, env)
            elif isinstance(node, ast.comprehension):
                self.check_env_iteration(node.iter, env)
            # The child nodes go on the stack last first, so they are visited in the order
            # ``ast.iter_child_nodes`` gives them, without building their list.
            for name in fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    push(value)
                elif isinstance(value, list):
                    for item in reversed(value):
                        if isinstance(item, ast.AST):
                            push(item)

    def ref(self, node: ast.expr, env: dict, depth: int = 0) -> Ref | None:
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Name):
            v = env.get(node.id)
            return v if isinstance(v, Ref) else None
        if isinstance(node, ast.Attribute):
            key = _dotted(node)
            if key and key in env:
                v = env[key]
                return v if isinstance(v, Ref) else None
            base = self.ref(node.value, env, depth + 1)
            if base is None:
                return None
            return Ref(f"{base.qual}.{node.attr}", base.path, base.data)
        if isinstance(node, ast.Call):
            base = self.ref(node.func, env, depth + 1)
            if base is None:
                if isinstance(node.func, ast.Name) and node.func.id == "__import__" and node.args:
                    mod = self.ev(node.args[0], env)
                    return Ref(mod) if isinstance(mod, str) and UNKNOWN not in mod else None
                if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
                    obj = self.ref(node.args[0], env, depth + 1)  # getattr(os, 'sys' + 'tem')
                    name = self.ev(node.args[1], env)
                    if obj is not None and isinstance(name, str) and name.isidentifier():
                        return Ref(f"{obj.qual}.{name}", obj.path, obj.data)
                return None
            if base.qual == "importlib.import_module" and node.args:
                mod = self.ev(node.args[0], env)
                return Ref(mod) if isinstance(mod, str) and UNKNOWN not in mod else None
            return self.call_result(base, node, env)
        if isinstance(node, ast.Subscript):
            base = self.ref(node.value, env, depth + 1)
            if base is None:
                return None
            return Ref(f"{base.qual}[]", base.path, base.data)
        if isinstance(node, ast.Await):
            return self.ref(node.value, env, depth + 1)
        return None

    def call_result(self, base: Ref, call: ast.Call, env: dict) -> Ref:
        q = base.qual
        path: object = base.path
        data: tuple = base.data
        if q in {"git.Repo", "git.repo.Repo", "git.Repo.init", "git.Git", "git.cmd.Git", "dulwich.repo.Repo",
                 "dulwich.repo.Repo.init", "pygit2.Repository", "pygit2.init_repository"}:
            path = self.arg(call, 0, ("path", "working_dir", "root"), env)
        elif q in {"git.Repo.clone_from", "pygit2.clone_repository"}:
            path = self.arg(call, 1, ("to_path", "path"), env)
        elif q in {"urllib.request.Request", "urllib2.Request"}:
            url = self.arg(call, 0, ("url",), env)
            body = self.arg(call, 1, ("data",), env)
            method = self.arg(call, 5, ("method",), env)
            has_body = _has_arg(call, 1, "data") and body is not None
            m = method.upper() if isinstance(method, str) else ("POST" if has_body else "GET")
            data = (m, _to_str(url) if url is not UNK else UNKNOWN, _body_text(body) if has_body else None)
        elif q in {"http.client.HTTPSConnection", "http.client.HTTPConnection"}:
            host = self.arg(call, 0, ("host",), env)
            scheme = "https" if q.endswith("HTTPSConnection") else "http"
            path = f"{scheme}://{_to_str(host) if host is not UNK else UNKNOWN}"
        return Ref(f"{q}()", path, data)

    def arg(self, call: ast.Call, index: int | None, names: tuple[str, ...], env: dict) -> object:
        for kw in call.keywords:
            if kw.arg in names:
                return self.ev(kw.value, env)
        if index is not None and index < len(call.args):
            a = call.args[index]
            if any(isinstance(x, ast.Starred) for x in call.args[: index + 1]):
                return UNK
            return self.ev(a, env)
        return None

    def ev(self, node: ast.expr, env: dict, depth: int = 0) -> object:
        """The constant value of an expression, UNK when not constant."""
        self.st.steps += 1
        if self.st.steps > MAX_STEPS:
            raise _Budget
        if depth > MAX_DEPTH:
            return UNK
        d = depth + 1
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bytes):
                return v.decode("latin-1")
            return v if isinstance(v, str | int | float | bool) or v is None else UNK
        if isinstance(node, ast.Name):
            v = env.get(node.id, UNK)
            return self.st.argv if isinstance(v, Ref) and v.qual == "sys.argv" and self.st.argv is not None else v
        if isinstance(node, ast.Attribute):
            key = _dotted(node)
            if key and key in env:
                return env[key]
            r = self.ref(node, env, d)
            if r is not None and r.qual == "sys.argv" and self.st.argv is not None:
                return self.st.argv
            return r if r is not None else UNK
        if isinstance(node, ast.JoinedStr):
            out = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    out.append(str(part.value))
                elif isinstance(part, ast.FormattedValue):
                    v = self.ev(part.value, env, d)
                    if part.format_spec is not None or part.conversion not in (-1, 115):
                        out.append(UNKNOWN if not isinstance(v, str | int) else _fmt(v, part, self, env, d))
                    else:
                        out.append(_to_str(v))
            return "".join(out)[:MAX_VALUE]
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items: list[object] = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner = self.ev(e.value, env, d)
                    if not isinstance(inner, tuple):
                        items.append(UNKNOWN)  # an unknown number of unknown items
                        continue
                    items.extend(inner)
                else:
                    items.append(self.ev(e, env, d))
            return tuple(items)
        if isinstance(node, ast.Dict):
            out_d: dict = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    inner = self.ev(v, env, d)
                    if isinstance(inner, dict):
                        out_d.update(inner)
                    continue
                kv = self.ev(k, env, d)
                out_d[_to_str(kv) if _is_known(kv) else UNKNOWN] = self.ev(v, env, d)
            return out_d
        if isinstance(node, ast.BinOp):
            left = self.ev(node.left, env, d)
            right = self.ev(node.right, env, d)
            if isinstance(node.op, ast.Add):
                if isinstance(left, str) or isinstance(right, str):
                    if isinstance(left, tuple) or isinstance(right, tuple):
                        return UNK
                    ls = left if isinstance(left, str) else UNKNOWN
                    rs = right if isinstance(right, str) else UNKNOWN
                    if ls == UNKNOWN and rs == UNKNOWN:
                        return UNK
                    return (ls + rs)[:MAX_VALUE]
                if isinstance(left, tuple) and isinstance(right, tuple):
                    return left + right
                if isinstance(left, tuple) and right is UNK:
                    return (*left, UNKNOWN)
                if isinstance(left, int | float) and isinstance(right, int | float):
                    return left + right
                return UNK
            if isinstance(node.op, ast.Mod) and isinstance(left, str):
                return _percent(left, right)
            if isinstance(node.op, ast.Mult) and isinstance(left, tuple | str) and isinstance(right, int):
                if len(left) * max(right, 0) > MAX_VALUE:
                    return UNK
                return left * right
            return UNK
        if isinstance(node, ast.Call):
            return self.ev_call(node, env, d)
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value, env, d)
            idx = self.ev(node.slice, env, d) if not isinstance(node.slice, ast.Slice) else UNK
            if isinstance(base, tuple | str) and isinstance(idx, int) and -len(base) <= idx < len(base):
                return base[idx]
            if isinstance(base, tuple | str) and isinstance(node.slice, ast.Slice):
                lo = self.ev(node.slice.lower, env, d) if node.slice.lower else None
                hi = self.ev(node.slice.upper, env, d) if node.slice.upper else None
                if (lo is None or isinstance(lo, int)) and (hi is None or isinstance(hi, int)) and not node.slice.step:
                    return base[lo:hi]  # type: ignore[misc]
            if isinstance(base, dict) and isinstance(idx, str):
                return base.get(idx, UNK)
            r = self.ref(node, env, d)
            return r if r is not None else UNK
        if isinstance(node, ast.IfExp):
            a = self.ev(node.body, env, d)
            b = self.ev(node.orelse, env, d)
            return a if a == b else UNK
        if isinstance(node, ast.NamedExpr):
            v = self.ev(node.value, env, d)
            env[node.target.id] = v
            return v
        if isinstance(node, ast.Await):
            return self.ev(node.value, env, d)
        return UNK

    def ev_call(self, node: ast.Call, env: dict, d: int) -> object:
        f = node.func
        if isinstance(f, ast.Attribute):
            recv = self.ev(f.value, env, d)
            args = [self.ev(a, env, d) for a in node.args if not isinstance(a, ast.Starred)]
            if any(isinstance(a, ast.Starred) for a in node.args):
                return UNK
            if isinstance(recv, str):
                m = f.attr
                if m == "join" and len(args) == 1:
                    seq = args[0]
                    if isinstance(seq, tuple):
                        return recv.join(_to_str(x) for x in seq)[:MAX_VALUE]
                    return UNK
                if m == "format":
                    return _format(recv, args, {kw.arg: self.ev(kw.value, env, d) for kw in node.keywords if kw.arg})
                if m in {"strip", "lstrip", "rstrip", "lower", "upper"} and not args:
                    return getattr(recv, m)()
                if m == "split":
                    if not args:
                        return tuple(recv.split())
                    if isinstance(args[0], str) and args[0]:
                        return tuple(recv.split(args[0]))
                    return UNK
                if m == "replace" and len(args) == 2 and all(isinstance(a, str) for a in args):
                    return recv.replace(args[0], args[1])[:MAX_VALUE]  # type: ignore[arg-type]
                if m in {"encode", "decode"}:
                    return recv
                return UNK
            if isinstance(recv, tuple) and f.attr == "copy":
                return recv
        r = self.ref(f, env, d)
        if r is None:
            if isinstance(f, ast.Name) and f.id in {"list", "tuple"} and len(node.args) == 1:
                v = self.ev(node.args[0], env, d)
                return v if isinstance(v, tuple) else UNK
            if isinstance(f, ast.Name) and f.id == "compile" and node.args and "compile" not in env:
                return self.ev(node.args[0], env, d)  # exec(compile(src, …)) runs src
            if isinstance(f, ast.Name) and f.id == "str" and len(node.args) == 1:
                v = self.ev(node.args[0], env, d)
                return _to_str(v) if _is_known(v) and not isinstance(v, tuple | dict) else UNK
            return self.ref(node, env, d) or UNK
        q = r.qual
        if q == "shlex.split" and node.args:
            v = self.ev(node.args[0], env, d)
            return argv_of_string(v) if isinstance(v, str) else UNK
        if q in {"shlex.join"} and node.args:
            v = self.ev(node.args[0], env, d)
            return join_shell(tuple(_to_str(x) for x in v)) if isinstance(v, tuple) else UNK
        if q == "shlex.quote" and node.args:
            v = self.ev(node.args[0], env, d)
            return shlex.quote(v) if isinstance(v, str) and UNKNOWN not in v else (v if isinstance(v, str) else UNK)
        if q in {"os.path.join", "posixpath.join"} and node.args:
            parts = [self.ev(a, env, d) for a in node.args]
            return posixpath.join(*[p if isinstance(p, str) else UNKNOWN for p in parts])
        if q in {"os.path.expanduser", "os.path.abspath", "os.path.realpath", "os.path.normpath"} and node.args:
            v = self.ev(node.args[0], env, d)
            if isinstance(v, str) and (q.endswith("normpath") or not v.startswith("~")):
                return posixpath.normpath(v) if q.endswith("normpath") else v
            return UNK
        if q in {"json.dumps"} and node.args:
            return _json_text(self.ev(node.args[0], env, d))
        if q in {"os.fspath", "str"} and node.args:
            v = self.ev(node.args[0], env, d)
            return v if isinstance(v, str) else UNK
        if q in {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"} and node.args:
            parts = [self.ev(a, env, d) for a in node.args]
            return posixpath.join(*[p if isinstance(p, str) else UNKNOWN for p in parts])
        if q in {"os.getcwd", "tempfile.mkdtemp", "tempfile.gettempdir"}:
            return UNK
        if q in _DECODERS and node.args:
            return _decode(q, self.ev(node.args[0], env, d))
        if q == "shutil.which" and node.args:
            v = self.ev(node.args[0], env, d)
            return v if isinstance(v, str) and v else UNK  # the program's name: PATH is searched later
        return self.ref(node, env, d) or UNK

    # ------------------------------------------------------------------ calls

    def call(self, node: ast.Call, env: dict) -> None:
        r = self.ref(node.func, env)
        fname = node.func.id if isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node.func, ast.Attribute) else "")
        if (r is not None and r.qual in _DUMPERS) or (r is None and fname in _DUMPERS) or fname in _DUMP_METHODS:
            self.check_env_dump(node, env)
        if r is None:
            if fname in {"exec", "eval"} and isinstance(node.func, ast.Name) and fname not in env:
                self.nested_exec(node, env)
            return
        q = r.qual
        head, _, last = q.rpartition(".")
        if head == "subprocess" and last in _SUBPROCESS_POPEN:
            self.popen(node, env, q)
        elif q in _SHELL_CALLS:
            self.shell_call(node, env, q)
        elif head == "os" and last in _EXEC_V | _SPAWN_V | {"posix_spawn", "posix_spawnp"}:
            skip = 1 if last.startswith("spawn") else 0
            path = self.arg(node, skip, ("path", "file"), env)
            args = self.arg(node, skip + 1, ("argv", "args"), env)
            self.exec_form(node, q, path, args)
        elif head == "os" and last in _EXEC_L | _SPAWN_L:
            skip = 1 if last.startswith("spawn") else 0
            vals = [self.ev(a, env) for a in node.args[skip:]]
            if last.endswith("e") and len(vals) > 1:
                vals = vals[:-1]
            if not vals:
                return
            self.exec_form(node, q, vals[0], tuple(vals[1:]))
        elif q in {"pty.spawn"}:
            v = self.arg(node, 0, ("argv",), env)
            argv = (v,) if isinstance(v, str) else v
            self.argv_finding(node, q, argv, None)
        elif q in {"asyncio.create_subprocess_exec", "asyncio.subprocess.create_subprocess_exec"}:
            if any(isinstance(a, ast.Starred) for a in node.args):
                vals: list[object] = []
                for a in node.args:
                    inner = self.ev(a.value if isinstance(a, ast.Starred) else a, env)
                    if isinstance(a, ast.Starred):
                        if not isinstance(inner, tuple):
                            vals.append(UNKNOWN)
                            continue
                        vals.extend(inner)
                    else:
                        vals.append(inner)
            else:
                vals = [self.ev(a, env) for a in node.args]
            self.argv_finding(node, q, tuple(vals), self.cwd_kw(node, env))
        elif q in {"os.chdir"}:
            v = self.arg(node, 0, ("path",), env)
            if isinstance(v, str):
                self.cwd = posixpath.join(self.cwd, v) if self.cwd else v
            else:
                self.cwd = UNKNOWN
        elif q in {"builtins.exec", "builtins.eval"}:
            self.nested_exec(node, env)
        elif q in {"os.getenv", "os.environ.get", "os.environb.get", "os.environ.pop", "os.environ.setdefault"}:
            if q.endswith((".pop", ".setdefault")):
                return
            v = self.arg(node, 0, ("key",), env)
            if isinstance(v, str):  # every read: the config's token_vars decide which is a token
                self.add(node, kind="token", var=v, detail=q)
            elif not isinstance(v, str):
                self.note(node, "environment variable name not constant")
        elif q == "netrc.netrc":  # reads ~/.netrc (or the file named), the credential store
            v = self.arg(node, 0, ("file",), env)
            self.add(node, kind="argv", argv=("cat", v if isinstance(v, str) else "~/.netrc"), detail="netrc.netrc")
        elif q in {"os.environ.items", "os.environ.keys", "os.environ.values", "os.environ.copy"}:
            pass  # whole-environment iteration is reported by check_env_iteration
        elif q.startswith(("git.", "dulwich.", "pygit2.")):
            self.gitlib(node, env, r)
        else:
            self.http(node, env, r)

    def cwd_kw(self, node: ast.Call, env: dict) -> str | None:
        for kw in node.keywords:
            if kw.arg == "cwd":
                v = self.ev(kw.value, env)
                if v is None:
                    return None
                return v if isinstance(v, str) else UNKNOWN
        return None

    def popen(self, node: ast.Call, env: dict, q: str) -> None:
        args = self.arg(node, 0, ("args",), env)
        shell: object = False
        for kw in node.keywords:
            if kw.arg == "shell":
                shell = self.ev(kw.value, env)
        cwd = self.cwd_kw(node, env)
        if args is None:
            return
        if (shell is UNK and isinstance(args, str)) or (_is_known(shell) and shell not in (False, None, 0)):
            if isinstance(args, tuple):
                args = args[0] if args else UNK
            if shell is UNK and isinstance(args, str):
                self.note(node, f"{q} shell= not constant")
            self.shell_finding(node, q, args, cwd)
            return
        if isinstance(args, str):
            args = argv_of_string(args)
        self.argv_finding(node, q, args, cwd)

    def shell_call(self, node: ast.Call, env: dict, q: str) -> None:
        v = self.arg(node, 0, ("cmd", "command", "args"), env)
        self.shell_finding(node, q, v, None)

    def shell_finding(self, node: ast.Call, q: str, v: object, cwd: str | None) -> None:
        if not isinstance(v, str) or v == UNKNOWN:
            self.note(node, f"{q} argument not constant")
            return
        self.add(node, kind="shell", shell=v, cwd=cwd, detail=q)

    def argv_finding(self, node: ast.Call, q: str, v: object, cwd: str | None) -> None:
        if not isinstance(v, tuple) or not v:
            self.note(node, f"{q} argument not constant")
            return
        argv = tuple(_to_str(x) for x in v)
        if argv[0] == UNKNOWN:
            self.note(node, f"{q} program not constant")
        self.add(node, kind="argv", argv=argv, cwd=cwd, detail=q)

    def exec_form(self, node: ast.Call, q: str, path: object, args: object) -> None:
        if not isinstance(args, tuple):
            self.note(node, f"{q} argument not constant")
            return
        prog = _to_str(path) if path is not None else (_to_str(args[0]) if args else UNKNOWN)
        self.argv_finding(node, q, (prog, *args[1:]), None)

    def nested_exec(self, node: ast.Call, env: dict) -> None:
        if not node.args:
            return
        v = self.ev(node.args[0], env)
        if not isinstance(v, str) or UNKNOWN in v:
            self.note(node, "exec() of a non-constant string")
            return
        if self.st.exec_nesting >= MAX_EXEC_NESTING:
            self.note(node, "exec() nested too deeply")
            return
        self.st.exec_nesting += 1
        saved = self.st.line_offset
        self.st.line_offset = saved + _line(node) - 1
        try:
            _analyze(v, self.st)
        finally:
            self.st.line_offset = saved
            self.st.exec_nesting -= 1

    # ------------------------------------------------------------------ git libraries

    def gitlib(self, node: ast.Call, env: dict, r: Ref) -> None:
        q = r.qual
        last = q.rsplit(".", 1)[-1]
        lib = q.split(".", 1)[0]
        repo_path = _to_str(r.path) if r.path is not UNK else None
        if lib == "git":
            if q in {"git.Repo.init", "git.repo.Repo.init"}:
                p = self.arg(node, 0, ("path",), env)
                self.gitlib_add(node, "init", "GitPython Repo.init", ("git", "init", _path_arg(p)), None)
                return
            if q in {"git.Repo.clone_from", "git.repo.Repo.clone_from"}:
                url = self.arg(node, 0, ("url",), env)
                p = self.arg(node, 1, ("to_path",), env)
                self.gitlib_add(node, "clone", "GitPython Repo.clone_from",
                                ("git", "clone", _path_arg(url), _path_arg(p)), None)
                return
            m = _GITPYTHON_CALL.search(q)
            if m and "()" in q:
                cmd = m.group(1)
                if cmd in {"execute"}:
                    v = self.arg(node, 0, ("command",), env)
                    argv = v if isinstance(v, tuple) else (argv_of_string(v) if isinstance(v, str) else None)
                    self.argv_finding(node, "GitPython Git.execute", argv, repo_path)
                    return
                if cmd in {"clear_cache", "update_environment", "custom_environment", "version_info"}:
                    return
                argv = ("git", cmd.replace("_", "-"), *self.gitpython_args(node, env))
                self.add(node, kind="argv", argv=argv, cwd=repo_path, detail=f"GitPython git.{cmd}")
                return
            if last in _GITPYTHON_OPS and "()" in q:
                op = _GITPYTHON_OPS[last]
                if op == "clone":
                    p = self.arg(node, 0, ("path",), env)
                    self.gitlib_add(node, "clone", "GitPython Repo.clone",
                                    ("git", "clone", repo_path or UNKNOWN, _path_arg(p)), None)
                    return
                self.gitlib_add(node, op, f"GitPython {last}", ("git", op), repo_path)
            return
        if lib == "dulwich":
            if q.startswith("dulwich.porcelain.") and last in _DULWICH_OPS:
                op = _DULWICH_OPS[last]
                if op == "clone":
                    src = self.arg(node, 0, ("source",), env)
                    dst = self.arg(node, 1, ("target",), env)
                    self.gitlib_add(node, op, "dulwich porcelain.clone",
                                    ("git", "clone", _path_arg(src), _path_arg(dst)), None)
                    return
                p = self.arg(node, 0, ("repo", "path"), env)
                cwd = p if isinstance(p, str) else (_to_str(p.path) if isinstance(p, Ref) and p.path is not UNK else None)
                argv = ("git", "init", _path_arg(p)) if op == "init" else ("git", op)
                self.gitlib_add(node, op, f"dulwich porcelain.{last}", argv, None if op == "init" else cwd)
            elif q in {"dulwich.repo.Repo.init", "dulwich.repo.Repo.init_bare"}:
                p = self.arg(node, 0, ("path",), env)
                self.gitlib_add(node, "init", f"dulwich Repo.{last}", ("git", "init", _path_arg(p)), None)
            elif "()" in q and last in _GITPYTHON_OPS:
                op = _GITPYTHON_OPS[last]
                self.gitlib_add(node, op, f"dulwich {last}", ("git", op), repo_path)
            return
        if lib == "pygit2":
            if q == "pygit2.init_repository":
                p = self.arg(node, 0, ("path",), env)
                self.gitlib_add(node, "init", "pygit2 init_repository", ("git", "init", _path_arg(p)), None)
            elif q == "pygit2.clone_repository":
                url = self.arg(node, 0, ("url",), env)
                p = self.arg(node, 1, ("path",), env)
                self.gitlib_add(node, "clone", "pygit2 clone_repository",
                                ("git", "clone", _path_arg(url), _path_arg(p)), None)
            elif "()" in q and last in _GITPYTHON_OPS:
                op = _GITPYTHON_OPS[last]
                self.gitlib_add(node, op, f"pygit2 {last}", ("git", op), repo_path)

    def gitlib_add(self, node: ast.Call, op: str, detail: str, argv: tuple[str, ...], cwd: str | None) -> None:
        self.add(node, kind="gitlib", op=op, detail=detail, argv=argv, cwd=cwd)

    def gitpython_args(self, node: ast.Call, env: dict) -> list[str]:
        out: list[str] = []
        for kw in node.keywords:
            if kw.arg is None:
                out.append(UNKNOWN)
                continue
            name = kw.arg.replace("_", "-")
            v = self.ev(kw.value, env)
            if v is False or v is None:
                continue
            flag = f"-{name}" if len(name) == 1 else f"--{name}"
            if v is True:
                out.append(flag)
            elif len(name) == 1:
                out.extend([flag, _to_str(v)])
            else:
                out.append(f"{flag}={_to_str(v)}")
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.ev(a.value, env)
                out.extend(_to_str(x) for x in v) if isinstance(v, tuple) else out.append(UNKNOWN)
            else:
                v = self.ev(a, env)
                out.extend(_to_str(x) for x in v) if isinstance(v, tuple) else out.append(_to_str(v))
        return out

    # ------------------------------------------------------------------ HTTP

    def http(self, node: ast.Call, env: dict, r: Ref) -> None:
        q = r.qual
        m = _HTTP_CLIENT_RE.match(q)
        if m:
            verb = m.group(2)
            if verb in {"request", "stream"}:
                method = self.arg(node, 0, ("method",), env)
                url = self.arg(node, 1, ("url",), env)
            else:
                method = verb
                url = self.arg(node, 0, ("url",), env)
            body = None
            for name in ("json", "data", "content"):
                for kw in node.keywords:
                    if kw.arg == name:
                        body = _body_text(self.ev(kw.value, env))
            self.add(node, kind="http", method=method.upper() if isinstance(method, str) else UNKNOWN,
                     url=_url(url), body=body, detail=q)
            return
        if q in {"urllib.request.urlopen", "urllib2.urlopen"} or _OPENER_OPEN.match(q):
            target = node.args[0] if node.args else None
            tr = self.ref(target, env) if target is not None else None
            if tr is not None and tr.data:
                method, url, body = tr.data
                self.add(node, kind="http", method=method, url=url, body=body, detail=q)
                return
            url = self.ev(target, env) if target is not None else UNK
            has_body = _has_arg(node, 1, "data")
            body = self.arg(node, 1, ("data",), env) if has_body else None
            self.add(node, kind="http", method="POST" if has_body and body is not None else "GET",
                     url=_url(url), body=_body_text(body) if has_body else None, detail=q)
            return
        if _CONNECTION_REQUEST.match(q):
            method = self.arg(node, 0, ("method",), env)
            path = self.arg(node, 1, ("url",), env)
            body = self.arg(node, 2, ("body",), env)
            base = _to_str(r.path) if r.path is not UNK else UNKNOWN
            self.add(node, kind="http", method=method.upper() if isinstance(method, str) else UNKNOWN,
                     url=base + (_to_str(path) if path is not UNK else UNKNOWN),
                     body=_body_text(body) if body is not None else None, detail="http.client")

    # ------------------------------------------------------------------ token reads

    def is_environ(self, node: ast.expr, env: dict) -> bool:
        r = self.ref(node, env)
        return r is not None and r.qual in {"os.environ", "os.environb", "posix.environ"}

    def check_env_subscript(self, node: ast.Subscript, env: dict) -> None:
        if self.environ and isinstance(node.ctx, ast.Load) and self.is_environ(node.value, env):
            key = self.ev(node.slice, env)
            if isinstance(key, str):
                self.add(node, kind="token", var=key, detail="os.environ[]")
            elif not isinstance(key, str):
                self.note(node, "environment variable name not constant")

    def check_env_membership(self, node: ast.Compare, env: dict) -> None:
        if self.environ and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn) and self.is_environ(node.comparators[0], env):
            key = self.ev(node.left, env)
            if isinstance(key, str):
                self.add(node, kind="token", var=key, detail="in os.environ")

    def check_env_iteration(self, it: ast.expr, env: dict) -> None:
        if not self.environ:
            return
        target = it
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in {"items", "keys", "values"}:
            target = it.func.value
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in {"sorted", "list", "dict"} and it.args:
            self.check_env_iteration(it.args[0], env)
            return
        if self.is_environ(target, env):
            self.add(it, kind="token", var="*", detail="os.environ iterated")

    def check_env_dump(self, node: ast.Call, env: dict) -> None:
        if not self.environ:
            return
        for a in [*node.args, *[k.value for k in node.keywords]]:
            if self.bare_environ(a, env, 0):
                self.add(node, kind="token", var="*", detail="os.environ dumped")
                return

    def bare_environ(self, node: ast.AST, env: dict, depth: int) -> bool:
        """Whether the whole environment (not one variable of it) is used inside node."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Subscript) and self.is_environ(node.value, env):
            return self.bare_environ(node.slice, env, depth + 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SIZE_ONLY \
                and node.func.id not in env:
            return False  # len(os.environ): a count, none of the environment's text
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {
            "get", "copy", "pop", "setdefault"
        } and self.is_environ(node.func.value, env):
            return any(self.bare_environ(a, env, depth + 1) for a in node.args)
        if isinstance(node, ast.Attribute | ast.Name) and self.is_environ(node, env):
            return True
        return any(self.bare_environ(c, env, depth + 1) for c in _child_nodes(node))


# Builtins whose value says nothing of the text they are given: a count, a truth value, a type.
_SIZE_ONLY = frozenset({"len", "bool", "type", "id", "isinstance"})

_DECODERS = {"base64.b64decode", "base64.standard_b64decode", "base64.urlsafe_b64decode", "base64.b32decode",
             "base64.b16decode", "base64.a85decode", "base64.b85decode", "binascii.a2b_base64", "binascii.unhexlify",
             "bytes.fromhex", "codecs.decode", "zlib.decompress"}


def _decode(q: str, v: object) -> object:
    """A decoded constant (``base64.b64decode('…')``) as latin-1 text, UNK when it is not one."""
    import base64
    import binascii
    import codecs

    if not isinstance(v, str) or UNKNOWN in v:
        return UNK
    try:
        raw = v.encode("latin-1")
        if q == "codecs.decode":
            return codecs.decode(v, "rot13")
        fn = {"base64.b64decode": base64.b64decode, "base64.standard_b64decode": base64.standard_b64decode,
              "base64.urlsafe_b64decode": base64.urlsafe_b64decode, "base64.b32decode": base64.b32decode,
              "base64.b16decode": base64.b16decode, "base64.a85decode": base64.a85decode,
              "base64.b85decode": base64.b85decode, "binascii.a2b_base64": binascii.a2b_base64,
              "binascii.unhexlify": binascii.unhexlify, "bytes.fromhex": lambda b: bytes.fromhex(b.decode())}.get(q)
        if fn is None:
            return UNK
        out = fn(raw)
    except (ValueError, TypeError, LookupError, binascii.Error):
        return UNK
    return out.decode("utf-8", "replace")[:MAX_VALUE] if isinstance(out, bytes) else UNK


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _has_arg(call: ast.Call, index: int, name: str) -> bool:
    return len(call.args) > index or any(k.arg == name for k in call.keywords)


def _path_arg(v: object) -> str:
    if isinstance(v, Ref):
        return _to_str(v.path) if v.path is not UNK else UNKNOWN
    return _to_str(v) if v is not UNK and v is not None else UNKNOWN


def _url(v: object) -> str:
    if isinstance(v, str):
        return v
    return UNKNOWN


def _body_text(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, dict | tuple):
        return _json_text(v)
    return UNKNOWN


def _fmt(v: object, part: ast.FormattedValue, an: _Analyzer, env: dict, d: int) -> str:
    spec = an.ev(part.format_spec, env, d) if part.format_spec is not None else ""
    if not isinstance(spec, str) or UNKNOWN in spec:
        return UNKNOWN
    try:
        if part.conversion == 114:
            v = repr(v)
        elif part.conversion == 97:
            v = ascii(v)
        return format(v, spec)
    except (ValueError, TypeError):
        return UNKNOWN


def _percent(fmt: str, args: object) -> object:
    vals = args if isinstance(args, tuple) else (args,)
    if not all(isinstance(x, str | int | float) for x in vals):
        # keep the known text before the first conversion
        prefix = fmt.split("%", 1)[0]
        return prefix + UNKNOWN if prefix else UNK
    try:
        return (fmt % vals)[:MAX_VALUE]
    except (TypeError, ValueError, KeyError):
        return UNK


def _format(fmt: str, args: list[object], kwargs: dict) -> object:
    safe_args = [a if isinstance(a, str | int | float) else _Hole() for a in args]
    safe_kw = {k: (v if isinstance(v, str | int | float) else _Hole()) for k, v in kwargs.items()}
    try:
        return fmt.format(*safe_args, **safe_kw)[:MAX_VALUE]
    except (IndexError, KeyError, ValueError, AttributeError, TypeError):
        prefix = fmt.split("{", 1)[0]
        return prefix + UNKNOWN if prefix else UNK


class _Hole:
    def __format__(self, spec: str) -> str:
        return UNKNOWN

    def __str__(self) -> str:
        return UNKNOWN


# ---------------------------------------------------------------------- fallback scan

_CALLISH = {
    "system",
    "popen",
    "popen2",
    "popen3",
    "popen4",
    "getoutput",
    "getstatusoutput",
    "call",
    "check_call",
    "check_output",
    "run",
    "Popen",
    "spawn",
    "execv",
    "execvp",
    "execl",
    "execlp",
    "create_subprocess_shell",
    "create_subprocess_exec",
}


def _fallback_scan(source: str, st: _State, reason: str) -> None:
    st.notes.append(f"python: source does not parse ({reason}); scanned string literals only")
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type not in {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}]
    except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
        toks = None
    if toks is None:
        _regex_scan(source, st)
        return
    for i, t in enumerate(toks):
        if t.type != tokenize.STRING:
            continue
        # call-ish context: NAME ( "…"   or   NAME ( [ "…", "…" ]
        j = i - 1
        in_list = False
        if j >= 0 and toks[j].string in {"[", "("} and j >= 1 and toks[j - 1].string == "(":
            in_list = True
            j -= 1
        if not (j >= 1 and toks[j].string == "(" and toks[j - 1].type == tokenize.NAME
                and toks[j - 1].string in _CALLISH):
            continue
        if in_list:
            items = []
            k = i
            while k < len(toks) and toks[k].type == tokenize.STRING:
                v = _literal(toks[k].string)
                if v is None:
                    break
                items.append(v)
                k += 1
                if k < len(toks) and toks[k].string == ",":
                    k += 1
            text = join_shell(items) if items else ""
        else:
            text = _literal(t.string) or ""
        if text and looks_like_command(text):
            _record(st, Finding(kind="shell", shell=text, detail=f"{toks[j - 1].string} (string scan)",
                                line=t.start[0] + st.line_offset))


_STR_CALL_RE = re.compile(
    r"\b(" + "|".join(sorted(_CALLISH)) + r")\s*\(\s*(\[\s*)?(?P<q>'|\")(?P<body>(?:\\.|(?!(?P=q)).)*)(?P=q)"
)


def _regex_scan(source: str, st: _State) -> None:
    for m in _STR_CALL_RE.finditer(source):
        text = _literal(m.group("q") + m.group("body") + m.group("q")) or ""
        if text and looks_like_command(text):
            line = source.count("\n", 0, m.start()) + 1
            _record(st, Finding(kind="shell", shell=text, detail=f"{m.group(1)} (string scan)",
                                line=line + st.line_offset))


def _literal(text: str) -> str | None:
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        # Python 2 string prefixes such as ur"…"
        m = re.match(r"^[A-Za-z]*(['\"]{1,3})(.*)\1$", text, re.S)
        return m.group(2) if m else None
    if isinstance(v, bytes):
        return v.decode("latin-1")
    return v if isinstance(v, str) else None


# ---------------------------------------------------------------------- entry point


# The gates' patterns are lists of literals searched over every inline program: RE2 reads them in
# one pass of the text (Python's engine tries each alternative at each character, about ten times
# slower here). Its ``\b`` is ASCII's, which is Python's on the ASCII text they are used on.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.never_capture = True
# Every name through which the walk can report something: the modules and functions it follows to
# a launch, a git library call, an HTTP request or an environment read (``os.execv`` and its kin,
# ``posix_spawn``, ``os.environb``, ``urllib2``), and the builtins that run built code or compute
# a name (``exec``, ``__import__``, ``getattr``, ``import_module``). A Ref's name is
# spelled in the source as whole identifiers, from an import and the attributes after it, unless
# one of those builtins computes it, so a source that spells none of these can report nothing.
# ``test_inline_python_gate`` checks every dotted name the analysis compares with against it.
_SINKS = re2.compile(
    r"\b(?:pty|git|http|netrc|eval|commands|platform|builtins|posix|system|popen|getenv|subprocess|asyncio"
    r"|dulwich|pygit2|requests|httpx|aiohttp|__import__|getattr|import_module|environb?|urllib2?|posix_spawnp?"
    r"|(?:exec|spawn)(?:v|ve|vp|vpe|l|le|lp|lpe)?)\b", _RE2_OPTIONS)
# What the evaluator computes from the modules it does not report on (``os.path.join``,
# ``json.dumps``, ``shlex``, ``pathlib``, the decoders): a call to one of these evaluates its
# arguments twice, so k of them nested cost up to 2**k times the work. Every occurrence counts,
# nested or not, and only where the source names one of those modules (a Ref needs the name).
_DOUBLERS = re2.compile(
    r"join|expanduser|abspath|realpath|normpath|split|quote|dumps|fspath|Path|decode|unhexlify|fromhex"
    r"|decompress|a2b_base64|which", _RE2_OPTIONS)
_VALUE_MODULES = re2.compile(r"\b(?:os|posixpath|shlex|json|pathlib|base64|binascii|bytes|codecs|zlib|shutil)\b",
                             _RE2_OPTIONS)
# Whether a source can name the environment object (``os.environ``, or a name computed by
# a builtin), or an is_environ test can evaluate arguments (a computed name, or a constructor the
# analysis reads: ``git.Repo(path)``, ``urllib.request.Request``, ``http.client``): without any,
# none of the checks for environment reads, iterations and dumps can find anything, and they are
# left out.
_ENVIRON_REACH = re2.compile(
    r"\benviron|\b(?:getattr|__import__|import_module|git|dulwich|pygit2|urllib|urllib2|http)\b", _RE2_OPTIONS)
# A for statement starts a logical line, so it starts a line of the text; text with a carriage
# return (a line break to Python, not to ``^``) counts every ``for``. Either count bounds how deep
# for statements nest, and stands in for ``_for_depth`` on a tree too deep for it here.
_FOR_STATEMENT = re.compile(r"(?m)^[ \t\f]*(?:async[ \t]+)?for\b")
_FOR = re.compile(r"\bfor\b")


# Loop iterables the evaluator never makes a tuple of (a string, a dict, a comprehension, an
# operator it does not compute): a for statement over one walks its body once.
_NEVER_A_TUPLE = (ast.Constant, ast.JoinedStr, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                  ast.Lambda, ast.Compare, ast.BoolOp, ast.UnaryOp)


def _may_unroll(it: ast.expr, shlex_named: bool) -> bool:
    """Whether ``ev`` can make a tuple of a for statement's iterable, so the loop may be walked
    once per item. Of calls only these can give one: ``str.split`` and ``tuple.copy`` (a method
    of that name), ``list``, ``tuple`` and ``compile`` of a tuple, and ``shlex.split`` under any
    name where the source names shlex; ``range(…)``, ``enumerate(…)``, ``open(…)`` and
    ``ws.iter_rows()`` never do."""
    if isinstance(it, ast.Call):
        f = it.func
        if isinstance(f, ast.Attribute):
            return f.attr in ("split", "copy")
        if isinstance(f, ast.Name):
            return f.id in ("list", "tuple", "compile") or shlex_named
        return True
    return not isinstance(it, _NEVER_A_TUPLE)


def _for_depth(body: list[ast.stmt], shlex_named: bool = True) -> int:
    """How many ``for`` statements that may be unrolled (``_may_unroll``) enclose the most
    deeply looped statement of ``body``, through every statement that holds others (``def`` and
    ``class`` included: a function defined in a loop is walked once per pass of the loop)."""
    deepest = 0
    for s in body:
        inner = 0
        for name in ("body", "orelse", "finalbody"):
            b = getattr(s, name, None)
            if b and isinstance(b, list):
                inner = max(inner, _for_depth(b, shlex_named))
        for h in getattr(s, "handlers", ()):
            inner = max(inner, _for_depth(h.body, shlex_named))
        for c in getattr(s, "cases", ()):
            inner = max(inner, _for_depth(c.body, shlex_named))
        if isinstance(s, ast.For | ast.AsyncFor) and _may_unroll(s.iter, shlex_named):
            inner += 1
        deepest = max(deepest, inner)
    return deepest


def _spelled(source: str) -> str:
    """``source`` with its identifiers as Python reads them: folded to NFKC (``ｏｓ`` is ``os``).
    Code outside strings and comments is ASCII around its identifiers, so each stays a whole
    word; RE2's ``\\b`` takes a letter beyond ASCII for a boundary, which only finds more."""
    return source if source.isascii() else unicodedata.normalize("NFKC", source)


def _inert(source: str, tree: ast.Module) -> bool:
    """Whether the analysis of ``source`` (which parses into ``tree``) can report nothing at all,
    so the walk over its tree can be left out: it spells nothing in ``_SINKS`` (after folding,
    ``_spelled``), and the walk would stay within ``MAX_STEPS``. Each expression node is counted
    a few times per pass (under 4 per character of source); each of the k calls in
    ``_DOUBLERS`` can double that for what it holds; a statement is walked once per item of
    each ``for`` around it that may be unrolled (a loop over up to 8 known items is walked once
    per item), so 8**depth times. The bound here is four times that."""
    text = _spelled(source)
    if _SINKS.search(text) is not None:
        return False
    doublings = len(_DOUBLERS.findall(text)) if _VALUE_MODULES.search(text) is not None else 0
    loops = 0
    if "for" in text:
        try:
            loops = _for_depth(tree.body, "shlex" in text)
        except RecursionError:
            loops = len((_FOR if "\r" in source else _FOR_STATEMENT).findall(source))
    if doublings + 3 * loops > 24:
        return False
    return len(source) * 16 * 2**doublings * 8**loops < MAX_STEPS


def _analyze(source: str, st: _State) -> None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        _fallback_scan(source, st, type(exc).__name__)
        return
    if not st.exec_nesting and _inert(source, tree):
        return  # most inline programs (pandas, django, os.path, json): nothing for the walk to find
    an = _Analyzer(st, _ENVIRON_REACH.search(_spelled(source)) is not None)
    try:
        an.module(tree)
    except _Budget:
        st.notes.append("python: analysis budget exhausted; findings are partial")
    except RecursionError:
        st.notes.append("python: source nested too deeply; findings are partial")


def analyze_python(source: str, argv: tuple[str, ...] = ()) -> tuple[list[Finding], list[str]]:
    """Findings and unresolved notes for a Python program given as text; ``argv`` is its
    ``sys.argv`` when the command line gives one."""
    st = _State(argv=argv or None)
    _analyze(source, st)
    return st.findings, st.notes


def imported_modules(source: str) -> tuple[str, ...]:
    """The top-level names of the modules ``source`` imports as it runs (``import a.b`` and
    ``from a import b`` give ``a``): module-level statements and the blocks inside them, not the
    bodies of functions or classes, which may never run. Relative imports are left out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    out: list[str] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            out.extend(a.name.split(".", 1)[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append(node.module.split(".", 1)[0])
        elif isinstance(node, ast.stmt | ast.Module | ast.excepthandler) and not isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            todo.extend(reversed([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt | ast.excepthandler)]))
    return tuple(dict.fromkeys(out))
