"""The stderr annotator: explain recognised failures after the command ends (SPEC §5).

``guard annotate -- PROGRAM [ARGS…]`` runs a program under the relay alone (``main``). The
annotator is the relay's sink: it watches stderr for the patterns of the rules whose conditions
hold (environment, cwd in the tree, program), and when the command has ended appends each
triggered annotation once, on a fresh line, as ``[guard] <message>``. Each printed annotation is
also appended to the audit log.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, collections.abc and re cost ~2-7 ms each on the command path
    from collections.abc import Collection, Iterable, Mapping, Sequence
    from typing import Any


if TYPE_CHECKING:
    from guard.act.stderr_rules import StderrRule

__all__ = [
    "PREFIX",
    "Annotator",
    "cwd_in_tree",
    "load_rules",
    "main",
    "render",
    "run_examples",
    "lint",
]

PREFIX = "[guard] "
DEFAULT_TREE = "/workspace"
MAX_CAPTURE = 300



_COMPILED: dict[str, Any] = {}


def _rx(name: str) -> Any:
    """The regular expressions of rendering, compiled on first use: ``guard annotate`` on a
    command whose stderr never matters does not import ``re`` at all."""
    if not _COMPILED:
        import re

        _COMPILED.update(
            URL=re.compile(r"(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)[^\s'\"<>()]+", re.I),
            USERINFO=re.compile(r"^([a-z][a-z0-9+.-]*://)([^/@:]*)(?::[^/@]*)?@", re.I),
            CONTROL=re.compile(r"[\x00-\x1f\x7f-\x9f]"),
        )
    return _COMPILED[name]


# --------------------------------------------------------------------------- rules


def load_rules(paths: Iterable[str | os.PathLike[str]] | None = None, **kw: Any) -> list[StderrRule]:
    """Compiled stderr rules from ``paths`` (files or folders; default: the shipped
    rules/stderr plus ``GUARD_RULES``). See ``guard.act.stderr_rules.load_rules``."""
    from guard.act import stderr_rules

    return stderr_rules.load_rules(paths, **kw)


# --------------------------------------------------------------------------- conditions


def tree_roots(env: Mapping[str, str]) -> list[str]:
    raw = env.get("GUARD_TREE")
    roots = [r for r in raw.split(":") if r] if raw else []
    return roots or [DEFAULT_TREE]


def cwd_in_tree(cwd: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``cwd`` is a tree root or below one (``GUARD_TREE``, default /workspace), by whole
    path components after following symlinks."""
    env = os.environ if env is None else env
    here = _components(cwd)
    for root in tree_roots(env):
        r = _components(root)
        if here[: len(r)] == r:
            return True
    return False


_in_tree = cwd_in_tree


def _components(path: str) -> list[str]:
    try:
        path = os.path.realpath(path)
    except (OSError, ValueError):
        path = os.path.normpath(path)
    return [c for c in path.split("/") if c]


# --------------------------------------------------------------------------- rendering


def _clean(value: bytes | str) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    text = _rx("CONTROL").sub("", text).strip()
    text = _rx("USERINFO").sub(lambda m: m.group(1), text)  # never echo a user name or a token
    return text[:MAX_CAPTURE]


def _host(url: str) -> str | None:
    import re

    m = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^/@]*@)?([^/:?#]+)", url, re.I) or re.match(
        r"^[\w.-]+@([\w.-]+):", url
    )
    return m.group(1) if m else None


def _repo(url: str) -> str | None:
    import re

    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", url, flags=re.I)
    path = re.sub(r"^[\w.-]+@[\w.-]+:", "", path).split("?")[0].split("#")[0].rstrip("/")
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".git"):
        name = name[:-4]
    return name or None


def _refine_url(url: str, command: str) -> str:
    """git names only scheme://host in its prompt error; the command usually has the whole URL."""
    base = _rx("USERINFO").sub(lambda m: m.group(1), url).rstrip("/")
    if not base:
        return url
    for m in _rx("URL").finditer(command):
        cand = _clean(m.group(0).strip("'\""))
        plain = _rx("USERINFO").sub(lambda mm: mm.group(1), cand)
        for prefix in ("git+", ""):
            if plain.startswith(prefix + base) and len(plain) > len(prefix + base):
                return plain[len(prefix) :]
    return url


