"""What a schema cannot say: a rule's fields that contradict each other, an unknown tool or
placeholder, a fact the named program never has, an annotation pattern RE2 rejects."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from guard.ruleset.read import Diagnostic, Doc, Path_, did_you_mean
from guard.ruleset.schema import shown, vocabulary

PLACEHOLDERS = ("what", "prefix", "url", "path", "tool_call", "files", "paths", "file", "message", "branch", "title")
TOOL_PLACEHOLDERS = ("what", "prefix", "url", "path", "files", "paths", "file", "message", "branch", "title")
# what an annotation's message may name besides the pattern's named groups
ANNOTATION_DERIVED = ("url", "host", "repo", "program")
REGEXISH = ("^", "$", ".*", ".+", "\\", "[", "(?", "|")



def template_problem(text: str, allowed: tuple[str, ...]) -> tuple[str, str] | None:
    """(kind, message) when a message template is malformed or names an unknown placeholder."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as e:
        return "bad-template", f"malformed template ({e}); write {{{{ and }}}} for literal braces"
    for _, name, spec, conv in parts:
        if name is None:
            continue
        if name not in allowed:
            shown_ = "{" + name + "}"
            hint = did_you_mean(name, allowed)
            return "unknown-placeholder", (f"unknown placeholder {shown_}; expected "
                                           + ", ".join("{" + a + "}" for a in allowed) + hint)
        if spec or conv:
            return "bad-template", f"placeholder {{{name}}} takes no format spec or conversion"
    return None


@dataclass
class Entry:
    """One command rule as written in a file."""

    rule: dict[str, Any]
    doc: Doc
    index: int
    layer: int
    shipped: bool
    valid: bool

    @property
    def path(self) -> Path_:
        return ("rules", self.index)

    @property
    def line(self) -> int:
        return self.doc.at(self.path)[0]

    @property
    def source(self) -> str:
        return f"{self.doc.name}:{self.line}"

    @property
    def id(self) -> str:
        return str(self.rule.get("id"))


