"""The published schemas (``schema/*.json``) and a small validator for the JSON Schema subset they
use (type, enum, pattern, minLength, minItems, minProperties, required, properties,
additionalProperties, items, anyOf, $ref) plus guard's ``x-`` annotations (x-kind, x-expected,
x-reject, x-unknown). One validator for every kind of rule file: command rules, program specs,
config and annotations."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from guard.ruleset.read import Diagnostic, Doc, Path_, did_you_mean

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
TOP_KEYS = ("rules", "config", "annotations", "programs", "dialects")



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


@cache
def vocabulary() -> dict[str, tuple[str, ...]]:
    """The refusal categories in precedence order, those that write (refused even where the
    repository is unknown), and what an allow rule exempts by default: the schema's, so the
    categories are written down once."""
    root = schema("command-rules")
    cat = root["$defs"]["category"]
    exempts = root["$defs"]["rule"]["properties"]["exempts"]
    return {"categories": tuple(cat["enum"]), "writes": tuple(cat["x-writes"]),
            "default_exempt": tuple(exempts["x-default"])}


def check_schema(doc: Doc, only: tuple[str, ...] | None = None) -> tuple[list[Diagnostic], set[Path_]]:
    """Validate a whole document (or only its top-level keys in ``only``); also return the paths
    (rules[i], annotations[i], config.key) that are bad."""
    data = doc.data
    if data is None:
        return [], set()
    if not isinstance(data, dict):
        return [doc.diag((), "expected a mapping with rules:, config:, annotations:, programs: or dialects: at the top",
                         "wrong-type")], {()}
    issues: list[Issue] = []
    for k, v in data.items():
        if only is not None and k not in only:
            continue
        if k == "rules":
            issues += validate(v, schema("command-rules")["properties"]["rules"], schema("command-rules"), ("rules",))
        elif k == "config":
            issues += _validate_config(v)
        elif k == "programs":
            issues += validate(v, schema("programs")["properties"]["programs"], schema("programs"), ("programs",))
        elif k == "dialects":
            issues += validate(v, schema("dialects")["properties"]["dialects"], schema("dialects"), ("dialects",))
        elif k == "annotations":
            issues += validate(v, schema("annotations")["properties"]["annotations"], schema("annotations"),
                               ("annotations",))
        else:
            hint = did_you_mean(k, TOP_KEYS) or f"; expected one of {', '.join(TOP_KEYS)}"
            issues.append(Issue((k,), "unknown-key", f"not a known top-level key{hint}", key=True))
    bad = {i.path[:2] for i in issues}
    diags = [doc.diag(i.path, i.message, i.kind, key=i.key, field_path=i.field) for i in issues]
    return diags, bad
