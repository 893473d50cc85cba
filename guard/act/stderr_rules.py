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
import string
from collections.abc import Iterable, Mapping

from guard.act import rulefiles
from guard.record import dataclass, field

try:  # the built-in module: hashlib loads OpenSSL (~3 ms) on the path of every command with stderr
    from _sha256 import sha256
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost ~2-7 ms to import on the command path
    from pathlib import Path
    from typing import Any

SCHEMA = "stderr-rules/2"
DERIVED = ("url", "host", "repo", "program")
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_KEYS = {"id", "tool", "category", "pattern", "capture", "when", "supersedes", "message", "examples", "description"}
_WHEN = {"env", "cwd_in_tree", "program"}


@dataclass(frozen=True)
class Example:
    stderr: str
    env: Mapping[str, str] | None = None
    cwd_in_tree: bool | None = None
    program: str | None = None
    message_contains: str | None = None
    command: str | None = None


@dataclass(frozen=True)
class StderrRule:
    id: str
    patterns: tuple[str, ...]
    message: str
    captures: tuple[str, ...] = ()
    tool: str | None = None
    category: str = "annotation"
    env: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cwd_in_tree: bool | None = None
    programs: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    must: tuple[Example, ...] = ()
    must_not: tuple[Example, ...] = ()
    source: str = ""
    line: int = 0
    compiled: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    compiled_captures: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def applies(self, env: Mapping[str, str], cwd_in_tree: bool, programs: Iterable[str]) -> bool:
        for name, values in self.env:
            have = env.get(name)
            if have is None:
                return False
            if "*" in values:
                if not have:
                    return False
            elif have not in values:
                return False
        if self.cwd_in_tree is not None and self.cwd_in_tree != cwd_in_tree:
            return False
        if self.programs and not set(self.programs) & set(programs):
            return False
        return True


# --------------------------------------------------------------------------- locating files


def shipped_dir() -> Path | None:
    from pathlib import Path

    d = rulefiles.shipped_dir()
    return Path(d) if d is not None else None


default_paths = rulefiles.default_paths
_expand_str = rulefiles.expand


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    from pathlib import Path

    out: list[Path] = []
    for p in paths:
        path = Path(p)
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
    from guard.act.matcher import compile_pattern

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


cache_dir = rulefiles.cache_dir


def _parsed(path: str, raw: bytes, env: Mapping[str, str], use_cache: bool) -> dict[str, Any]:
    key = sha256(SCHEMA.encode() + b"\0" + str(path).encode() + b"\0" + raw).hexdigest()
    cfile = os.path.join(cache_dir(env), f"{key}.json")
    if use_cache:
        try:
            with open(cfile, encoding="utf-8") as fh:
                return json.loads(fh.read())
        except (OSError, ValueError):
            pass
    rules, problems = parse_text(raw.decode("utf-8", "replace"), str(path))
    data = {"rules": rules, "problems": problems}
    if use_cache:
        try:
            os.makedirs(os.path.dirname(cfile), exist_ok=True)
            tmp = f"{cfile[:-5]}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(data))
            os.replace(tmp, cfile)
        except OSError:
            pass
    return data


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


class _Bad(Exception):
    def __init__(self, node: Any, field_name: str, msg: str) -> None:
        super().__init__(msg)
        self.node = node
        self.field = field_name


def _pos(path: str, node: Any) -> str:
    mark = getattr(node, "start_mark", None)
    if mark is None:
        return path
    return f"{path}:{mark.line + 1}:{mark.column + 1}"