def _command_url(command: str, host: str | None) -> str | None:
    """The first URL in the command (on ``host`` when given), for rules that capture none."""
    for m in _rx("URL").finditer(command):
        cand = _clean(m.group(0).strip("'\""))
        if cand.startswith("git+"):
            cand = cand[4:]
        if host is None or _host(cand) == host:
            return cand
    return None


def render(rule: StderrRule, captures: Mapping[str, bytes | str], *, command: str = "", program: str = "") -> str:
    """The annotation text (without the prefix) for ``rule`` with its pattern's captures."""
    values = {k: _clean(v) for k, v in captures.items()}
    if values.get("url"):
        values["url"] = _refine_url(values["url"], command)
    else:
        found = _command_url(command, values.get("host"))
        if found:
            values["url"] = found
    url = values.get("url")
    if url:
        values.setdefault("host", _host(url) or "")
        values.setdefault("repo", _repo(url) or "")
    values.setdefault("program", program)

    class _Fill(dict[str, str]):
        def __missing__(self, key: str) -> str:
            return f"<{key}>"

    filled = {k: v for k, v in values.items() if v}
    return rule.message.format_map(_Fill(filled))


# --------------------------------------------------------------------------- the sink


class Annotator:
    """Relay sink: ``feed(bytes)`` while the command runs, ``finish(status) -> bytes`` after."""

    def __init__(
        self,
        rules: Sequence[StderrRule],
        *,
        env: Mapping[str, str],
        in_tree: bool,
        programs: Collection[str],
        command: str = "",
        cwd: str = "",
        audit: bool = True,
    ) -> None:
        from guard.act.matcher import StreamMatcher, compile_pattern

        self.env = env
        self.in_tree = in_tree
        self.programs = tuple(programs)
        self.command = command
        self.cwd = cwd
        self.audit = audit
        self.rules = [r for r in rules if r.applies(env, in_tree, self.programs)]
        pats = [(f"{r.id}\0{j}", rx) for r in self.rules for j, rx in enumerate(r.compiled)]
        import re

        watch = compile_pattern("^" + re.escape(PREFIX) + ".*") if self.rules else None
        self.matcher = StreamMatcher(pats, watch=watch)

    @classmethod
    def for_run(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        cwd: str,
        cwd_in_tree: bool | None = None,
        command: str | None = None,
        programs: Collection[str] | None = None,
    ) -> Annotator:
        import shlex

        rules = load_rules(None, env=env)
        in_tree = cwd_in_tree if cwd_in_tree is not None else _in_tree(cwd, env)
        progs = programs if programs is not None else (os.path.basename(argv[0]),) if argv else ()
        return cls(
            rules,
            env=env,
            in_tree=in_tree,
            programs=progs,
            command=command if command is not None else shlex.join(argv),
            cwd=cwd,
        )

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        self.matcher.feed(data, n)

    def fired(self) -> list[tuple[StderrRule, dict[str, bytes]]]:
        """Rules whose every pattern matched, minus those a fired rule supersedes, in rule order."""
        hits = self.matcher.hits
        out: list[tuple[StderrRule, dict[str, bytes]]] = []
        for r in self.rules:
            keys = [f"{r.id}\0{j}" for j in range(len(r.compiled))]
            if all(k in hits for k in keys):
                caps: dict[str, bytes] = {}
                for k in keys:
                    for name, v in hits[k].items():
                        caps.setdefault(name, v)
                out.append((r, caps))
        superseded = {s for r, _ in out for s in r.supersedes}
        return [(r, c) for r, c in out if r.id not in superseded]

    def finish(self, status: int) -> bytes:
        self.matcher.close()
        seen = {s.decode("utf-8", "replace") for s in self.matcher.seen}
        program = self.programs[0] if self.programs else ""
        lines: list[str] = []
        records: list[dict[str, Any]] = []
        for rule, caps in self.fired():
            text = render(rule, caps, command=self.command, program=program)
            line = PREFIX + text
            if line in seen or line in lines:
                continue  # an inner guard already said it
            lines.append(line)
            records.append(self._record(rule, caps, text, status))
        if records and self.audit:
            self._audit(records)
        return "".join(line + "\n" for line in lines).encode("utf-8", "replace")

    def _record(self, rule: StderrRule, caps: Mapping[str, bytes], text: str, status: int) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "kind": "annotation",
            "verdict": "annotate",
            "category": rule.category,
            "rule": rule.id,
            "tool": rule.tool,
            "command": self.command,
            "cwd": self.cwd,
            "in_tree": self.in_tree,
            "program": self.programs[0] if self.programs else None,
            "exit_status": status,
            "message": text,
            "rule_source": rule.source,
        }
        if caps:
            rec["captures"] = {k: _clean(v) for k, v in caps.items()}
        return rec

    def _audit(self, records: list[dict[str, Any]]) -> None:
        try:
            from guard.audit.log import append_record
        except Exception:
            return
        for rec in records:
            try:
                append_record(rec, self.env)
            except Exception:
                pass


