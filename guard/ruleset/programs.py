"""Program specs (``programs:`` in a rule file) and the one argv reader that uses them.

A spec says where a program's subcommand sits, which options take a value (before the
subcommand, after it, or after one subcommand only), which options only print help, and which of
guard's readers give its words a meaning (``meaning``, ``api``, ``clone``). ``read`` turns any
invocation into the same facts for every program: ``subcommand``, ``action`` (the first operand
after the subcommand), ``args`` (the operands after it), ``flags`` (the options after it;
``-abc`` also counts as ``-a -b -c``), ``info`` (a help or version form), ``url_arg``.

A program without a spec has no subcommand: its operands are ``args`` and its options ``flags``.
"""

from __future__ import annotations

import re

from guard.record import dataclass
from guard.ruleset import catalogue as cat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


@dataclass(frozen=True, slots=True)
class Spec:
    program: str
    subcommand: bool = True
    dashed: bool = False
    global_with_value: frozenset[str] = frozenset()
    info: frozenset[str] = frozenset()
    with_value: frozenset[str] = frozenset()
    sub_with_value: tuple[tuple[str, frozenset[str]], ...] = ()
    what_action: bool | frozenset[str] = False
    meaning: str | None = None
    api: tuple[tuple[str, Any], ...] | None = None
    clone: tuple[str, str] | None = None
    # what a subcommand's operands and option values name (``subcommands: NAME: files/values/…``)
    sub_files: tuple[tuple[str, str], ...] = ()  # (subcommand, "all" | "named")
    sub_values: tuple[tuple[str, tuple[tuple[str, frozenset[str]], ...]], ...] = ()  # (sub, ((fact, options), …))
    sub_operand_value: tuple[tuple[str, str], ...] = ()  # (subcommand, fact)
    sub_refspecs: tuple[tuple[str, int], ...] = ()  # (subcommand, operands before the refspecs)
    file_like: str | None = None
    tag_like: str | None = None
    what_flags: tuple[tuple[str, tuple[str, ...]], ...] = ()
    drives_git: tuple[tuple[str, str | None], ...] = ()
    # the program catalogue (guard/ruleset/catalogue.py): what the program searches, dumps,
    # copies, writes or sends; reads_operands false: its operands are text or names it never reads
    searches: cat.Search | None = None
    dumps_environment: cat.EnvDump | None = None
    copies: cat.Copy | None = None
    finds: cat.Find | None = None
    checks_out: cat.Checkout | None = None
    writes: cat.Write | None = None
    http: cat.Http | None = None
    reads_operands: bool = True
    # (subcommand, (options, first operands, options that make one operand a write)): it only reads
    sub_reads_only: tuple[tuple[str, tuple[frozenset[str], frozenset[str], frozenset[str]]], ...] = ()
    sub_searches: frozenset[str] = frozenset()  # subcommands that search the files they name (git grep)
    quiet: bool = False  # the entry says only reads_operands: the program gives no facts of its own

    def per_sub(self, table: tuple[tuple[str, Any], ...], sub: str | None, default: Any = None) -> Any:
        for name, v in table:
            if name == sub:
                return v
        return default

    def option_values(self, sub: str | None) -> frozenset[str]:
        for name, opts in self.sub_with_value:
            if name == sub:
                return self.with_value | opts
        return self.with_value

    def api_option(self, key: str, default: Any = ()) -> Any:
        for k, v in self.api or ():
            if k == key:
                return v
        return default


NO_SPEC = Spec("")

# The facts each part of a spec makes possible (lint: a rule naming a program can only want these)
READER_FACTS = frozenset({"args", "flags", "url_arg", "flags_any", "flags_all", "flags_none", "has_args", "args_match",
                          "has", "lacks"})
SUBCOMMAND_FACTS = frozenset({"subcommand", "action"})
INFO_FACTS = frozenset({"info"})
API_FACTS = frozenset({"http_write", "http_method", "forge", "github", "endpoint", "http_path", "graphql",
                       "http_path_has"})
CLONE_FACTS = frozenset({"dest", "dest_path"})
# What a subcommand's operands name (spec ``files``, ``values``, ``operand_value``, ``refspecs``)
OPERAND_FACTS = frozenset({"files", "rev_path", "message", "message_file", "branch", "title", "tag_push", "ref_delete"})
HTTP_FACTS = frozenset({"http_method", "forge", "github", "http_write", "url", "http_path", "graphql", "oauth",
                        "http_path_has"})
