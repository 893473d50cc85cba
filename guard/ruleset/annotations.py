"""Stderr annotation rules: YAML files with a top-level ``annotations:`` list.

One rule::

    annotations:
      - id: git-terminal-prompts-disabled       # [a-z0-9-], unique
        tool: git_clone                          # the tool the message points at (audit)
        category: credential                     # free word (audit)
        pattern: "fatal: could not read ..."     # RE2; or a list: every one must match a line
        capture: ["Running command git clone (?P<url>...)"]  # optional: need not match; the
                                                 # last match of each fills named groups
        when:                                    # all optional; all must hold
          env: {GIT_TERMINAL_PROMPT: "0"}        # value, list of values, or "*" (set, non-empty)
          cwd_in_tree: true
          program: [git]                         # basename of the program run
        supersedes: [other-rule-id]              # shown instead of these when both fire
        message: "git could not authenticate to {url} ..."   # {name}: a named group, or
                                                 # url/host/repo/program (derived)
        examples:
          must: ["stderr text", {stderr: "...", env: {...}, cwd_in_tree: true, program: git}]
          must_not: [...]

Files whose top level has no ``annotations`` key are not stderr rules and are skipped silently.
A file that is not valid YAML gets one warning line (only if it mentions ``annotations:``), a
broken rule gets one warning line naming file:line:column and the field; every other rule still
loads. Parsed files are cached as JSON under ``$XDG_CACHE_HOME/guard/stderr-rules/`` keyed by a
hash of their bytes, so running a command never imports yaml once the rules have been seen.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

from guard.ruleset import needles
from guard.ruleset import paths as rulepaths
from guard.ruleset.model import Example, StderrRule
from guard.system.cachedir import read_private, write_private

try:  # the built-in module: hashlib loads OpenSSL (~3 ms) on the path of every command with stderr
    from _sha256 import sha256
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost ~2-7 ms to import on the command path
    from pathlib import Path
    from typing import Any

SCHEMA = "stderr-rules/3"


# --------------------------------------------------------------------------- locating files


def shipped_dir() -> Path | None:
    from pathlib import Path

    d = rulepaths.stderr_dir()
    return Path(d) if d is not None else None


default_paths = rulepaths.stderr_paths
_expand_str = rulepaths.expand


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    from pathlib import Path

    out: list[Path] = []
    for p in paths:
        path = Path(rulepaths.entry_path(os.fspath(p)))
        if path.is_dir():
            out.extend(sorted(q for q in path.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file()))
        else:
            out.append(path)
    return out


# --------------------------------------------------------------------------- loading


def load_rules(
    paths: Iterable[str | os.PathLike[str]] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    warn: bool = True,
    cache: bool = True,
) -> list[StderrRule]:
    """Compiled stderr rules from ``paths`` (files or folders); by default the shipped ones plus
    ``GUARD_RULES``. Problems are printed as one warning line each (``warn``) and skipped."""
    env = os.environ if env is None else env
    if paths is None:
        paths = default_paths(env)
    rules, problems = load_with_problems(paths, env=env, cache=cache)
    if warn:
        for p in problems:
            _warn(p)
    return rules


def load_with_problems(
    paths: Iterable[str | os.PathLike[str]], *, env: Mapping[str, str] | None = None, cache: bool = True
) -> tuple[list[StderrRule], list[str]]:
    from guard.ruleset.patterns import compile_pattern

    env = os.environ if env is None else env
    rules: list[StderrRule] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for path in _expand_str(paths):
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as e:
            problems.append(f"{path}: cannot read stderr rules: {e.strerror or e}")
            continue
        data = _parsed(path, raw, env, cache)
        problems.extend(data["problems"])
        for d in data["rules"]:
            try:
                compiled = tuple(compile_pattern(p) for p in d["patterns"])
                captured = tuple(compile_pattern(p) for p in d.get("captures", ()))
            except ValueError as e:  # checked at parse time; only a different re2 gets here
                problems.append(f"{path}:{d['line']}: {d['id']}: pattern: {e}")
                continue
            if d["id"] in seen:
                problems.append(f"{path}:{d['line']}: id: {d['id']!r} already defined in {seen[d['id']]}")
                continue
            seen[d["id"]] = str(path)
            rules.append(_from_dict(d, str(path), compiled, captured))
    return rules, problems


def _warn(msg: str) -> None:
    try:
        os.write(2, ("guard: warning: " + msg.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


cache_dir = needles.cache_dir


def _parsed(path: str, raw: bytes, env: Mapping[str, str], use_cache: bool) -> dict[str, Any]:
    key = sha256(SCHEMA.encode() + b"\0" + str(path).encode() + b"\0" + raw).hexdigest()
    cfile = os.path.join(cache_dir(env), f"{key}.json")
    if use_cache:
        cached = read_private(cfile)
        if cached is not None:
            try:
                return json.loads(cached)
            except (ValueError, RecursionError):
                pass
    rules, problems = parse_text(raw.decode("utf-8", "replace"), str(path))
    data = {"rules": rules, "problems": problems}
    if use_cache:
        write_private(cfile, json.dumps(data).encode())
    return data


def typed(d: Mapping[str, Any], compile_pattern: Any) -> StderrRule:
    """A checked runtime dict (with its ``source``) as a ``StderrRule``, patterns compiled."""
    return _from_dict(d, d.get("source", ""), tuple(compile_pattern(p) for p in d["patterns"]),
                      tuple(compile_pattern(p) for p in d.get("captures", ())))


def _from_dict(
    d: Mapping[str, Any], source: str, compiled: tuple[Any, ...], captured: tuple[Any, ...] = ()
) -> StderrRule:
    def ex(items: list[Mapping[str, Any]]) -> tuple[Example, ...]:
        return tuple(Example(**e) for e in items)

    return StderrRule(
        id=d["id"],
        patterns=tuple(d["patterns"]),
        message=d["message"],
        captures=tuple(d.get("captures", ())),
        tool=d.get("tool"),
        category=d.get("category") or "annotation",
        env=tuple((k, tuple(v)) for k, v in d.get("env", [])),
        cwd_in_tree=d.get("cwd_in_tree"),
        programs=tuple(d.get("programs", ())),
        supersedes=tuple(d.get("supersedes", ())),
        must=ex(d.get("must", [])),
        must_not=ex(d.get("must_not", [])),
        source=source,
        line=d.get("line", 0),
        compiled=compiled,
        compiled_captures=captured,
    )


# --------------------------------------------------------------------------- parsing (cold path)


def parse_text(text: str, path: str = "<rules>") -> tuple[list[dict[str, Any]], list[str]]:
    """Check one file's ``annotations:`` with the reader, schema and checks every rule file goes
    through; return (runtime rule dicts, every mistake as ``file:line:column: field: …``). A
    broken rule is left out, the others load. Never raises."""
    from guard.ruleset import checks, schema
    from guard.ruleset.read import read_doc

    doc = read_doc(None, path, text=text)
    if doc.problems and not _mentions_annotations(text):
        return [], []  # not ours (a command-rules file, say): its own loader reports it
    if not isinstance(doc.data, dict) or "annotations" not in doc.data:
        return [], [f"{d}; the file's annotations are skipped" for d in doc.problems if _mentions_annotations(text)]
    found, bad = schema.check_schema(doc, only=("annotations",))
    problems = [str(d) for d in doc.problems] + [str(d) for d in found if d.severity == "error"]
    items = doc.data.get("annotations")
    if not isinstance(items, list) or ("annotations",) in bad:
        return [], problems
    rules: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i, item in enumerate(items):
        if ("annotations", i) in bad or not isinstance(item, dict):
            continue
        mistakes = checks.annotation_problems(doc, i, item)
        if mistakes:
            problems += [str(d) for d in mistakes]
            continue
        if item["id"] in ids:
            problems.append(str(doc.diag(("annotations", i, "id"), f"{item['id']!r} is defined twice", "duplicate-id")))
            continue
        ids.add(item["id"])
        rules.append(runtime_dict(item, doc.at(("annotations", i))[0]))
    return rules, problems


def _mentions_annotations(text: str) -> bool:
    return re.search(r"(?m)^\s*annotations\s*:", text) is not None


def _strings(v: Any) -> list[str]:
    return [] if v is None else [str(v)] if isinstance(v, str) else [str(x) for x in v]


def runtime_dict(item: Mapping[str, Any], line: int) -> dict[str, Any]:
    """A checked annotation as the annotator keeps it (JSON-able; ``_from_dict`` makes it typed)."""
    d: dict[str, Any] = {"id": item["id"], "patterns": _strings(item["pattern"]),
                         "message": " ".join(str(item["message"]).split())}
    if item.get("capture") is not None:
        d["captures"] = _strings(item["capture"])
    d["line"] = line
    for opt in ("tool", "category"):
        if item.get(opt) is not None:
            d[opt] = item[opt]
    d["supersedes"] = _strings(item.get("supersedes"))
    when = item.get("when") or {}
    if "env" in when:
        d["env"] = [[str(k), _strings(v)] for k, v in (when["env"] or {}).items()]
    if "cwd_in_tree" in when:
        d["cwd_in_tree"] = when["cwd_in_tree"]
    if "program" in when:
        d["programs"] = _strings(when["program"])
    ex = item.get("examples") or {}
    for kind in ("must", "must_not"):
        d[kind] = [{"stderr": e} if isinstance(e, str) else
                   {**e, **({"env": {str(k): str(v) for k, v in (e.get("env") or {}).items()}} if "env" in e else {})}
                   for e in ex.get(kind) or []]
    return d
