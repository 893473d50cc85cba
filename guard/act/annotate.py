"""The stderr annotator: explain recognised failures after the command ends (docs/behaviour.md §5).

``guard annotate -- PROGRAM [ARGS…]`` runs a program under the relay alone (``annotate_cmd``). The
annotator is the relay's sink: it watches stderr for the patterns of the rules whose conditions
hold (environment, cwd in the tree, program), and when the command has ended appends each
triggered annotation once, on a fresh line, as ``[guard] <message>``. Each printed annotation is
also appended to the audit log.
"""

from __future__ import annotations

import os

from guard.record import dataclass
from guard.text.redact import redact

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, collections.abc and re cost ~2-7 ms each on the command path
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from typing import Any


if TYPE_CHECKING:
    from guard.ruleset.annotations import StderrRule

__all__ = [
    "PREFIX",
    "Annotator",
    "cwd_in_tree",
    "load_rules",
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
    rules/stderr plus ``GUARD_RULES``). See ``guard.ruleset.annotations.load_rules``."""
    from guard.ruleset import annotations as stderr_rules

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


_URL_SRC = (
    r"(?:[a-z][a-z0-9+.-]*://[^\s'\"`<>()\[\]{}#]+"  # scheme://… up to a quote, bracket or #fragment
    r"|[\w.-]+@[\w.-]+:(?!//)[^\s'\"`<>()\[\]{}#]+)"  # scp-like user@host:path
)
_SSH_SCHEMES = ("ssh", "git+ssh", "ssh+git")


def _decode(value: bytes | str) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return _rx("CONTROL").sub("", text).strip()[:MAX_CAPTURE]


def _clean(value: bytes | str) -> str:
    text = _decode(value)
    return _rx("USERINFO").sub(lambda m: m.group(1), text)  # never echo a user name or a token


def clean_url(raw: bytes | str) -> str | None:
    """A URL as a message may show it: cut at a quote, bracket, backtick or ``#`` (pip's
    ``#egg=``), without a ``git+`` prefix or trailing punctuation and slash; a user name and
    password dropped, except an ssh URL's user (``git@``), which ssh needs. None if not a URL."""
    import re

    m = re.search(_URL_SRC, _decode(raw), re.I)
    if not m:
        return None
    url = m.group(0)
    if url.lower().startswith("git+") and "://" in url:
        url = url[4:]
    url = url.rstrip(".,;:!?/")
    scheme = url.split("://", 1)[0].lower() if "://" in url else "ssh"
    if scheme in _SSH_SCHEMES:
        url = re.sub(r"^([a-z+]+://[^/@:]*)(?::[^/@]*)?@", r"\1@", url, flags=re.I)  # keep user, drop a password
    else:
        url = _rx("USERINFO").sub(lambda mm: mm.group(1), url)
    return url or None


def url_host(url: str) -> str | None:
    import re

    m = re.match(r"^[a-z][a-z0-9+.-]*://(?:[^/@]*@)?(\[[^\]]*\]|[^/:?#]+)", url, re.I) or re.match(
        r"^[\w.-]+@([\w.-]+):", url
    )
    return m.group(1) if m else None


_host = url_host


def url_path(url: str) -> str:
    import re

    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", url, flags=re.I)
    path = re.sub(r"^[\w.-]+@[\w.-]+:", "", path)
    return path.split("?")[0].split("#")[0].strip("/")


def names_repository(url: str) -> bool:
    """Whether ``url`` names a repository, not only ``scheme://host`` (git's prompt errors)."""
    return bool(url_path(url))


def _repo(url: str) -> str | None:
    name = url_path(url).rsplit("/", 1)[-1]
    if name.endswith(".git"):
        name = name[:-4]
    return name or None


def command_urls(argvs: Iterable[Sequence[str]], command: str = "") -> list[str]:
    """Every URL the command line names (``git+`` requirements included), in order, once."""
    import re

    words: list[str] = [w for argv in argvs for w in argv]
    if not words and command:
        words = [command]
    out: list[str] = []
    for w in words:
        if "\uffff" in w:  # the analysis's mark for a value it cannot know: no URL to trust
            continue
        for m in re.finditer(_URL_SRC, w, re.I):
            url = clean_url(m.group(0))
            if url and url not in out:
                out.append(url)
    return out


