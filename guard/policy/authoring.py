"""Rule authoring: rule files read with positions, checked against the published schema and for
what a schema cannot say, their examples run through the real engine, and ``guard rules``.

Everything here is cold path: the loader calls ``compile_for_load`` only when its cache misses.

* ``read_doc`` — one YAML file → data plus the line and column of every key and value.
* ``validate`` — a small validator for the JSON Schema subset ``schema/*.json`` use (type, enum,
  pattern, minLength, minItems, minProperties, required, properties, additionalProperties, items,
  anyOf, $ref) plus guard's ``x-`` annotations (x-kind, x-expected, x-reject, x-unknown).
* ``compile_files`` — layers → a ``Compiled``: the rule set, every mistake, every example result.
* ``main`` — ``guard rules list|lint|test [PATH…]``.
"""

from __future__ import annotations

import difflib
import json
import os
import string
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from guard.policy.loader import Layer, RuleSet, display, rule_layers

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
CATEGORIES = ("publish", "create", "absent", "mutate", "token-search", "read-probe")
PLACEHOLDERS = ("what", "prefix", "url", "path", "tool_call")
TOOL_PLACEHOLDERS = ("what", "prefix", "url", "path")
TOP_KEYS = ("rules", "config", "annotations", "programs")
DEFAULT_EXEMPT = ("create", "absent", "mutate", "read-probe")
EXAMPLE_CWD = "/workspace/app"
EXAMPLE_TREES = ("/workspace",)
EXAMPLE_ENV = {"HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin", "USER": "agent"}
REGEXISH = ("^", "$", ".*", ".+", "\\", "[", "(?", "|")

Path_ = tuple[Any, ...]  # a path into a document: ("rules", 3, "match", "repo")


# =========================================================================== diagnostics


@dataclass(frozen=True)
class Diagnostic:
    """One mistake: ``file:line:column: field: what was expected``."""

    file: str
    line: int
    col: int
    field: str
    message: str
    kind: str
    severity: str = "error"  # or "warning"

    def __str__(self) -> str:
        loc = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        text = ("warning: " if self.severity == "warning" else "") + self.message
        return f"{loc}: {self.field}: {text}" if self.field else f"{loc}: {text}"