MEANING_FACTS: dict[str, frozenset[str]] = {
    "git-repository": frozenset({"repo", "repo_path", "configs", "dest", "dest_path", "url", "config_scope",
                                 "config_read"}),
    "http-inline": HTTP_FACTS,
}
# Facts any invocation may have, whatever its program (tokens, credential stores, file writes).
ANY_PROGRAM_FACTS = frozenset({"program", "token_ref", "env_search", "cred_store", "token_grep", "dotgit_write",
                               "repo_copy", "editable_vcs", "dest_path", "url"})


ALL_FACTS = frozenset().union(ANY_PROGRAM_FACTS, READER_FACTS, SUBCOMMAND_FACTS, INFO_FACTS, API_FACTS, CLONE_FACTS,
                               OPERAND_FACTS, *MEANING_FACTS.values())


def possible_facts(spec: Spec | None) -> frozenset[str]:
    """Every fact name (and match key) an invocation read with ``spec`` can have."""
    out = set(ANY_PROGRAM_FACTS | READER_FACTS)
    if spec is None:
        return frozenset(out)
    if spec.subcommand:
        out |= SUBCOMMAND_FACTS
    if spec.info:
        out |= INFO_FACTS
    if spec.api:
        out |= API_FACTS
    if spec.clone:
        out |= CLONE_FACTS
    if spec.meaning:
        out |= MEANING_FACTS.get(spec.meaning, frozenset())
    if spec.http is not None:
        out |= HTTP_FACTS
    if spec.sub_files or spec.sub_values or spec.sub_operand_value or spec.sub_refspecs:
        out |= OPERAND_FACTS
    if spec.drives_git:
        out |= MEANING_FACTS["git-repository"]
    return frozenset(out)


def compile_specs(raw: Mapping[str, Mapping[str, Any]]) -> dict[str, Spec]:
    """The rule set's ``programs`` (name → spec as written) as Specs."""
    return {name: compile_spec(name, s) for name, s in raw.items()}


def _fs(v: Any) -> frozenset[str]:
    return frozenset(str(x) for x in v or ())


def compile_spec(name: str, s: Mapping[str, Any]) -> Spec:
    g = s.get("global_options") or {}
    subs = s.get("subcommands") or {}
    wa = s.get("what_action", False)
    api = s.get("api")
    clone = s.get("clone")

    def part(key: str, make: Any) -> Any:
        v = s.get(key)
        return make(v) if isinstance(v, dict) else None

    return Spec(
        program=name,
        subcommand=s.get("subcommand", True) is not False,
        dashed=bool(s.get("dashed")),
        global_with_value=_fs(g.get("with_value")),
        info=_fs(g.get("info")),
        with_value=_fs(s.get("with_value")),
        sub_with_value=tuple((str(k), _fs((v or {}).get("with_value"))) for k, v in subs.items()),
        what_action=_fs(wa) if isinstance(wa, list) else bool(wa),
        meaning=s.get("meaning"),
        api=tuple((k, _fs(v) if isinstance(v, list) else v) for k, v in api.items()) if isinstance(api, dict) else None,
        clone=(str(clone.get("subcommand")), str(clone.get("action"))) if isinstance(clone, dict) else None,
        sub_files=tuple((str(k), str(v["files"])) for k, v in subs.items() if isinstance(v, dict) and v.get("files")),
        sub_values=tuple((str(k), tuple((str(f), _fs(o)) for f, o in v["values"].items()))
                         for k, v in subs.items() if isinstance(v, dict) and isinstance(v.get("values"), dict)),
        sub_operand_value=tuple((str(k), str(v["operand_value"])) for k, v in subs.items()
                                if isinstance(v, dict) and v.get("operand_value")),
        sub_refspecs=tuple((str(k), int(v["refspecs"])) for k, v in subs.items()
                           if isinstance(v, dict) and isinstance(v.get("refspecs"), int)),
        file_like=s.get("file_like"),
        tag_like=s.get("tag_like"),
        what_flags=tuple((str(k), tuple(str(f) for f in v or ())) for k, v in (s.get("what_flags") or {}).items()),
        drives_git=tuple((str(d.get("subcommand")), d.get("action")) for d in s.get("drives_git") or ()
                         if isinstance(d, dict)),
        searches=part("searches", cat.search),
        dumps_environment=part("dumps_environment", cat.env_dump),
        copies=part("copies", cat.copy),
        finds=part("finds", cat.find),
        checks_out=part("checks_out", cat.checkout),
        writes=part("writes", cat.write),
        http=part("http", cat.http),
        reads_operands=s.get("reads_operands", True) is not False,
        sub_reads_only=tuple((str(k), (_fs(v["reads_only"].get("options")), _fs(v["reads_only"].get("actions")),
                                       _fs(v["reads_only"].get("one_operand_unless"))))
                             for k, v in subs.items() if isinstance(v, dict) and isinstance(v.get("reads_only"), dict)),
        sub_searches=frozenset(str(k) for k, v in subs.items() if isinstance(v, dict) and v.get("searches") is True),
        quiet=set(s) <= QUIET_KEYS,
    )


