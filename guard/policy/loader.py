"""Rule files → one compiled rule set, cached by content so the hot path never imports yaml.

Layering: the shipped ``rules/`` folder, then the files and folders in ``GUARD_RULES``, then
the config file (``GUARD_CONFIG``). A later rule with the same id replaces an earlier one;
``enabled: false`` removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE_VERSION = 2


def shipped_rules_dir() -> Path:
    here = Path(__file__).resolve().parent.parent  # guard/
    for cand in (here.parent / "rules", here / "rules"):
        if (cand / "config.yaml").exists():
            return cand
    return here.parent / "rules"


@dataclass
class RuleSet:
    rules: list[dict[str, Any]]  # command rules, in order
    config: dict[str, Any]
    digest: str
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def rule_files(extra: tuple[str, ...], config_path: str | None) -> list[Path]:
    """Every YAML file that contributes, in layering order."""
    out: list[Path] = []
    base = shipped_rules_dir()
    out.append(base / "config.yaml")
    out.extend(sorted((base / "commands").glob("*.yaml")))
    for p in extra:
        path = Path(p)
        if path.is_dir():
            out.extend(sorted(path.rglob("*.yaml")) + sorted(path.rglob("*.yml")))
        elif path.exists():
            out.append(path)
    if config_path:
        out.append(Path(config_path))
    return out


def _stamp(files: list[Path]) -> str:
    h = hashlib.sha256(str(CACHE_VERSION).encode())
    for f in files:
        try:
            st = f.stat()
            h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except OSError:
            h.update(f"{f}\0missing\0".encode())
    return h.hexdigest()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "guard"


def load(extra: tuple[str, ...] = (), config_path: str | None = None) -> RuleSet:
    files = rule_files(extra, config_path)
    stamp = _stamp(files)
    cache = cache_dir() / f"rules-{stamp[:32]}.json"
    try:
        data = json.loads(cache.read_bytes())
        return RuleSet(data["rules"], data["config"], data["digest"], data["sources"], data["errors"])
    except (OSError, ValueError, KeyError):
        pass
    rs = compile_files(files)
    _write_cache(cache, rs)
    return rs


def _write_cache(cache: Path, rs: RuleSet) -> None:
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"rules": rs.rules, "config": rs.config, "digest": rs.digest,
                                   "sources": rs.sources, "errors": rs.errors}))
        os.replace(tmp, cache)
    except OSError:
        pass


def read_yaml(path: Path) -> tuple[Any, str | None]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return None, f"{path}: cannot read: {e}"
    try:
        return yaml.safe_load(text), None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        return None, f"{where}: YAML syntax error: {getattr(e, 'problem', e)}"


def compile_files(files: list[Path]) -> RuleSet:
    rules: dict[str, dict[str, Any]] = {}
    config: dict[str, Any] = {}
    errors: list[str] = []
    digest = hashlib.sha256()
    for f in files:
        doc, err = read_yaml(f)
        if err:
            errors.append(err)
            continue
        try:
            digest.update(f.read_bytes())
        except OSError:
            pass
        if not isinstance(doc, dict):
            if doc is not None:
                errors.append(f"{f}: expected a mapping with 'rules:' or 'config:' at the top")
            continue
        if isinstance(doc.get("config"), dict):
            _merge_config(config, doc["config"])
        for i, r in enumerate(doc.get("rules") or []):
            if not isinstance(r, dict) or "id" not in r:
                errors.append(f"{f}: rule #{i + 1} has no id")
                continue
            if "match" not in r and r.get("enabled", True) is not False:
                if r["id"] in rules:  # an override that changes fields only
                    rules[r["id"]] = {**rules[r["id"]], **r}
                    continue
                errors.append(f"{f}: rule {r['id']}: missing 'match'")
                continue
            if r.get("enabled", True) is False:
                rules.pop(r["id"], None)
                continue
            rule = dict(r)
            rule["source"] = f"{_display(f)}:{_line_of(f, r['id'])}"
            rules.pop(r["id"], None)
            rules[r["id"]] = rule
    return RuleSet(list(rules.values()), config, digest.hexdigest()[:16], [str(f) for f in files], errors)


def _merge_config(into: dict[str, Any], new: dict[str, Any]) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            into[k] = {**into[k], **v}
        else:
            into[k] = v


def _display(f: Path) -> str:
    base = shipped_rules_dir()
    try:
        return "rules/" + str(f.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(f)


def _line_of(f: Path, rule_id: str) -> int:
    try:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            s = line.strip()
            if s.startswith("- id:") or s.startswith("id:"):
                if s.split(":", 1)[1].strip().strip("'\"") == rule_id:
                    return n
    except OSError:
        pass
    return 1


def warn_once(rs: RuleSet) -> None:
    for e in rs.errors[:3]:
        print(f"guard: rules: {e}", file=sys.stderr)