def choose_url(found: Sequence[str], from_command: Sequence[str]) -> tuple[str | None, str | None]:
    """(repository URL or None, host or None) from the URLs the output named and those of the
    command line. The output's own repository URL wins; a host-only URL (git's credential
    prompt) is completed from the command line only when exactly one repository URL there is on
    that host; otherwise the repository is unknown and None is returned for it, never a guess."""
    repos = [u for u in found if names_repository(u)]
    if repos:
        return repos[-1], url_host(repos[-1])
    host = url_host(found[-1]) if found else None
    cands = [u for u in from_command if names_repository(u) and (host is None or url_host(u) == host)]
    distinct = {u.removesuffix(".git") for u in cands}
    if len(distinct) == 1:
        return cands[0], url_host(cands[0])
    return None, host


def render(
    rule: StderrRule,
    captures: Mapping[str, bytes | str],
    *,
    command: str = "",
    program: str = "",
    argvs: Sequence[Sequence[str]] = (),
    urls: Sequence[bytes | str] = (),
) -> str:
    """The annotation text (without the prefix) for ``rule`` with its patterns' captures.

    ``{url}`` is the repository's URL when the output or the command line names it, else a plain
    placeholder saying it is not known (``<URL of the repository on HOST>``); ``{host}`` and
    ``{repo}`` derive from it."""
    values = {k: _clean(v) for k, v in captures.items() if k != "url"}
    found = [u for u in (clean_url(x) for x in (*urls, *([captures["url"]] if "url" in captures else []))) if u]
    url, host = choose_url(found, command_urls(argvs, command))
    host = host or values.get("host")
    if url:
        values["url"] = url
        values["repo"] = _repo(url) or ""
    else:
        values["url"] = f"<URL of the repository on {host}>" if host else "<URL of the repository>"
    values["host"] = host or "the server"
    values.setdefault("program", program)

    class _Fill(dict[str, str]):
        def __missing__(self, key: str) -> str:
            return f"<{key}>"

    filled = {k: redact(v) for k, v in values.items() if v}  # every value from the output: the one redaction
    return rule.message.format_map(_Fill(filled))


# --------------------------------------------------------------------------- reassembly

TAIL = 64 << 10  # the end of stderr looked at again, cleaned and reassembled, when the command ends
WRAP = 80  # the width rich, miette and friends wrap at without a terminal
SLACK = 6


def normalise(data: bytes, width: int = WRAP) -> bytes:
    """``data`` without terminal escapes, each wrapped line followed by the line it was before
    wrapping: the text the tool meant, with every real line start kept.

    A line continues the one before when its first word would not have fitted there
    (``len(before) + 1 + len(word) > width``) and it is indented to where the text of the line
    it continues starts after any box drawing (pnpm's and pip's boxes, rich's wrapping). The
    physical lines stay (a false join costs nothing: a pattern anchored at a line start still
    finds its real line start), and the joined line comes after them; it stops growing at 16
    widths.
    """
    import re

    text = re.sub(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]", b"", data)
    lines = text.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    body = re.compile(r"^[\s│┃╭╰├└┌─━▶>×✗✖•|]*")
    joined: str | None = None  # the logical line so far, when it has more than one physical line
    start = last_len = 0  # where the logical line's text starts; the length of its last physical line
    for line in lines:
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        word = stripped.split(" ", 1)[0]
        current = joined if joined is not None else (out[-1] if out else "")
        # the wrapper's own width is a little less than the terminal's at times (miette): slack
        if out and stripped and indent == start and last_len + 1 + len(word) > width - SLACK and len(current) < 16 * width:
            head = current.rstrip(" ")
            joined = head + ("" if head.endswith("/") else " ") + stripped
        else:
            if joined is not None:
                out.append(joined)
            joined = None
            start = len(body.match(line).group(0))  # type: ignore[union-attr]
        out.append(line)
        last_len = len(line.rstrip(" "))
    if joined is not None:
        out.append(joined)
    return "\n".join(out).encode("utf-8", "replace")