# An entry with only these keys gives no facts of its own: its program stays on the quiet way.
QUIET_KEYS = frozenset({"program", "description", "source", "subcommand", "reads_operands"})


def spec_for(program: str, specs: Mapping[str, Spec]) -> tuple[Spec | None, str]:
    """(the spec of ``program``, the program name rules see): ``git-push`` is git's when git is
    ``dashed``."""
    spec = specs.get(program)
    if spec is None and "-" in program:
        head, _, _ = program.partition("-")
        base = specs.get(head)
        if base is not None and base.dashed:
            return base, head
    return spec, program


@dataclass(frozen=True, slots=True)
class Reading:
    """One invocation's argv as a spec reads it."""

    subcommand: str | None
    sub_index: int  # where the subcommand is in argv (len(argv) when there is none)
    args: tuple[str, ...]
    flags: frozenset[str]
    global_options: tuple[tuple[str, str], ...]  # (option, value) before the subcommand, for those taking one
    options: tuple[tuple[str, str], ...]  # (option, value) after it, for those taking one
    info: bool
    dashdash: int = -1  # how many operands came before a `--` (-1: none)


URL_RE = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)


def is_url(s: str) -> bool:
    return bool(URL_RE.match(s))


def read(argv: tuple[str, ...] | list[str], spec: Spec) -> Reading:
    """``argv`` (argv[0] the program) as ``spec`` reads it."""
    n = len(argv)
    gopts: list[tuple[str, str]] = []
    info = False
    i = 1
    if spec.subcommand:
        gwv = spec.global_with_value
        while i < n:
            a = argv[i]
            if not a.startswith("-"):
                break
            name, eq, val = a.partition("=")
            if a in gwv:
                gopts.append((a, argv[i + 1] if i + 1 < n else ""))
                i += 2
                continue
            if eq and name in gwv:
                gopts.append((name, val))
            elif name in spec.info:
                info = True  # prints and exits: `git --help push` shows push's page, runs nothing
            i += 1
        sub = argv[i] if i < n else None
        start = i + 1
    else:
        sub, start = None, 1
    with_value = spec.option_values(sub)
    options: list[tuple[str, str]] = []
    pos: list[str] = []
    flags: set[str] = set()
    dashdash = False
    before_dashdash = -1
    j = start
    while j < n:
        a = argv[j]
        j += 1
        if dashdash or not a.startswith("-") or a == "-":
            pos.append(a)
        elif a == "--":
            dashdash = True
            before_dashdash = len(pos)
        elif a.startswith("--"):
            name, eq, val = a.partition("=")
            flags.add(name)
            if name in with_value:
                if not eq:
                    val = argv[j] if j < n else ""
                    j += 1
                options.append((name, val))
        else:
            flags.add(a)
            if a in with_value:
                options.append((a, argv[j] if j < n else ""))
                j += 1
            elif len(a) > 2:
                flags.add(a[:2])
                flags.update("-" + c for c in a[1:] if c.isalpha())
                if a[:2] in with_value:  # -mMSG: the value is attached
                    options.append((a[:2], a[2:]))
                elif "-" + a[-1] in with_value and a[1:].isalpha():  # -am MSG: the last letter takes the value
                    options.append(("-" + a[-1], argv[j] if j < n else ""))
                    j += 1
    return Reading(sub, i if spec.subcommand else n, tuple(pos), frozenset(flags), tuple(gopts), tuple(options), info,
                   before_dashdash)


def reader_facts(r: Reading, spec: Spec | None) -> dict[str, Any]:
    facts: dict[str, Any] = {"args": list(r.args), "flags": set(r.flags)}
    if spec is not None and spec.subcommand:
        facts["subcommand"] = r.subcommand
        facts["action"] = r.args[0] if r.args else None
    if spec is not None and spec.info:
        facts["info"] = r.info
    url = False
    for p in r.args:  # a loop, not any() over a generator: every git and gh invocation asks
        if URL_RE.match(p):
            url = True
            break
    facts["url_arg"] = url
    return facts