def parse_text(text: str, path: str = "<rules>") -> tuple[list[dict[str, Any]], list[str]]:
    """Validate one file's text; return (rule dicts, problems). Never raises."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        if not re.search(r"(?m)^\s*annotations\s*:", text):
            return [], []  # not ours (a command-rules file, say): its own loader reports it
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return [], [f"{where}: not valid YAML ({problem}); its stderr rules are skipped"]
    if not isinstance(root, yaml.MappingNode):
        return [], []
    top = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    node = top.get("annotations")
    if node is None:
        return [], []
    if not isinstance(node, yaml.SequenceNode):
        return [], [f"{_pos(path, node)}: annotations: must be a list of rules"]
    rules: list[dict[str, Any]] = []
    problems: list[str] = []
    ids: set[str] = set()
    for i, item in enumerate(node.value):
        try:
            d = _rule(item, i)
        except _Bad as b:
            problems.append(f"{_pos(path, b.node)}: annotations[{i}].{b.field}: {b}")
            continue
        if d["id"] in ids:
            problems.append(f"{_pos(path, item)}: annotations[{i}].id: {d['id']!r} is defined twice")
            continue
        ids.add(d["id"])
        rules.append(d)
    return rules, problems


def _py(node: Any) -> Any:
    import yaml

    return yaml.SafeLoader(yaml.serialize(node)).get_single_data() if node is not None else None


def _str(node: Any, name: str, required: bool = True) -> str | None:
    import yaml

    if node is None:
        if required:
            raise _Bad(None, name, "is required")
        return None
    if not isinstance(node, yaml.ScalarNode) or not isinstance(_py(node), str) or not node.value.strip():
        raise _Bad(node, name, "must be a non-empty string")
    return str(_py(node))


def _str_list(node: Any, name: str) -> list[str]:
    import yaml

    if node is None:
        return []
    if isinstance(node, yaml.ScalarNode):
        return [_str(node, name) or ""]
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise _Bad(node, name, "must be a string or a non-empty list of strings")
    return [_str(n, f"{name}[{j}]") or "" for j, n in enumerate(node.value)]


def _rule(item: Any, index: int) -> dict[str, Any]:
    import yaml

    from guard.act.matcher import compile_pattern

    if not isinstance(item, yaml.MappingNode):
        raise _Bad(item, "", "a rule must be a mapping")
    fields = {k.value: (k, v) for k, v in item.value}
    for k, (knode, _) in fields.items():
        if k not in _KEYS:
            raise _Bad(knode, k, f"unknown field (known: {', '.join(sorted(_KEYS))})")
    get = {k: v for k, (_, v) in fields.items()}
    rid = _str(get.get("id"), "id")
    assert rid is not None
    if not _ID.match(rid):
        raise _Bad(get["id"], "id", "use lowercase letters, digits, - and _")
    patterns = _str_list(get.get("pattern"), "pattern")
    if not patterns:
        raise _Bad(item, "pattern", "is required")
    captures = _str_list(get.get("capture"), "capture")
    groups: set[str] = set()
    for name, items in (("pattern", patterns), ("capture", captures)):
        for j, p in enumerate(items):
            try:
                rx = compile_pattern(p)
            except ValueError as e:
                raise _Bad(get[name], f"{name}[{j}]" if len(items) > 1 else name,
                           f"not a valid RE2 pattern: {e}") from None
            groups.update(k.decode() if isinstance(k, bytes) else k for k in rx.groupindex)
    message = _str(get.get("message"), "message")
    assert message is not None
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(message) if f is not None}
    except ValueError as e:
        raise _Bad(get["message"], "message", f"bad placeholder: {e}") from None
    for n in names:
        if n not in groups and n not in DERIVED:
            raise _Bad(get["message"], "message",
                       f"{{{n}}} is neither a named group of the pattern nor one of {', '.join(DERIVED)}")
    d: dict[str, Any] = {"id": rid, "patterns": patterns, "message": " ".join(message.split())}
    if captures:
        d["captures"] = captures
    d["line"] = item.start_mark.line + 1
    for opt in ("tool", "category"):
        v = _str(get.get(opt), opt, required=False)
        if v is not None:
            d[opt] = v
    d["supersedes"] = _str_list(get.get("supersedes"), "supersedes")
    when = get.get("when")
    if when is not None:
        if not isinstance(when, yaml.MappingNode):
            raise _Bad(when, "when", "must be a mapping")
        for k, v in when.value:
            if k.value == "env":
                if not isinstance(v, yaml.MappingNode):
                    raise _Bad(v, "when.env", "must map variable names to values")
                d["env"] = [[ek.value, [str(x) for x in _str_list(ev, f"when.env.{ek.value}")]] for ek, ev in v.value]
            elif k.value == "cwd_in_tree":
                val = _py(v)
                if not isinstance(val, bool):
                    raise _Bad(v, "when.cwd_in_tree", "must be true or false")
                d["cwd_in_tree"] = val
            elif k.value == "program":
                d["programs"] = _str_list(v, "when.program")
            else:
                raise _Bad(k, f"when.{k.value}", f"unknown condition (known: {', '.join(sorted(_WHEN))})")
    ex = get.get("examples")
    d["must"], d["must_not"] = [], []
    if ex is not None:
        if not isinstance(ex, yaml.MappingNode):
            raise _Bad(ex, "examples", "must be a mapping with must and must_not")
        for k, v in ex.value:
            if k.value not in ("must", "must_not"):
                raise _Bad(k, f"examples.{k.value}", "unknown (use must and must_not)")
            if not isinstance(v, yaml.SequenceNode):
                raise _Bad(v, f"examples.{k.value}", "must be a list")
            d[k.value] = [_example(e, f"examples.{k.value}[{j}]") for j, e in enumerate(v.value)]
    return d


def _example(node: Any, name: str) -> dict[str, Any]:
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return {"stderr": str(_py(node))}
    if not isinstance(node, yaml.MappingNode):
        raise _Bad(node, name, "must be a string or a mapping with stderr")
    val = _py(node)
    allowed = {"stderr", "env", "cwd_in_tree", "program", "message_contains", "command"}
    bad = set(val) - allowed
    if bad or not isinstance(val.get("stderr"), str):
        raise _Bad(node, name, f"needs stderr (text) and only {', '.join(sorted(allowed))}")
    if "env" in val:
        val["env"] = {str(k): str(v) for k, v in (val["env"] or {}).items()}
    return val