# --------------------------------------------------------------------------- examples & lint


def _example_context(rule: StderrRule, ex: Any) -> tuple[dict[str, str], bool, tuple[str, ...]]:
    env = {name: (values[0] if values[0] != "*" else "1") for name, values in rule.env}
    if ex.env is not None:
        env.update(ex.env)
    in_tree = ex.cwd_in_tree if ex.cwd_in_tree is not None else bool(rule.cwd_in_tree)
    prog = ex.program or (rule.programs[0] if rule.programs else "sh")
    return env, in_tree, (prog,)


def check_example(rule: StderrRule, ex: Any, chunk: int = 0) -> str | None:
    """Run one example through the real matcher; the annotation it produced, or None."""
    env, in_tree, progs = _example_context(rule, ex)
    ann = Annotator([rule], env=env, in_tree=in_tree, programs=progs, command="", audit=False)
    data = ex.stderr.encode("utf-8")
    if chunk:
        for i in range(0, len(data), chunk):
            ann.feed(data[i : i + chunk])
    else:
        ann.feed(data)
    out = ann.finish(1).decode("utf-8")
    return out or None


def run_examples(rules: Iterable[StderrRule]) -> list[str]:
    """Failures (one line each) of every rule's must / must_not examples; empty when all pass."""
    failures: list[str] = []
    for rule in rules:
        where = f"{rule.source}:{rule.line}: {rule.id}"
        if not rule.must:
            failures.append(f"{where}: has no must example")
        if not rule.must_not:
            failures.append(f"{where}: has no must_not example")
        for i, ex in enumerate(rule.must):
            out = check_example(rule, ex)
            if out is None:
                failures.append(f"{where}: examples.must[{i}] did not annotate")
            elif ex.message_contains and ex.message_contains not in out:
                failures.append(f"{where}: examples.must[{i}] message lacks {ex.message_contains!r}")
        for i, ex in enumerate(rule.must_not):
            if check_example(rule, ex) is not None:
                failures.append(f"{where}: examples.must_not[{i}] annotated")
    return failures


def lint(paths: Iterable[str]) -> list[str]:
    """Problems in stderr rule files (file:line:column: field: what), without the cache."""
    from guard.act.stderr_rules import load_with_problems

    return load_with_problems(paths, cache=False)[1]


# --------------------------------------------------------------------------- guard annotate

USAGE = "usage: guard annotate -- PROGRAM [ARGS...]"


def main(argv: list[str]) -> int:
    """``guard annotate -- PROGRAM [ARGS…]``; ``argv`` is what follows ``annotate``."""
    args = list(argv)
    if args and args[0] == "--":
        args = args[1:]
    elif args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    elif args and args[0].startswith("-"):
        _usage_error(f"unknown option {args[0]}")
        return 2
    if not args:
        _usage_error("no program given")
        return 2
    from guard.act.relay import run

    return run(args, mirror_signal=True)


def _usage_error(msg: str) -> None:
    try:
        os.write(2, f"guard annotate: {msg}; {USAGE}\n".encode())
    except OSError:
        pass


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