# --------------------------------------------------------------------------- what the command is


@dataclass(frozen=True)
class Facts:
    """What classify knew about the command: the programs it runs with their argv, and whether
    it works in the tree (the verdict's, so ``trees:`` of the config count)."""

    programs: tuple[str, ...] = ()
    argvs: tuple[tuple[str, ...], ...] = ()
    in_tree: bool = False


def facts_from_verdict(verdict: Any, fallback_in_tree: bool = False) -> Facts:
    invs = tuple(getattr(verdict, "invocations", ()) or ())
    names: list[str] = []
    for i in invs:
        # a script the analysis looked into (a pyenv shim named pip, ./build.sh) runs too
        names.extend(os.path.basename(v) for v in getattr(i, "via", ()) if "/" in v and " " not in v)
        names.append(str(i.program))
        names.extend(_module_program(tuple(i.argv)))
    programs = tuple(dict.fromkeys(names))
    argvs = tuple(tuple(str(a) for a in i.argv) for i in invs)
    flags = tuple(getattr(verdict, "in_tree", ()) or ())
    in_tree = any(f is True for f in flags) if any(f is not None for f in flags) else fallback_in_tree
    return Facts(programs, argvs, in_tree)


def _module_program(argv: Sequence[str]) -> list[str]:
    """``python -m pip …`` runs pip: the module's name counts as a program too."""
    import re

    if not argv or not re.fullmatch(r"python[\d.]*", os.path.basename(argv[0])):
        return []
    for i, a in enumerate(argv[1:-1], 1):
        if a == "-m":
            return [argv[i + 1].split(".", 1)[0]]
        if a.startswith("-m") and len(a) > 2:
            return [a[2:].split(".", 1)[0]]
        if not a.startswith("-") or a in ("-c",):
            return []
    return []


