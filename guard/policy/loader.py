"""Rule files → one compiled rule set, cached by content so the hot path never imports yaml.

Layering: the shipped ``rules/`` folder, then each file or folder in ``GUARD_RULES``, then the
config file (``GUARD_CONFIG``). A later rule with the same id replaces an earlier one (in its
place); ``enabled: false`` removes it; a rule without ``match`` changes fields of an earlier one.

Compiling (YAML, schema validation, examples) happens only when the cache misses and lives in
``guard.policy.authoring``. The cache is one JSON file per content key. A compile with mistakes is
cached too, so a broken edit costs one compile, not one per command; while it stands, ``load``
answers with the last set that compiled cleanly for the same layering (``rules-lkg-*.json``, a
symlink to its cache file), says so once per process, and falls back to the shipped rules only
when no good set was ever loaded.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache

from guard.record import asdict, dataclass, field, replace
from guard.rulepaths import command_rule_files

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost ~2-7 ms to import on the command path
    from pathlib import Path
    from typing import Any

try:  # the built-in module: hashlib loads OpenSSL (~2.5 ms), paid on every analysed command
    from _sha256 import sha256
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256  # type: ignore[assignment]

CACHE_VERSION = 4


@cache
def shipped_rules_dir() -> Path:
    from pathlib import Path

    here = Path(__file__).resolve().parent.parent  # guard/
    for cand in (here.parent / "rules", here / "rules"):
        if (cand / "config.yaml").exists():
            return cand
    return here.parent / "rules"


@dataclass
class RuleSet:
    rules: list[dict[str, Any]]  # command rules, in order; each carries "source" (file:line)
    config: dict[str, Any]
    digest: str
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # mistakes that made this compile unusable
    dropped: list[str] = field(default_factory=list)  # rules left out because their examples fail
    disabled: list[dict[str, str]] = field(default_factory=list)  # {id, source, by}
    fallback: str | None = None  # set when this is not the set the files describe, and why
    programs: dict[str, dict[str, Any]] = field(default_factory=dict)  # program name → spec as written


@dataclass(frozen=True)
class Layer:
    name: str
    files: tuple[Path, ...]
    shipped: bool = False


def rule_layers(extra: tuple[str, ...], config_path: str | None) -> list[Layer]:
    """The layers in order: shipped rules, each GUARD_RULES entry, the config file."""
    from pathlib import Path

    base = shipped_rules_dir()
    layers = [Layer("rules/", (base / "config.yaml", *sorted((base / "programs").glob("*.yaml")),
                               *sorted((base / "commands").glob("*.yaml"))), True)]
    for p in extra:
        path = Path(p)
        if path.is_dir():
            found = {q for q in path.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file()}
            layers.append(Layer(p, tuple(sorted(found))))
        elif path.exists():
            layers.append(Layer(p, (path,)))
    if config_path:
        layers.append(Layer(config_path, (Path(config_path),)))
    return layers


def rule_files(extra: tuple[str, ...], config_path: str | None) -> list[Path]:
    """Every YAML file that contributes, in layering order."""
    return [f for layer in rule_layers(extra, config_path) for f in layer.files]


INTERNAL = "internal error while compiling rules"


@cache
def _compiler_stamp() -> str:
    """Size and mtime of the compiler and its schemas: a new guard recompiles the rules."""
    here = os.path.dirname(os.path.realpath(__file__))
    out = []
    for f in (os.path.join(here, "authoring.py"), os.path.join(here, "schema", "command-rules.json"),
              os.path.join(here, "schema", "config.json"), os.path.join(here, "schema", "programs.json")):
        try:
            st = os.stat(f)
            out.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            out.append("-")
    return ",".join(out)


def content_key(files: list[Path] | list[str]) -> str:
    """A hash of the files' names and bytes (and of the compiler's stamp): the cache key."""
    h = sha256(f"guard-rules/{CACHE_VERSION}/{_compiler_stamp()}\0".encode())
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read()
            h.update(f"{f}\0{len(data)}\0".encode())
            h.update(data)
        except OSError:
            h.update(f"{f}\0missing\0".encode())
    return h.hexdigest()


def cache_dir() -> Path:
    from pathlib import Path

    return Path(_cache_dir_str())


def _cache_dir_str() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "guard")


@cache
def _inputs_key(extra: tuple[str, ...], config_path: str | None) -> str:
    text = json.dumps([str(shipped_rules_dir()), list(extra), config_path])
    return sha256(text.encode()).hexdigest()[:24]


_said: set[str] = set()
_memo: dict[str, RuleSet] = {}


def forget() -> None:
    """Say the stale-rules warning again on the next load (see ``guard.policy.forget``); the
    content-keyed ``_memo`` stays: it cannot go stale."""
    _said.clear()


def _say_once(line: str) -> None:
    if "stale" in _said:
        return
    _said.add("stale")
    try:
        os.write(2, ("guard: rules: " + line.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def load(extra: tuple[str, ...] = (), config_path: str | None = None) -> RuleSet:
    """The effective rule set for these layers. Never raises.

    When the files hold mistakes: the last good set for the same layering (``errors`` empty,
    said once on stderr); else the shipped rules, with the mistakes in ``errors`` and
    ``fallback`` saying so; else (the shipped rules themselves are broken) the broken compile."""
    fast = _load_fast(extra, config_path)
    if fast is not None:
        return fast
    layers = rule_layers(extra, config_path)
    files = [f for layer in layers for f in layer.files]
    key = content_key(files)
    cdir = cache_dir()
    name = f"rules-{key[:32]}.json"
    rs = _memo.get(key) or read_cache(cdir / name)
    if rs is not None and len(_memo) < 1024:
        # One object per content in a process: a long-lived shell skips the JSON, and a set's
        # id() stays its own (guard.policy caches the rule order by id()).
        _memo[key] = rs
    if rs is None:
        rs = compile_layers(layers)
        if not any(e.startswith(INTERNAL) for e in rs.errors):  # a crash may be transient: never cache it
            write_cache(cdir / name, rs)
    if not rs.errors:
        _remember_good(cdir, _inputs_key(extra, config_path), name)
        return rs
    good = read_cache(cdir / f"rules-lkg-{_inputs_key(extra, config_path)}.json")
    if good is not None and not good.errors:
        good = _memo.setdefault("lkg-" + good.digest + "-" + key, good)
        good.fallback = f"{rs.errors[0]}; using the last good rule set"
        _say_once(good.fallback)
        return good
    if extra or config_path:
        shipped = load((), None)
        if not shipped.errors:
            # The errors stay: `guard check` reports a configuration error (exit 2); a shell
            # answers with the shipped rules and says so once (policy.load → warn_once).
            fallback = f"{rs.errors[0]}; using the shipped rules (no good rule set was loaded before)"
            return _memo.setdefault("shipped-for-" + key, replace(shipped, errors=rs.errors, fallback=fallback))
    return rs


def _load_fast(extra: tuple[str, ...], config_path: str | None) -> RuleSet | None:
    """The common case without pathlib: every layer a file and a clean compile in the cache."""
    files = command_rule_files(extra, config_path)
    if files is None:
        return None
    key = content_key(files)
    rs = _memo.get(key) or read_cache(os.path.join(_cache_dir_str(), f"rules-{key[:32]}.json"))
    if rs is None or rs.errors:
        return None
    _memo.setdefault(key, rs)
    return _memo[key]


def compile_layers(layers: list[Layer]) -> RuleSet:
    """Compile (cold path). A bug in the compiler becomes an error, never a traceback."""
    try:
        from guard.policy.authoring import compile_for_load

        rs = compile_for_load(layers)
    except Exception as e:  # noqa: BLE001 — the hot path must survive anything here
        return RuleSet([], {}, "", [str(f) for layer in layers for f in layer.files],
                       [f"{INTERNAL}: {type(e).__name__}: {e}"])
    for line in rs.dropped:
        try:
            os.write(2, f"guard: rules: {line}\n".encode("utf-8", "replace"))
        except OSError:
            pass
    return rs


def read_cache(path: Path | str) -> RuleSet | None:
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read())
        return RuleSet(**{k: data[k] for k in RuleSet.__record_fields__ if k in data})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_cache(path: Path, rs: RuleSet) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(rs)))
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        pass


def _remember_good(cdir: Path, inputs: str, name: str) -> None:
    """Point rules-lkg-<inputs>.json at the cache file of this good set (a readlink when unchanged)."""
    link = cdir / f"rules-lkg-{inputs}.json"
    try:
        if os.readlink(link) == name:
            return
    except OSError:
        pass
    try:
        tmp = cdir / f".lkg-{inputs}.{os.getpid()}.tmp"
        try:
            os.unlink(tmp)
        except OSError:
            pass
        os.symlink(name, tmp)
        os.replace(tmp, link)
    except OSError:
        pass


def display(f: Path) -> str:
    """How a rule file is named in messages: ``rules/…`` for shipped files, else as given."""
    base = shipped_rules_dir()
    try:
        return "rules/" + str(f.resolve().relative_to(base.resolve()))
    except (ValueError, OSError):
        return str(f)


def warn_once(rs: RuleSet) -> None:
    """What a shell says (once per process) when the rule files are broken."""
    if rs.fallback:
        _say_once(rs.fallback)
        return
    for e in rs.errors[:3]:
        print(f"guard: rules: {e}", file=sys.stderr)