def rule_problems(e: Entry, effective: Mapping[str, Any], tools: Mapping[str, Any],
                  specs: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """What the schema cannot say about one rule; ``effective`` is it merged with what it changes;
    ``specs`` are the program specs in effect (a fact the named program never has is a mistake)."""
    out: list[Diagnostic] = []
    p = e.path
    allow = effective.get("verdict") == "allow"
    here = e.rule

    def at(name: str) -> Path_:
        return (*p, name) if name in here else p

    if allow:
        for name in ("category", "message", "tool"):
            if name in here and here[name] is not None:
                out.append(e.doc.diag((*p, name), f"an allow rule refuses nothing, so it has no {name}"
                                      + ("; exempts: [...] chooses what it lifts" if name == "category" else ""),
                                      "allow-rule-field", key=True))
    else:
        if not effective.get("category"):
            out.append(e.doc.diag(at("category"), f"required for a refusing rule: one of {', '.join(vocabulary()['categories'])}",
                                  "missing-category", field_path=(*p, "category")))
        if not effective.get("message"):
            out.append(e.doc.diag(at("message"), "required for a refusing rule: the text the agent reads "
                                  "(placeholders {what} {prefix} {url} {path} {tool_call})",
                                  "missing-message", field_path=(*p, "message")))
        if "exempts" in here:
            out.append(e.doc.diag((*p, "exempts"), "only an allow rule (verdict: allow) exempts categories",
                                  "exempts-on-refusing", key=True))
    tool = here.get("tool")
    if isinstance(tool, str) and not allow and tool not in tools:
        hint = did_you_mean(tool, tools) or f"; expected one of {', '.join(sorted(tools))} or null"
        out.append(e.doc.diag((*p, "tool"), f"unknown tool {tool!r} (not in the config's tools){hint}", "unknown-tool"))
    msg = here.get("message")
    if isinstance(msg, str) and not allow:
        prob = template_problem(msg, PLACEHOLDERS)
        if prob:
            out.append(e.doc.diag((*p, "message"), prob[1], prob[0]))
        elif "{tool_call}" in msg and not effective.get("tool"):
            out.append(e.doc.diag((*p, "message"), "uses {tool_call} but the rule names no tool", "tool-call-without-tool"))
    m = here.get("match")
    if isinstance(m, dict) and specs is not None:
        out.extend(_impossible_facts(e, m, specs))
    if isinstance(m, dict):
        for key in ("args_match", "http_path_has"):
            vals = m.get(key)
            for v in vals if isinstance(vals, list) else [vals]:
                if isinstance(v, str) and any(t in v for t in REGEXISH):
                    out.append(e.doc.diag((*p, "match", key), f"{shown(v)} looks like a pattern, but {key} is a plain "
                                          "substring and is searched for literally", "regex-in-substring",
                                          severity="warning"))
    return out


def _impossible_facts(e: Entry, m: Mapping[str, Any], specs: Mapping[str, Any]) -> list[Diagnostic]:
    """A match key that no program the rule names can ever have: the rule would never match."""
    from guard.ruleset.programs import ALL_FACTS, possible_facts, spec_for  # what each spec can give

    names = m.get("program")
    names = names if isinstance(names, list) else [names]
    if not names or any(not isinstance(n, str) for n in names):
        return []
    out = []
    for key in ("has", "lacks"):  # their values are fact names
        vals = m.get(key)
        for v in vals if isinstance(vals, list) else [vals] if vals is not None else []:
            if not isinstance(v, str):
                continue
            if v not in ALL_FACTS:
                out.append(e.doc.diag((*e.path, "match", key), f"{v!r} is not a fact name{did_you_mean(v, sorted(ALL_FACTS))}",
                                      "unknown-fact"))
            elif all(v not in possible_facts(spec_for(n, specs)[0]) for n in names):
                out.append(e.doc.diag((*e.path, "match", key), f"program {' or '.join(repr(n) for n in names)} never has "
                                      f"the fact {v!r}; see rules/README.md, Program specs", "impossible-fact"))
    for key in m:
        if key == "program" or key not in ALL_FACTS:  # an unknown key is the schema's to report
            continue
        lacking = [n for n in names if key not in possible_facts(spec_for(n, specs)[0])]
        if len(lacking) < len(names):
            continue
        what = " or ".join(repr(n) for n in lacking)
        specless = [n for n in lacking if spec_for(n, specs)[0] is None]
        why = (f"; {', '.join(specless)} has no program spec (rules/programs/ or a programs: block says where "
               "its subcommand sits)" if specless and key in ("subcommand", "action", "info")
               else "; see rules/README.md, Program specs, for the facts each spec gives")
        out.append(e.doc.diag((*e.path, "match", key), f"program {what} never has the fact {key!r}, so this rule "
                              f"can never match{why}", "impossible-fact", key=True))
    return out


def config_problems(doc: Doc) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    cfg = doc.data.get("config") if isinstance(doc.data, dict) else None
    tools = cfg.get("tools") if isinstance(cfg, dict) else None
    if isinstance(tools, dict):
        for name, text in tools.items():
            if isinstance(text, dict):
                text = text.get("call")
            if isinstance(text, str):
                prob = template_problem(text, TOOL_PLACEHOLDERS)
                if prob:
                    out.append(doc.diag(("config", "tools", name), prob[1], prob[0]))
    for key in ("token_words", "token_words+"):
        words = cfg.get(key) if isinstance(cfg, dict) else None
        for k, w in enumerate(words if isinstance(words, list) else []):
            if isinstance(w, str):
                try:
                    re.compile(w)
                except re.error as e:
                    out.append(doc.diag(("config", key, k), f"not a regular expression: {e}", "bad-config"))
    return out


def annotation_problems(doc: Doc, index: int, item: Mapping[str, Any], tools: Mapping[str, Any] | None = None,
                        ids: frozenset[str] | None = None) -> list[Diagnostic]:
    """What the schema cannot say about one annotation (``annotations[index]``, schema-valid):
    patterns RE2 rejects, a message placeholder no pattern fills, an unknown ``tool`` (when the
    config's ``tools`` are given) or ``supersedes`` id (when the ids in effect are given)."""
    from guard.ruleset.patterns import compile_pattern  # the annotator's own reading of a pattern

    out: list[Diagnostic] = []
    p = ("annotations", index)
    groups: set[str] = set()
    for name in ("pattern", "capture"):
        v = item.get(name)
        many = isinstance(v, list)
        for j, pat in enumerate(v if many else [] if v is None else [v]):
            if not isinstance(pat, str):
                continue  # the schema's to report
            try:
                rx = compile_pattern(pat)
            except ValueError as e:
                out.append(doc.diag((*p, name, j) if many else (*p, name), f"not a valid RE2 pattern: {e}",
                                    "bad-pattern"))
                continue
            groups.update(k.decode() if isinstance(k, bytes) else k for k in rx.groupindex)
            if name == "pattern" and rx.search(b"") is not None:
                out.append(doc.diag((*p, name, j) if many else (*p, name), f"{json.dumps(pat)} matches an empty line, so it "
                                    "would annotate every failing command", "pattern-matches-empty"))
    msg = item.get("message")
    if isinstance(msg, str) and not any(d.kind == "bad-pattern" for d in out) \
            and all(isinstance(x, str) for k in ("pattern", "capture") for x in _as_list(item.get(k))):
        prob = template_problem(msg, (*sorted(groups), *ANNOTATION_DERIVED))
        if prob:
            out.append(doc.diag((*p, "message"), prob[1], prob[0]))
    tool = item.get("tool")
    if tools is not None and isinstance(tool, str) and tool not in tools:
        hint = did_you_mean(tool, tools) or f"; expected one of {', '.join(sorted(tools))}"
        out.append(doc.diag((*p, "tool"), f"unknown tool {tool!r} (not in the config's tools){hint}", "unknown-tool"))
    sup = item.get("supersedes")
    if ids is not None:
        for j, other in enumerate(_as_list(sup)):
            if isinstance(other, str) and other not in ids:
                where_ = (*p, "supersedes", j) if isinstance(sup, list) else (*p, "supersedes")
                out.append(doc.diag(where_, f"no annotation {other!r} to supersede{did_you_mean(other, ids)}",
                                    "unknown-id"))
    return out


def _as_list(v: Any) -> list[Any]:
    return [] if v is None else v if isinstance(v, list) else [v]


def runs_problems(doc: Doc) -> list[Diagnostic]:
    """Each program spec's ``runs:`` examples, read by the resolver's own reading of it: the
    command must run exactly what the example says (null: nothing)."""
    import shlex

    from guard.ir import UNKNOWN
    from guard.resolve.wrappers import from_spec

    out: list[Diagnostic] = []
    specs = doc.data.get("programs") if isinstance(doc.data, dict) else None
    for i, spec in enumerate(specs if isinstance(specs, list) else []):
        runs = spec.get("runs") if isinstance(spec, dict) else None
        if not isinstance(runs, dict):
            continue
        names = spec.get("program")
        name = str(names[0] if isinstance(names, list) and names else names)
        try:
            handler = from_spec(name, runs)
        except (TypeError, ValueError) as e:
            out.append(doc.diag(("programs", i, "runs"), f"cannot be read: {e}", "bad-runs"))
            continue
        for k, ex in enumerate(runs.get("examples") or []):
            if not isinstance(ex, dict) or not isinstance(ex.get("command"), str):
                continue  # the schema has said so
            try:
                argv = tuple(shlex.split(ex["command"]))
                want = ex.get("runs")
                wanted = None if want is None else tuple(shlex.split(want))
            except ValueError as e:
                out.append(doc.diag(("programs", i, "runs", "examples", k), f"cannot be split: {e}", "bad-example"))
                continue
            inner = handler(argv) if argv else None
            # what runs inside, as words; a part known only when it runs (fd's {}) shows as …
            got = None if inner is None else tuple(shlex.split(inner.shell)) if inner.shell is not None \
                else tuple(a.replace(UNKNOWN, "…") for a in inner.argv)
            if got != wanted:
                got = None if got is None else shlex.join(got)
                out.append(doc.diag(("programs", i, "runs", "examples", k),
                                    f"{ex['command']!r} runs {got!r}, the example says {want!r}", "runs-example"))
    return out


def _spec_blocks(doc: Doc, key: str) -> list[tuple[int, dict]]:
    """(index, block) of each program spec in ``doc`` with a mapping under ``key``."""
    specs = doc.data.get("programs") if isinstance(doc.data, dict) else None
    return [(i, spec[key]) for i, spec in enumerate(specs if isinstance(specs, list) else [])
            if isinstance(spec, dict) and isinstance(spec.get(key), dict)]


def _argv_example_problems(doc: Doc, key: str, seen_of: Callable[[dict, tuple[str, ...]], dict[str, Any]],
                           kind: str) -> list[Diagnostic]:
    """Each example of every program spec's ``key:`` block: its ``command`` split as a shell
    would, read by ``seen_of(block, argv)`` (the resolver's own reading), and every other key of
    the example compared with what that reading gives."""
    import shlex

    out: list[Diagnostic] = []
    for i, block in _spec_blocks(doc, key):
        for k, ex in enumerate(block.get("examples") or []):
            where_ = ("programs", i, key, "examples", k)
            if not isinstance(ex, dict) or not isinstance(ex.get("command"), str):
                continue  # the schema has said so
            try:
                argv = tuple(shlex.split(ex["command"]))
            except ValueError as e:
                out.append(doc.diag(where_, f"cannot be split: {e}", "bad-example"))
                continue
            if not argv:
                continue
            seen = seen_of(block, argv)
            wrong = [f"{name} {seen[name]!r}, the example says {want!r}" for name, want in ex.items()
                     if name != "command" and seen.get(name) != want]
            if wrong:
                out.append(doc.diag(where_, f"{ex['command']!r} reads with " + "; ".join(wrong), kind))
    return out


def archive_problems(doc: Doc) -> list[Diagnostic]:
    """Each program spec's ``archive:`` examples, read by the resolver's own reading of it: the
    command must read as the example says (mode, and the archive, folder, names and flags it
    gives)."""
    from guard.resolve.archives import read

    def seen_of(archive: dict, argv: tuple[str, ...]) -> dict[str, Any]:
        got = read(argv, archive)
        return {"mode": got.mode, "archive": got.archive, "folder": got.folder, "names": list(got.names),
                "recursive": got.recursive, "leaves_vcs": got.leaves_vcs}

    return _argv_example_problems(doc, "archive", seen_of, "archive-example")


def recipes_problems(doc: Doc) -> list[Diagnostic]:
    """Each program spec's ``recipes:`` examples, read by the resolver's own reading of the
    runner's argv: the command must name the recipes, file and folder the example says, or run
    none (``recipes: null``)."""
    from guard.resolve.recipes import plan

    def seen_of(spec: dict, argv: tuple[str, ...]) -> dict[str, Any]:
        got = plan(spec, argv, "/")
        return {"recipes": None if got.runs_nothing else list(got.names), "file": got.file or "",
                "folder": got.folder.lstrip("/"), "unknown": bool(got.unknown)}

    return _argv_example_problems(doc, "recipes", seen_of, "recipes-example")


def inline_problems(doc: Doc) -> list[Diagnostic]:
    """Each program spec's ``inline:`` examples, read by the resolver's own reading: the command
    must put its program where the example says (its text, a script file, standard input, or
    nowhere)."""
    import shlex

    from guard.resolve.inline.launch import source_of

    out: list[Diagnostic] = []
    specs = doc.data.get("programs") if isinstance(doc.data, dict) else None
    for i, spec in enumerate(specs if isinstance(specs, list) else []):
        inline = spec.get("inline") if isinstance(spec, dict) else None
        if not isinstance(inline, dict) or "dialect" not in inline:
            continue
        for k, ex in enumerate(inline.get("examples") or []):
            if not isinstance(ex, dict) or not isinstance(ex.get("command"), str):
                continue  # the schema has said so
            try:
                argv = tuple(shlex.split(ex["command"]))
            except ValueError as e:
                out.append(doc.diag(("programs", i, "inline", "examples", k), f"cannot be split: {e}", "bad-example"))
                continue
            try:
                src = source_of(argv[0], inline, argv) if argv else None
            except (TypeError, ValueError, AttributeError) as e:
                out.append(doc.diag(("programs", i, "inline"), f"cannot be read: {e}", "bad-inline"))
                break
            got = _shown_source(src)
            want = ("script", ex["script"]) if "script" in ex else ("stdin", "") if ex.get("stdin") else \
                ("code", ex["code"]) if ex.get("code") is not None else None
            if got != want:
                out.append(doc.diag(("programs", i, "inline", "examples", k),
                                    f"{ex['command']!r} reads {_said(got)}, the example says {_said(want)}",
                                    "inline-example"))
    return out


def _shown_source(src: object) -> tuple[str, str] | None:
    if src is None:
        return None
    kind, text = getattr(src, "kind", ""), getattr(src, "text", "")
    return (kind, "" if kind in ("stdin", "module") else text)


def _said(got: tuple[str, str] | None) -> str:
    if got is None:
        return "no program"
    kind, text = got
    return {"code": f"the code {text!r}", "script": f"the script {text!r}", "stdin": "standard input",
            "module": "a module"}.get(kind, kind)


def dialect_problems(doc: Doc) -> list[Diagnostic]:
    """Each dialect table's examples, run through the one analyser: a ``runs`` snippet must run
    exactly the command it names, an ``allows`` snippet none that guard judges. Its patterns must
    compile and its grammar must load."""
    import re

    from guard.resolve.inline.common import COMMAND_WORDS, looks_like_command
    from guard.resolve.inline.generic import analyze_dialect, dialect_of, parser_for

    out: list[Diagnostic] = []
    tables = doc.data.get("dialects") if isinstance(doc.data, dict) else None
    for i, table in enumerate(tables if isinstance(tables, list) else []):
        if not isinstance(table, dict) or not isinstance(table.get("grammar"), dict) or "dialect" not in table:
            continue  # the schema has said so
        where = ("dialects", i)
        try:
            d = dialect_of(table)
        except (re.error, TypeError, KeyError, ValueError, AttributeError) as e:
            out.append(doc.diag(where, f"cannot be read: {e}", "bad-dialect"))
            continue
        try:
            parser_for(d)
        except (ImportError, AttributeError, ValueError, TypeError) as e:
            out.append(doc.diag((*where, "grammar"), f"grammar {d.module}.{d.function} cannot be loaded: {e}",
                                "bad-grammar"))
            continue
        examples = table.get("examples") if isinstance(table.get("examples"), dict) else {}
        for k, ex in enumerate(examples.get("runs") or []):
            if not isinstance(ex, dict) or not isinstance(ex.get("code"), str):
                continue
            found, notes = analyze_dialect(table, ex["code"])
            got = [(f.kind, f.argv if f.kind == "argv" else (f.method, f.url) if f.kind == "http" else f.shell, f.cwd)
                   for f in found if f.kind in ("argv", "shell", "http")]
            want = [("argv", tuple(ex["argv"]), ex.get("cwd"))] if "argv" in ex else \
                [("http", tuple(ex["http"]), None)] if "http" in ex else [("shell", ex.get("shell"), ex.get("cwd"))]
            if got != want:
                out.append(doc.diag((*where, "examples", "runs", k),
                                    f"runs {_runs_said(got)}, the example says {_runs_said(want)}"
                                    + (f" ({notes[0]})" if notes else ""), "dialect-example"))
        for k, code in enumerate(examples.get("allows") or []):
            if not isinstance(code, str):
                continue
            found, _ = analyze_dialect(table, code)
            bad = [f for f in found if (f.kind == "argv" and f.argv and f.argv[0].rsplit("/", 1)[-1] in COMMAND_WORDS)
                   or (f.kind == "shell" and looks_like_command(f.shell))]
            if bad:
                out.append(doc.diag((*where, "examples", "allows", k),
                                    f"runs {_runs_said([(bad[0].kind, bad[0].argv or bad[0].shell, bad[0].cwd)])}, "
                                    "the example says it runs none", "dialect-example"))
    return out


def _runs_said(got: list) -> str:
    if not got:
        return "nothing"
    parts = []
    for kind, what, cwd in got:
        text = " ".join(what) if kind in ("argv", "http") else f"the shell line {what!r}"
        parts.append(text + (f" in {cwd}" if cwd else ""))
    return "; ".join(parts)