def analyse_facts(command: str, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Facts:
    """The facts of ``command`` from the real analysis (run only when a rule with a program or
    tree condition is about to fire); the program's own name and GUARD_TREE if it fails."""
    fallback = Facts(
        (os.path.basename(argv[0]), *_module_program(argv)) if argv else (),
        (tuple(argv),) if argv else (),
        cwd_in_tree(cwd, env) if cwd else False,
    )
    try:
        from guard.context import Context
        from guard.engine import analyze

        verdict = analyze(command, Context.from_environ(cwd=cwd or None, env=dict(env)))
    except Exception:  # noqa: BLE001 - an annotation never costs the command anything
        return fallback
    facts = facts_from_verdict(verdict, fallback.in_tree)
    return Facts(tuple(dict.fromkeys((*fallback.programs, *facts.programs))), fallback.argvs + facts.argvs,
                 facts.in_tree)


# --------------------------------------------------------------------------- the sink


class Annotator:
    """Relay sink: ``feed(bytes)`` while the command runs, ``finish(status) -> bytes`` after.

    ``programs``, ``argvs`` and ``in_tree`` are what classify knew; any left None is taken from
    ``facts`` (a callable, run at most once, only when a rule that needs it is about to fire).
    """

    def __init__(
        self,
        rules: Sequence[StderrRule],
        *,
        env: Mapping[str, str],
        in_tree: bool | None = None,
        programs: Collection[str] | None = None,
        command: str = "",
        cwd: str = "",
        audit: bool = True,
        argvs: Sequence[Sequence[str]] | None = None,
        facts: Callable[[], Facts] | None = None,
        cheap: Facts | None = None,
        width: int = WRAP,
    ) -> None:
        from guard.act.matcher import StreamMatcher, compile_pattern

        self.env = env
        self.command = command
        self.cwd = cwd
        self.audit = audit
        self.width = width
        self._facts_fn = facts
        self._known = (
            tuple(programs) if programs is not None else None,
            tuple(tuple(a) for a in argvs) if argvs is not None else None,
            in_tree,
        )
        self._facts: Facts | None = None
        self._cheap = cheap  # what argv alone tells: enough when a rule's conditions hold on it
        self._full_needed = False
        self.rules = [r for r in rules if _env_holds(r, env)]
        self._pats = [(f"{r.id}\0{j}", rx) for r in self.rules for j, rx in enumerate(r.compiled)]
        self._pats += [(f"{r.id}\0c{j}", rx) for r in self.rules for j, rx in enumerate(r.compiled_captures)]
        self._keep = [k for k, _ in self._pats if "\0c" in k]
        import re

        watch = compile_pattern("^" + re.escape(PREFIX) + ".*") if self.rules else None
        self.matcher = StreamMatcher(self._pats, watch=watch, keep=self._keep)
        self._tail: list[bytes] = []
        self._tail_len = 0
        self._cut = False
        self.hits: dict[str, dict[str, bytes]] = {}

    # the facts ------------------------------------------------------------

    def facts(self) -> Facts:
        if self._facts is None:
            programs, argvs, in_tree = self._known
            if programs is None or argvs is None or in_tree is None:
                got = self._facts_fn() if self._facts_fn else Facts()
                programs = got.programs if programs is None else programs
                argvs = got.argvs if argvs is None else argvs
                in_tree = got.in_tree if in_tree is None else in_tree
            self._facts = Facts(tuple(programs), tuple(argvs), bool(in_tree))
        return self._facts

    @property
    def programs(self) -> tuple[str, ...]:
        return self.facts().programs

    @property
    def in_tree(self) -> bool:
        return self.facts().in_tree

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
        verdict: Any = None,
    ) -> Annotator:
        import shlex

        rules = load_rules(None, env=env)
        text = command if command is not None else shlex.join(argv)
        if verdict is not None and getattr(verdict, "invocations", None):
            f = facts_from_verdict(verdict, _in_tree(cwd, env))
            return cls(rules, env=env, in_tree=f.in_tree if cwd_in_tree is None else cwd_in_tree,
                       programs=programs if programs is not None else f.programs, argvs=f.argvs,
                       command=text, cwd=cwd)
        cheap = Facts((os.path.basename(argv[0]), *_module_program(argv)) if argv else (),
                      (tuple(argv),) if argv else (), _in_tree(cwd, env) if cwd else False)
        if command is not None:  # a shell's command text: argv is the shell, not the program
            cheap = None
        return cls(rules, env=env, in_tree=cwd_in_tree, programs=programs, command=text, cwd=cwd,
                   facts=lambda: analyse_facts(text, argv, env, cwd), cheap=cheap)

    # the stream -----------------------------------------------------------

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        if n is None:
            n = len(data)
        if not n:
            return
        self.matcher.feed(data, n)
        with memoryview(data) as view:
            piece = bytes(view[max(0, n - TAIL) : n])
        self._tail.append(piece)
        self._tail_len += len(piece)
        while self._tail_len - len(self._tail[0]) >= TAIL:
            self._tail_len -= len(self._tail.pop(0))
            self._cut = True

    def _second_look(self) -> None:
        """The end of stderr again, without escapes and with wrapped lines joined, for the
        patterns of rules the raw lines did not complete."""
        from guard.act.matcher import StreamMatcher

        data = b"".join(self._tail)
        if self._cut or len(data) > TAIL:
            data = data[-TAIL:]
            nl = data.find(b"\n")
            data = data[nl + 1 :] if nl >= 0 else b""
        if not data:
            return
        second = StreamMatcher(self._pats, keep=self._keep)
        second.feed(normalise(data, self.width))
        second.close()
        for k, v in second.hits.items():
            if k not in self.hits or k in self._keep and k not in self.matcher.hits:
                self.hits[k] = v

    def fired(self) -> list[tuple[StderrRule, dict[str, bytes]]]:
        """Rules whose every pattern matched and whose conditions hold, minus those a fired rule
        supersedes, then one per category: the most specific (a program condition that held, then
        more patterns, then file order)."""
        self.matcher.close()
        self.hits = dict(self.matcher.hits)

        def complete(r: StderrRule) -> bool:
            return all(f"{r.id}\0{j}" in self.hits for j in range(len(r.compiled)))

        if any(k not in self.hits for k, _ in self._pats):
            self._second_look()
        out: list[tuple[StderrRule, dict[str, bytes]]] = []
        for r in self.rules:
            if not complete(r):
                continue
            if _needs_facts(r) and not self._holds(r):
                continue
            caps: dict[str, bytes] = {}
            for key in [f"{r.id}\0{j}" for j in range(len(r.compiled))] + [
                f"{r.id}\0c{j}" for j in range(len(r.compiled_captures))
            ]:
                for name, v in self.hits.get(key, {}).items():
                    if name == "url":
                        caps.setdefault("\0urls", b"")
                        caps["\0urls"] += v + b"\n"
                    caps.setdefault(name, v)
            out.append((r, caps))
        superseded = {s for r, _ in out for s in r.supersedes}
        out = [(r, c) for r, c in out if r.id not in superseded]
        best: dict[str, tuple[tuple[int, int, int], StderrRule, dict[str, bytes]]] = {}
        for i, (r, c) in enumerate(out):
            score = (1 if r.programs else 0, len(r.compiled), -i)
            cat = r.category
            if cat not in best or score > best[cat][0]:
                best[cat] = (score, r, c)
        keep = {id(v[1]) for v in best.values()}
        return [(r, c) for r, c in out if id(r) in keep]

    def _holds(self, r: StderrRule) -> bool:
        """The rule's program and tree conditions, on argv alone when that settles them (no
        analysis is run), else on the analysis's facts."""
        cheap = self._cheap
        if cheap is not None and r.cwd_in_tree is not False and r.applies(self.env, cheap.in_tree, cheap.programs):
            return True
        self._full_needed = True
        return r.applies(self.env, self.in_tree, self.programs)

    def finish(self, status: int) -> bytes:
        fired = self.fired()
        seen = {s.decode("utf-8", "replace") for s in self.matcher.seen}
        if not fired:
            facts = Facts()
        elif self._cheap is not None and not self._full_needed:
            facts = self._cheap
        else:
            facts = self.facts()
        program = next((p for r, _ in fired for p in r.programs if p in facts.programs), None)
        program = program or (facts.programs[0] if facts.programs else "")
        lines: list[str] = []
        records: list[dict[str, Any]] = []
        for rule, caps in fired:
            urls = [u for u in caps.pop("\0urls", b"").split(b"\n") if u]
            caps.pop("url", None)
            text = render(rule, caps, command=self.command, program=program, argvs=facts.argvs, urls=urls)
            line = PREFIX + text
            if line in seen or line in lines:
                continue  # an inner guard already said it
            lines.append(line)
            records.append(self._record(rule, caps, text, status, facts))
        if records and self.audit:
            self._audit(records)
        return "".join(line + "\n" for line in lines).encode("utf-8", "replace")

    def _record(self, rule: StderrRule, caps: Mapping[str, bytes], text: str, status: int, facts: Facts) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "kind": "annotation",
            "verdict": "annotate",
            "category": rule.category,
            "rule": rule.id,
            "tool": rule.tool,
            "command": self.command,
            "cwd": self.cwd,
            "in_tree": facts.in_tree,
            "program": facts.programs[0] if facts.programs else None,
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


def _needs_facts(rule: StderrRule) -> bool:
    return bool(rule.programs) or rule.cwd_in_tree is not None


def _env_holds(rule: StderrRule, env: Mapping[str, str]) -> bool:
    return rule.applies(env, rule.cwd_in_tree is True, rule.programs)


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
    import shlex

    env, in_tree, progs = _example_context(rule, ex)
    command = getattr(ex, "command", None) or ""
    try:
        argvs = [shlex.split(command)] if command else []
    except ValueError:
        argvs = [command.split()]
    ann = Annotator([rule], env=env, in_tree=in_tree, programs=progs, command=command, argvs=argvs, audit=False)
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
    from guard.ruleset.annotations import load_with_problems

    return load_with_problems(paths, cache=False)[1]