def field_name(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(c in it for c in short)


def did_you_mean(word: Any, choices: Iterable[str]) -> str:
    """``; did you mean 'x'?`` — an abbreviation or a misspelling of one of ``choices`` — or ""."""
    word, choices = str(word), list(choices)
    abbrev = [c for c in choices if len(word) >= 2 and c != word and _subsequence(word.lower(), c.lower())]
    close = difflib.get_close_matches(word, abbrev, n=1, cutoff=0.0) if abbrev else []
    close = close or difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# =========================================================================== YAML with positions


@dataclass
class Doc:
    """One rule file: its data and where every key and value is (1-based line, column)."""

    path: Path
    name: str
    data: Any = None
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    problems: list[Diagnostic] = field(default_factory=list)

    def at(self, path: Path_, key: bool = False) -> tuple[int, int]:
        """Position of the value (or its key) at ``path``, else of the nearest enclosing one."""
        if key and path in self.keys:
            return self.keys[path]
        p = tuple(path)
        while p:
            if p in self.values:
                return self.values[p]
            p = p[:-1]
        return self.values.get((), (1, 1))

    def diag(self, path: Path_, message: str, kind: str, *, key: bool = False, severity: str = "error",
             field_path: Path_ | None = None) -> Diagnostic:
        line, col = self.at(path, key)
        return Diagnostic(self.name, line, col, field_name(field_path if field_path is not None else path),
                          message, kind, severity)


def read_doc(path: Path, name: str | None = None) -> Doc:
    """Read one YAML file. Syntax errors, tabs and duplicate keys become problems; never raises."""
    import yaml

    doc = Doc(path, name or display(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        msg = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        doc.problems.append(Diagnostic(doc.name, 0, 0, "", f"cannot read the file: {msg}", "unreadable"))
        return doc
    tabs = _tab_lines(text)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        if line in tabs:
            doc.problems.append(Diagnostic(doc.name, line, tabs[line], "", "a tab in the indentation: YAML indents with spaces only", "tab"))
        else:
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            context = getattr(e, "context", None)
            text_ = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
            doc.problems.append(Diagnostic(doc.name, line, col, "", text_, "yaml-syntax"))
        return doc
    if root is None:
        return doc
    ctor = yaml.constructor.SafeConstructor()
    doc.data = _walk(root, (), doc, ctor, 0)
    return doc


def _tab_lines(text: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        lead = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in lead and line.strip() and not line.lstrip().startswith("#"):
            out[n] = lead.index("\t") + 1
    return out


def _walk(node: Any, path: Path_, doc: Doc, ctor: Any, depth: int) -> Any:
    import yaml

    doc.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if depth > 60:
        doc.problems.append(doc.diag(path, "nested too deeply", "wrong-type"))
        return None
    if isinstance(node, yaml.ScalarNode):
        try:
            v = ctor.construct_object(node)
        except yaml.YAMLError:
            v = node.value
        return v if isinstance(v, str | int | float | bool | type(None)) else node.value
    if isinstance(node, yaml.SequenceNode):
        return [_walk(n, (*path, i), doc, ctor, depth + 1) for i, n in enumerate(node.value)]
    out: dict[Any, Any] = {}
    try:
        ctor.flatten_mapping(node)  # merge keys (<<)
    except yaml.YAMLError as e:
        doc.problems.append(doc.diag(path, f"bad merge key: {getattr(e, 'problem', e)}", "yaml-syntax"))
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode):
            doc.values[(*path, "?")] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            doc.problems.append(doc.diag((*path, "?"), "a key must be a plain word", "wrong-type"))
            continue
        key = knode.value
        kp = (*path, key)
        kpos = (knode.start_mark.line + 1, knode.start_mark.column + 1)
        if key in out:
            first = doc.keys[kp][0]
            doc.keys[kp] = kpos
            doc.problems.append(doc.diag(kp, f"duplicate key (first at line {first}); YAML would keep only the last",
                                         "duplicate-key", key=True))
        doc.keys[kp] = kpos
        out[key] = _walk(vnode, kp, doc, ctor, depth + 1)
    return out


# =========================================================================== schema validation


@cache
def schema(name: str) -> dict[str, Any]:
    """One of the published schemas: ``command-rules``, ``config`` or ``annotations``."""
    return json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Issue:
    path: Path_
    kind: str
    message: str
    key: bool = False  # point at the key rather than the value
    field: Path_ | None = None


_TYPES = {
    "string": "a string", "boolean": "true or false", "integer": "a whole number", "number": "a number",
    "null": "null", "object": "a mapping", "array": "a list",
}


def _resolve(s: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in s:
        ref = s["$ref"]
        node: Any = root
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        s = node
    return s


def _type_ok(v: Any, t: str | list[str]) -> bool:
    for one in [t] if isinstance(t, str) else t:
        if one == "string" and isinstance(v, str):
            return True
        if one == "boolean" and isinstance(v, bool):
            return True
        if one == "integer" and isinstance(v, int) and not isinstance(v, bool):
            return True
        if one == "number" and isinstance(v, int | float) and not isinstance(v, bool):
            return True
        if one == "null" and v is None:
            return True
        if one == "object" and isinstance(v, dict):
            return True
        if one == "array" and isinstance(v, list):
            return True
    return False


def describe(s: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    """What a schema wants, in words."""
    if "x-expected" in s:
        return s["x-expected"]
    s = _resolve(s, root)
    if "x-expected" in s:
        return s["x-expected"]
    if "enum" in s:
        vals = ["null" if v is None else str(v) for v in s["enum"]]
        return "one of " + ", ".join(vals)
    if "anyOf" in s:
        return " or ".join(describe(a, root) for a in s["anyOf"])
    t = s.get("type")
    if t is None:
        return "a value"
    return " or ".join(_TYPES.get(x, x) for x in ([t] if isinstance(t, str) else t))


def shown(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        text = json.dumps(v, ensure_ascii=False)
        return ("the string " + text) if len(text) < 60 else "the string " + text[:56] + '…"'
    return str(v)


def validate(v: Any, s: Mapping[str, Any], root: Mapping[str, Any], path: Path_ = ()) -> list[Issue]:
    """Every way ``v`` departs from schema ``s`` (one issue per place, the most precise one)."""
    kind = s.get("x-kind")
    s = _resolve(s, root)
    kind = kind or s.get("x-kind")
    if "x-reject" in s:
        return [Issue(path, kind or "unknown-key", s["x-reject"], key=True)]
    if "anyOf" in s:
        alts = [_resolve(a, root) for a in s["anyOf"]]
        results = [validate(v, a, root, path) for a in alts]
        if any(not r for r in results):
            return []
        typed = [r for a, r in zip(alts, results, strict=True) if "type" in a and _type_ok(v, a["type"])]
        if len(typed) == 1 and typed[0] and isinstance(v, list | dict):
            return typed[0]  # the value has the shape of one alternative: say what is wrong inside
        return [Issue(path, kind or "wrong-type", f"expected {describe(s, root)}, got {shown(v)}")]
    if "type" in s and not _type_ok(v, s["type"]):
        return [Issue(path, kind or "wrong-type", f"expected {describe(s, root)}, got {shown(v)}")]
    if "enum" in s and v not in s["enum"]:
        hint = did_you_mean(v, [str(e) for e in s["enum"]]) if isinstance(v, str) else ""
        return [Issue(path, kind or "bad-value", f"expected {describe(s, root)}, got {shown(v)}{hint}")]
    out: list[Issue] = []
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0):
            out.append(Issue(path, kind or "empty", f"expected {describe(s, root)}, got an empty string"))
        elif "pattern" in s:
            import re

            if not re.search(s["pattern"], v):
                out.append(Issue(path, kind or "bad-format", f"expected {describe(s, root)}, got {shown(v)}"))
    elif isinstance(v, list):
        if len(v) < s.get("minItems", 0):
            out.append(Issue(path, kind or "empty", f"expected {describe(s, root)}, got an empty list"))
        if "items" in s:
            for i, item in enumerate(v):
                out.extend(validate(item, s["items"], root, (*path, i)))
    elif isinstance(v, dict):
        if len(v) < s.get("minProperties", 0):
            what = "a rule whose match is empty would match every command" if s.get("x-kind-empty") == "empty-match" else "it is empty"
            out.append(Issue(path, s.get("x-kind-empty", "empty"), f"expected {describe(s, root)}; {what}"))
        for req in s.get("required", ()):
            if req not in v:
                sub = s.get("properties", {}).get(req, {})
                out.append(Issue(path, "missing-field", f"required: {describe(sub, root)}", field=(*path, req)))
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        for k, item in v.items():
            if k in props:
                out.extend(validate(item, props[k], root, (*path, k)))
            elif extra is False:
                known = [p for p in props if "x-reject" not in _resolve(props[p], root)]
                what = s.get("x-unknown", "a known key")
                hint = did_you_mean(k, known) or f"; expected one of {', '.join(known)}"
                out.append(Issue((*path, k), "unknown-fact" if "x-unknown" in s else "unknown-key",
                                 f"not {what}{hint}", key=True))
            elif isinstance(extra, dict):
                out.extend(validate(item, extra, root, (*path, k)))
    return out


def _validate_config(cfg: Any) -> list[Issue]:
    """The config schema, where ``KEY+:`` (add to the list of earlier layers) is checked as KEY."""
    root = schema("config")
    s = root["properties"]["config"]
    if not isinstance(cfg, dict):
        return validate(cfg, s, root, ("config",))
    props = s["properties"]
    plain = {k: v for k, v in cfg.items() if not (isinstance(k, str) and k.endswith("+"))}
    issues = validate(plain, s, root, ("config",))
    for k, v in cfg.items():
        if k in plain:
            continue
        base = k[:-1]
        if base not in props or _resolve(props[base], root).get("type") != "array":
            lists = [p for p in props if _resolve(props[p], root).get("type") == "array"]
            hint = did_you_mean(base, lists) or f"; expected one of {', '.join(x + '+' for x in lists)}"
            issues.append(Issue(("config", k), "unknown-key", f"{k!r} adds to a list, but {base!r} is not a config "
                                f"list{hint}", key=True))
            continue
        issues += validate(v, props[base], root, ("config", k))
    return issues


def check_schema(doc: Doc) -> tuple[list[Diagnostic], set[Path_]]:
    """Validate a whole document; also return the paths (rules[i] / config.key) that are bad."""
    data = doc.data
    if data is None:
        return [], set()
    if not isinstance(data, dict):
        return [doc.diag((), "expected a mapping with rules:, config: or annotations: at the top", "wrong-type")], {()}
    issues: list[Issue] = []
    for k, v in data.items():
        if k == "rules":
            issues += validate(v, schema("command-rules")["properties"]["rules"], schema("command-rules"), ("rules",))
        elif k == "config":
            issues += _validate_config(v)
        elif k == "programs":
            issues += validate(v, schema("programs")["properties"]["programs"], schema("programs"), ("programs",))
        elif k == "annotations":
            continue  # guard.act.stderr_rules owns these
        else:
            hint = did_you_mean(k, TOP_KEYS) or f"; expected one of {', '.join(TOP_KEYS)}"
            issues.append(Issue((k,), "unknown-key", f"not a known top-level key{hint}", key=True))
    bad = {i.path[:2] for i in issues}
    diags = [doc.diag(i.path, i.message, i.kind, key=i.key, field_path=i.field) for i in issues]
    return diags, bad


# =========================================================================== checks beyond the schema


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
            out.append(e.doc.diag(at("category"), f"required for a refusing rule: one of {', '.join(CATEGORIES)}",
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
    from guard.policy.programs import ALL_FACTS, possible_facts, spec_for

    names = m.get("program")
    names = names if isinstance(names, list) else [names]
    if not names or any(not isinstance(n, str) for n in names):
        return []
    out = []
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
            if isinstance(text, str):
                prob = template_problem(text, TOOL_PLACEHOLDERS)
                if prob:
                    out.append(doc.diag(("config", "tools", name), prob[1], prob[0]))
    return out


# =========================================================================== compiling


@dataclass
class ExampleResult:
    entry: Entry
    kind: str  # "refuse" or "allow"
    index: int
    command: str
    ok: bool
    why: str = ""

    def diagnostic(self) -> Diagnostic:
        path = (*self.entry.path, "examples", self.kind, self.index)
        return self.entry.doc.diag(path, self.why, "example-" + self.kind)


@dataclass
class Compiled:
    ruleset: RuleSet
    entries: list[Entry]
    docs: list[Doc]
    diagnostics: list[Diagnostic]  # everything but example results
    examples: list[ExampleResult] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)  # id → earlier sources

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def failures(self) -> list[ExampleResult]:
        return [r for r in self.examples if not r.ok]


def _merge_config(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    """Later keys replace earlier ones; mappings merge by name; ``KEY+: [...]`` adds to a list."""
    for k, v in new.items():
        if isinstance(k, str) and k.endswith("+") and isinstance(v, list):
            have = list(into.get(k[:-1]) or [])
            into[k[:-1]] = have + [x for x in v if x not in have]
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            into[k] = {**into[k], **v}
        else:
            into[k] = v


COMPILED_DROP = frozenset({"examples", "enabled"})
# Every rule set compiled here stays referenced for the life of the process: guard.policy caches
# the rule order keyed by id(), and a freed set's id may be reused by the next one.
_alive: list[RuleSet] = []


def compile_files(layers: list[Layer], *, examples: str = "all", skip: frozenset[tuple[str, int]] = frozenset(),
                  docs: dict[Path, Doc] | None = None) -> Compiled:
    """Read, check and layer the rule files; run examples of ``all``, ``unshipped`` or ``none`` rules.

    ``skip`` holds (file name, rule index) entries to leave out (rules whose examples fail)."""
    import hashlib

    docs = {} if docs is None else docs
    diags: list[Diagnostic] = []
    config: dict[str, Any] = {}
    programs: dict[str, dict[str, Any]] = {}
    entries: list[Entry] = []
    digest = hashlib.sha256()
    ordered: list[Doc] = []
    for n, layer in enumerate(layers):
        for f in layer.files:
            doc = docs.get(f) or read_doc(f)
            docs[f] = doc
            ordered.append(doc)
            try:
                digest.update(f.read_bytes())
            except OSError:
                pass
            diags.extend(doc.problems)
            found, bad = check_schema(doc)
            diags.extend(found)
            if not isinstance(doc.data, dict):
                continue
            cfg = doc.data.get("config")
            if isinstance(cfg, dict) and ("config",) not in bad:
                _merge_config(config, {k: v for k, v in cfg.items() if ("config", k) not in bad})
            diags.extend(config_problems(doc))
            specs = doc.data.get("programs")
            if isinstance(specs, list):
                for i, spec in enumerate(specs):
                    if isinstance(spec, dict) and ("programs", i) not in bad:
                        names = spec.get("program")
                        for name in names if isinstance(names, list) else [names]:
                            programs[str(name)] = {k: v for k, v in spec.items() if k not in ("program", "description")}
            rules = doc.data.get("rules")
            if isinstance(rules, list):
                for i, r in enumerate(rules):
                    if isinstance(r, dict):
                        entries.append(Entry(r, doc, i, n, layer.shipped, ("rules", i) not in bad))
    tools = config.get("tools") if isinstance(config.get("tools"), dict) else {}
    from guard.policy.programs import compile_specs

    specs = compile_specs(programs)
    effective: dict[str, dict[str, Any]] = {}
    replaced: dict[str, list[str]] = {}
    disabled: list[dict[str, str]] = []
    seen: dict[tuple[int, str], Entry] = {}
    for e in entries:
        rid = e.id
        if (e.layer, rid) in seen and "id" in e.rule:
            first = seen[(e.layer, rid)]
            diags.append(e.doc.diag((*e.path, "id"), f"duplicate id {rid!r}: already defined at {first.source} in the "
                                    "same layer (ids are unique within a layer; a later layer may replace one)",
                                    "duplicate-id"))
            continue
        seen[(e.layer, rid)] = e
        if (e.doc.name, e.index) in skip:
            continue
        if not e.valid:  # still say what the schema cannot, so one pass shows every mistake
            diags.extend(rule_problems(e, e.rule, tools, specs))
            continue
        if e.rule.get("enabled", True) is False:
            if rid in effective:
                disabled.append({"id": rid, "source": effective.pop(rid)["source"], "by": e.source})
            else:
                diags.append(e.doc.diag((*e.path, "enabled"), f"disables {rid!r}, which no earlier layer defines",
                                        "disable-nothing", severity="warning"))
            continue
        if "match" not in e.rule:
            if rid not in effective:
                diags.append(e.doc.diag(e.path, f"required: a match (no earlier layer defines a rule {rid!r} for this "
                                        "entry to change)", "missing-field", field_path=(*e.path, "match")))
                continue
            merged = {**effective[rid], **{k: v for k, v in e.rule.items() if k not in COMPILED_DROP}}
        else:
            merged = {k: v for k, v in e.rule.items() if k not in COMPILED_DROP}
        found = rule_problems(e, merged, tools, specs)
        diags.extend(found)
        if any(d.severity == "error" for d in found):
            e.valid = False
            continue
        if rid in effective:
            replaced.setdefault(rid, []).append(effective[rid]["source"])
        merged["source"] = e.source
        merged["examples"] = e.rule.get("examples") or {}
        effective[rid] = merged  # a replacement keeps its place in the order
    rules = [{k: v for k, v in r.items() if k != "examples"} for r in effective.values()]
    rs = RuleSet(rules, config, digest.hexdigest()[:16], [str(f) for layer in layers for f in layer.files],
                 [str(d) for d in diags if d.severity == "error"], disabled=disabled, programs=programs)
    out = Compiled(rs, entries, ordered, diags, replaced=replaced)
    _alive.append(rs)
    if examples == "all" or (examples == "unshipped" and not rs.errors):  # lint runs them despite mistakes
        live = {r["source"]: r for r in effective.values()}
        for e in entries:
            if e.source in live and (examples == "all" or not e.shipped):
                out.examples.extend(run_rule_examples(e, rs))
    return out


def compile_for_load(layers: list[Layer]) -> RuleSet:
    """What the loader caches: the checked set, without rules (not shipped) whose examples fail."""
    docs: dict[Path, Doc] = {}
    first = compile_files(layers, examples="unshipped", docs=docs)
    if first.ruleset.errors or not first.failures:
        return first.ruleset
    skip = frozenset((r.entry.doc.name, r.entry.index) for r in first.failures)
    again = compile_files(layers, examples="none", skip=skip, docs=docs)
    lines = []
    for name, index in sorted(skip):
        fail = next(r for r in first.failures if (r.entry.doc.name, r.entry.index) == (name, index))
        lines.append(f"{fail.entry.source}: rule {fail.entry.id} not loaded: its examples fail "
                     f"(examples.{fail.kind}[{fail.index}]); run guard rules test {fail.entry.doc.name}")
    again.ruleset.dropped = lines
    return again.ruleset


# =========================================================================== examples


def example_context(ex: Any) -> tuple[str, Any]:
    """(command, Context) for one example: a string, or {command, cwd, tree, env}."""
    from guard.context import Context

    if isinstance(ex, str):
        return ex, Context(cwd=EXAMPLE_CWD, trees=EXAMPLE_TREES, env=dict(EXAMPLE_ENV))
    tree = ex.get("tree") or list(EXAMPLE_TREES)
    env = {**EXAMPLE_ENV, **{str(k): str(v) for k, v in (ex.get("env") or {}).items()}}
    trees = (tree,) if isinstance(tree, str) else tuple(tree)
    return ex["command"], Context(cwd=ex.get("cwd") or EXAMPLE_CWD, trees=trees, env=env)


def analyze_with(command: str, ctx: Any, rs: RuleSet) -> tuple[Any, Any, Any]:
    """parse → resolve → classify with a given rule set (what guard.engine.analyze does with the
    loaded one); (verdict, resolution, context)."""
    from guard import parse, policy, resolve

    ctx = policy.effective_context(ctx, rs)
    script = parse.parse(command)
    res = resolve.resolve(script, ctx, parse.parse)
    return policy.classify(script, res, ctx, rs), res, ctx


def _facts_text(facts: Mapping[str, Any]) -> str:
    from guard.ir import UNKNOWN

    parts = []
    for k, v in facts.items():
        if v in (None, False, "", [], set()) or k in ("args", "flags", "configs", "repo_path", "dest_path"):
            continue
        parts.append(f"{k}={v}".replace(UNKNOWN, "…"))
    return " ".join(parts)


def run_rule_examples(e: Entry, rs: RuleSet) -> list[ExampleResult]:
    ex = e.rule.get("examples") or {}
    rule = next((r for r in rs.rules if r.get("source") == e.source), None)
    if rule is None or not isinstance(ex, dict):
        return []
    out = []
    for kind in ("refuse", "allow"):
        for i, item in enumerate(ex.get(kind) or []):
            command, ctx = example_context(item)
            try:
                ok, why = judge_example(rule, kind, command, ctx, rs)
            except Exception as err:  # noqa: BLE001 — an engine bug is a failing example, not a crash
                ok, why = False, f"the engine raised {type(err).__name__}: {err}"
            out.append(ExampleResult(e, kind, i, command, ok, why))
    return out


def judge_example(rule: Mapping[str, Any], kind: str, command: str, ctx: Any, rs: RuleSet) -> tuple[bool, str]:
    """Does one example hold? (ok, why not)."""
    v, res, ectx = analyze_with(command, ctx, rs)
    rid = rule["id"]
    allow_rule = rule.get("verdict") == "allow"
    q = json.dumps(command, ensure_ascii=False)
    by = f"{v.rule} ({v.category}, {v.rule_source})" if v.verdict == "refuse" else ""
    if allow_rule:
        if kind == "allow" and v.verdict == "refuse":
            return False, f"{q} was refused by {by}; expected allow rule {rid} to let it through" + _why_not(rule, res, ectx, rs)
        if kind == "refuse" and v.verdict != "refuse":
            return False, f"{q} was allowed; expected it refused (allow rule {rid} must not exempt it)"
        return True, ""
    if kind == "allow":
        if v.verdict == "refuse" and v.rule == rid:
            return False, f"{q} was refused by {rid}; expected {rid} not to refuse it"
        return True, ""
    if v.verdict == "refuse" and v.rule == rid:
        return True, ""
    if v.verdict == "refuse":
        beaten = _beaten_by(rule, v, res, ectx, rs)
        if beaten:
            return False, f"{q} was refused by {by}, not by {rid}: {beaten}"
        return False, f"{q} was refused by {by}, not by {rid}" + _why_not(rule, res, ectx, rs)
    return False, f"{q} was allowed; expected {rid} to refuse it" + _why_not(rule, res, ectx, rs)


def _invocation_facts(res: Any, ctx: Any, rs: RuleSet) -> list[tuple[Any, dict[str, Any]]]:
    from guard import policy
    from guard.policy.facts import facts_for

    world = policy.world_of(ctx, rs)
    return [(inv, facts_for(inv, world)) for inv in res.invocations]


def _beaten_by(rule: Mapping[str, Any], v: Any, res: Any, ctx: Any, rs: RuleSet) -> str:
    """When ``rule`` matches too but another rule won: why that one wins, else ""."""
    from guard.policy.match import match

    other = next((r for r in rs.rules if r.get("id") == v.rule), {})
    pairs = _invocation_facts(res, ctx, rs)
    same = [f for inv, f in pairs if inv == v.matched]
    if any(match(rule["match"], f) == "yes" for f in same):
        mine, theirs = int(rule.get("priority", 0)), int(other.get("priority", 0))
        if theirs != mine:
            return (f"both match and {v.rule} is tried first (priority {theirs} > {mine}); "
                    "raise this rule's priority or narrow the other")
        return (f"both match and {v.rule} is tried first (same priority, earlier in the effective order); "
                "give this rule a higher priority")
    if any(match(rule["match"], f) == "yes" for _, f in pairs):
        return (f"{rid_of(rule)} matches another part of the command, and {v.category} outranks "
                f"{rule.get('category')} (precedence {' > '.join(CATEGORIES)})")
    return ""


def rid_of(rule: Mapping[str, Any]) -> str:
    return str(rule.get("id"))


def _why_not(rule: Mapping[str, Any], res: Any, ctx: Any, rs: RuleSet) -> str:
    """Why a rule did not decide: it does not match (with the facts), or an allow rule exempts it."""
    from guard.ir import UNKNOWN
    from guard.policy.match import match

    pairs = _invocation_facts(res, ctx, rs)
    if not pairs:
        return "; the command runs no program guard sees"
    cat = rule.get("category")
    for inv, facts in pairs:
        m = match(rule["match"], facts)
        if m is None:
            continue
        if m == "unknown":
            return f"; {rule['id']} matches {' '.join(inv.argv).replace(UNKNOWN, '…')} only if an unknown path is in the tree"
        for other in rs.rules:
            if other.get("verdict") == "allow" and cat in (other.get("exempts") or DEFAULT_EXEMPT) \
                    and match(other["match"], facts) == "yes":
                return f"; {rule['id']} matches but allow rule {other['id']} ({other.get('source')}) exempts it"
        return f"; {rule['id']} matches {' '.join(inv.argv).replace(UNKNOWN, '…')}"
    shown_ = "; ".join(f"{' '.join(inv.argv)}: {_facts_text(f)}".replace(UNKNOWN, "…") for inv, f in pairs[:3])
    return f"; {rule['id']} does not match it (facts: {shown_})"


# =========================================================================== stderr rules


def stderr_paths(paths: list[str] | None, env: Mapping[str, str]) -> list[str]:
    """The stderr rule files and folders: the annotator's defaults, or the shipped ones plus PATHs."""
    from guard.act import stderr_rules

    if paths is None:
        return stderr_rules.default_paths(env)
    shipped = stderr_rules.shipped_dir()
    base = [str(shipped)] if shipped else []
    shipped_files = {p.resolve() for p in stderr_rules.expand(base)}
    extra = [str(p) for p in stderr_rules.expand(paths) if p.resolve() not in shipped_files]
    return base + extra


def stderr_lint(paths: list[str], docs: Mapping[Path, Doc]) -> list[str]:
    """Mistakes in stderr rules, from the annotator's own loader, plus patterns that match an
    empty line (they would annotate every failing command)."""
    from guard.act.stderr_rules import load_with_problems

    rules, problems = load_with_problems(paths, cache=False)
    out = list(problems)
    by_path = {p.resolve(): d for p, d in docs.items()}
    for r in rules:
        for j, (pat, rx) in enumerate(zip(r.patterns, r.compiled, strict=False)):
            if rx.search(b"") is not None:
                doc = by_path.get(Path(r.source).resolve())
                idx = _annotation_index(doc, r.id)
                if doc is not None and idx is not None:
                    multi = isinstance(doc.data["annotations"][idx].get("pattern"), list)
                    path = ("annotations", idx, "pattern", j) if multi else ("annotations", idx, "pattern")
                    out.append(str(doc.diag(path, f"{json.dumps(pat)} matches an empty line, so it would annotate "
                                            "every failing command", "pattern-matches-empty")))
                else:
                    out.append(f"{r.source}:{r.line}: {r.id}: pattern {json.dumps(pat)} matches an empty line")
    return out


def _annotation_index(doc: Doc | None, rid: str) -> int | None:
    if doc is None or not isinstance(doc.data, dict) or not isinstance(doc.data.get("annotations"), list):
        return None
    for i, a in enumerate(doc.data["annotations"]):
        if isinstance(a, dict) and a.get("id") == rid:
            return i
    return None


def stderr_rules_for(paths: list[str]) -> tuple[list[Any], list[str]]:
    from guard.act.stderr_rules import load_with_problems

    return load_with_problems(paths, cache=False)


# =========================================================================== guard rules …

USAGE = "usage: guard rules list|lint|test [PATH…]"


@dataclass
class Target:
    """What a ``guard rules`` invocation looks at."""

    layers: list[Layer]
    stderr: list[str]
    only: set[Path] | None  # report on these files only (PATHs given); None: all
    missing: list[str] = field(default_factory=list)


def target(paths: list[str], env: Mapping[str, str]) -> Target:
    """No PATH: the effective set (shipped + GUARD_RULES + GUARD_CONFIG). PATHs: the shipped rules
    plus PATHs in place of GUARD_RULES, with GUARD_CONFIG; mistakes are reported in PATHs only."""
    config = env.get("GUARD_CONFIG") or None
    if paths:
        layers = rule_layers(tuple(paths), config)
        only = {f.resolve() for layer in layers[1:] for f in layer.files}
        return Target(layers, stderr_paths(paths, env), only)
    extra = tuple(p for p in env.get("GUARD_RULES", "").split(":") if p)
    missing = [p for p in extra if not os.path.exists(p)]
    if config and not os.path.exists(config):
        missing.append(config)
    return Target(rule_layers(extra, config), stderr_paths(None, env), None, missing)


def _mine(t: Target, name: str) -> bool:
    if t.only is None:
        return True
    for f in t.only:
        if display(f) == name or str(f) == name:
            return True
    try:
        return Path(name.split(":", 1)[0]).resolve() in t.only
    except OSError:
        return False


def _stderr_mine(t: Target, line: str) -> bool:
    if t.only is None:
        return True
    head = line.split(":", 1)[0]
    try:
        return Path(head).resolve() in t.only
    except OSError:
        return True


def cmd_lint(t: Target, out: Any) -> int:
    docs: dict[Path, Doc] = {}
    c = compile_files(t.layers, examples="all", docs=docs)
    lines = [f"{p}: no such file or folder (named in GUARD_RULES or GUARD_CONFIG)" for p in t.missing]
    diags = [d for d in c.diagnostics if _mine(t, d.file)]
    diags += [r.diagnostic() for r in c.failures if _mine(t, r.entry.doc.name)]
    for p in stderr_lint(t.stderr, docs):
        if _stderr_mine(t, p):
            lines.append(p)
    errors = [d for d in diags if d.severity == "error"]
    for d in sorted(diags, key=lambda d: (d.file, d.line, d.col)):
        print(d, file=out)
    for line in lines:
        print(line, file=out)
    n = len(errors) + len(lines)
    nfiles = len({f for layer in t.layers for f in layer.files if t.only is None or f.resolve() in t.only})
    if n:
        print(f"{n} mistake{'s' if n != 1 else ''} in the rules", file=out)
        return 1
    print(f"rules ok: {nfiles} file{'s' if nfiles != 1 else ''}, {len(c.ruleset.rules)} command rules in effect", file=out)
    return 0


def cmd_test(t: Target, out: Any) -> int:
    docs: dict[Path, Doc] = {}
    c = compile_files(t.layers, examples="all", docs=docs)
    errors = [d for d in c.errors if _mine(t, d.file)]
    for d in errors:
        print(d, file=out)
    results = [r for r in c.examples if _mine(t, r.entry.doc.name)]
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(r.diagnostic(), file=out)
    rules, problems = stderr_rules_for(t.stderr)
    from guard.act.annotate import run_examples

    mine = [r for r in rules if _stderr_mine(t, r.source)]
    sfail = [p for p in problems if _stderr_mine(t, p)] + run_examples(mine)
    for line in sfail:
        print(line, file=out)
    nex = sum(len(r.must) + len(r.must_not) for r in mine)
    bad = len(errors) + len(failed) + len(sfail)
    print(f"{len(results) - len(failed)}/{len(results)} command examples passed, "
          f"{len(mine)} stderr rules ({nex} examples): {len(sfail)} failure{'s' if len(sfail) != 1 else ''}", file=out)
    return 1 if bad else 0


def cmd_list(t: Target, out: Any) -> int:
    c = compile_files(t.layers, examples="none")
    if c.ruleset.errors:
        print(f"the rule files hold {len(c.ruleset.errors)} mistake(s), first: {c.ruleset.errors[0]}", file=out)
        print("guard keeps using the last good rule set until they are fixed (guard rules lint)", file=out)
        rs = c.ruleset
    else:
        rs = compile_for_load(t.layers)  # what the loader would use: without rules whose examples fail
    width = max([len(r["id"]) for r in rs.rules] + [4])
    print(f"{'id':<{width}}  {'verdict':<12}  {'tool':<13}  source", file=out)
    for r in rs.rules:
        verdict = "allow" if r.get("verdict") == "allow" else str(r.get("category"))
        note = ""
        if r["id"] in c.replaced:
            note = "  (replaces " + ", ".join(c.replaced[r["id"]]) + ")"
        print(f"{r['id']:<{width}}  {verdict:<12}  {r.get('tool') or '-':<13}  {r['source']}{note}", file=out)
    for d in rs.disabled:
        print(f"{d['id']:<{width}}  {'disabled':<12}  {'-':<13}  {d['source']}  (by {d['by']})", file=out)
    for line in rs.dropped:
        print(f"not loaded: {line}", file=out)
    rules, _ = stderr_rules_for(t.stderr)
    if rules:
        print(f"\n{'annotation':<{width}}  {'category':<12}  {'tool':<13}  source", file=out)
        for r in rules:
            print(f"{r.id:<{width}}  {r.category:<12}  {r.tool or '-':<13}  {display(Path(r.source))}:{r.line}", file=out)
    return 0


def main(argv: list[str]) -> int:
    """``guard rules list|lint|test [PATH…]``; ``argv`` starts with the subcommand."""
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    if not argv or argv[0] not in ("list", "lint", "test"):
        print(f"guard: {USAGE}", file=sys.stderr)
        return 2
    sub, paths = argv[0], argv[1:]
    for p in paths:
        if p.startswith("-"):
            print(f"guard: rules {sub}: unknown option {p}; {USAGE}", file=sys.stderr)
            return 2
        if not os.path.exists(p):
            print(f"guard: rules {sub}: {p}: no such file or folder", file=sys.stderr)
            return 2
    t = target(paths, os.environ)
    try:
        return {"list": cmd_list, "lint": cmd_lint, "test": cmd_test}[sub](t, sys.stdout)
    except BrokenPipeError:
        return 0
