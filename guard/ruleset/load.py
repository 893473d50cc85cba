"""Rule files → one compiled rule set, cached by content so the hot path never imports yaml.

Layering: the shipped ``rules/`` folder, then each file or folder in ``GUARD_RULES``, then the
config file (``GUARD_CONFIG``). A later rule with the same id replaces an earlier one (in its
place); ``enabled: false`` removes it; a rule without ``match`` changes fields of an earlier one.

Compiling (YAML, schema validation, examples) happens only when the cache misses and lives in
``guard.ruleset.compile``. The cache is one JSON file per content key. A compile with mistakes is
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

from guard.record import asdict, replace
from guard.ruleset.model import Rule, RuleSet
from guard.ruleset.paths import command_rule_files, shipped_dir
from guard.system.cachedir import cache_root, read_private, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib cost ~2-7 ms to import on the command path
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from guard.context import Context
    from guard.ruleset.examples import Runner
    from guard.ruleset.layers import Layer
    from guard.system.planfile import Plan

try:  # the built-in module: hashlib loads OpenSSL (~2.5 ms), paid on every analysed command
    from _sha256 import sha256
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256  # type: ignore[assignment]

CACHE_VERSION = 7


INTERNAL = "internal error while compiling rules"


@cache
def _compiler_stamp() -> str:
    """Size and mtime of the compiler and its schemas: a new guard recompiles the rules."""
    here = os.path.dirname(os.path.realpath(__file__))
    out = []
    # every module of the rule-set layer (what a compile reads, checks and derives with), its
    # schemas, and the resolver's reading of a spec's runs: examples; a compile made by other
    # code must never be taken for this code's
    names = sorted(n for n in os.listdir(here) if n.endswith(".py")) + [
        "schema/command-rules.json", "schema/config.json", "schema/programs.json", "schema/annotations.json",
        "schema/dialects.json", "../resolve/wrappers.py", "../resolve/archives.py", "../resolve/inline/generic.py",
        "../resolve/inline/launch.py"]
    for f in (os.path.join(here, n) for n in names):
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
    return cache_root()


@cache
def _inputs_key(extra: tuple[str, ...], config_path: str | None) -> str:
    text = json.dumps([shipped_dir() or "", list(extra), config_path])
    return sha256(text.encode()).hexdigest()[:24]


_said: set[str] = set()
_memo: dict[str, RuleSet] = {}
_loaded: dict[tuple, RuleSet] = {}
_warned = False


def load_for(ctx: Context, run: Runner) -> RuleSet:
    """The rule set for ``ctx``'s rule layers, loaded once per process; the first load leaves the
    pre-check's plan where guard-shell finds it, and a broken set is said once. ``run`` runs a
    rule's examples when the set must be compiled (``guard.engine.rules_for`` passes the
    pipeline's own)."""
    global _warned
    key = (ctx.rule_paths, ctx.config_path)
    rs = _loaded.get(key)
    if rs is None:
        from guard.ruleset import derived

        seen = _stamped.get(key) if key in _watched else None
        if seen is not None and _quiet is not None and _quiet():
            # No file of this layering changed since it was stamped, and the plan file was left
            # for that stamp then (``settle``): neither is looked at again. A plan file removed
            # since is put back by the next load that looks at the files.
            rs = seen[2]
            _reused.add(key)
        else:
            settled = _settled_before()
            at = derived.stamp(ctx.rule_paths, ctx.config_path)
            rs = _unchanged(key, at)
            if rs is not None:
                _reused.add(key)
            else:
                rs = load(ctx.rule_paths, ctx.config_path, run=run)
                if not rs.errors and not rs.fallback:  # a broken set is said anew by each load
                    _stamped[key] = (at, settled, rs, derived.derived(rs).precheck)
            derived.remember_plan(ctx.rule_paths, ctx.config_path, at, derived.derived(rs).precheck)
        _loaded[key] = rs
    if rs.errors and not _warned:
        _warned = True
        warn_once(rs)
    return rs


# What ``load_for`` loaded, with the files' stamp (name, size, mtime of each rule file and folder)
# taken before the load, the time (before the stamp) before which an mtime counts as settled, and
# the set's pre-check plan.
_stamped: dict[tuple, tuple[tuple | None, int, RuleSet, Plan]] = {}
_reused: set[tuple] = set()  # the layerings load_for took from _stamped since the last forget
RACY_NS = 2_000_000_000  # mtimes are coarse (a clock tick): a file this recent may change unseen


def _settled_before() -> int:
    import time

    return time.time_ns() - RACY_NS


def _unchanged(key: tuple, at: tuple | None) -> RuleSet | None:
    """The set ``load_for`` loaded for ``key`` before, when no rule file changed since: the same
    stamp, and every mtime older than the load by more than the clock's granularity (git's rule
    for a racily clean index entry: a file written in the same tick as the load, at the same size,
    would keep its stamp, so such a file is read again)."""
    seen = _stamped.get(key)
    if at is None or seen is None or seen[0] != at:
        return None
    settled = seen[1]
    if any(entry[2] >= settled for entry in at):
        return None
    return seen[2]


# Layerings whose stamp a watch set up before it was taken still vouches for, while ``_quiet()``
# (no event since) holds: the analysis server's workers, which skip the stamp then (``trust``).
_watched: frozenset[tuple] = frozenset()
_quiet: Callable[[], bool] | None = None


def stamped_paths() -> dict[tuple, list[str]]:
    """Each layering ``load_for`` keeps on its stamp, with the files and folders the stamp covers:
    what a watch must cover to vouch for it."""
    return {key: [entry[0] for entry in seen[0]] for key, seen in _stamped.items() if seen[0] is not None}


def trust(keys: Iterable[tuple], quiet: Callable[[], bool] | None) -> None:
    """Let ``load_for`` take the stamped set of each layering in ``keys`` without looking at its
    files while ``quiet()`` is true: for the analysis server's workers, whose server set up a
    watch on those files (``guard.serve.watch``) before it stamped them, so that any change since
    makes ``quiet()`` false. ``trust((), None)`` ends it. The pre-check's plan of each of these
    layerings is vouched for in the same way (``planfile.trust``)."""
    from guard.system import planfile

    global _watched, _quiet
    _watched = frozenset(keys)
    _quiet = quiet
    planfile.trust({k: _stamped[k][3] for k in _watched if k in _stamped}, quiet)


def read_afresh() -> list[tuple[tuple[str, ...], str | None]]:
    """The layerings (``GUARD_RULES`` paths, ``GUARD_CONFIG``) whose files were read since the
    last ``forget``, rather than reused on their stamp: for the analysis server to learn from its
    workers which layerings its callers use."""
    return [key for key in _loaded if key not in _reused]


def settle(rule_paths: tuple[str, ...], config_path: str | None, run: Runner, afresh: bool = False) -> bool:
    """Load this layering so that, while its files stay unchanged, a ``forget(keep_unchanged=True)``
    keeps it (the server does this once per layering its callers use); ``afresh``: from the files'
    content, even when their stamp is the one kept. True when the set kept on its stamp is the one
    in effect (not when the files are broken: an older good set is then kept only for
    ``_unchanged`` to compare with, and is not in effect)."""
    from guard.context import Context

    key = (rule_paths, config_path)
    if afresh:
        _stamped.pop(key, None)
        _loaded.pop(key, None)
    rs = load_for(Context(cwd="/", rule_paths=rule_paths, config_path=config_path), run)
    seen = _stamped.get(key)
    return seen is not None and seen[2] is rs


def forget(keep_unchanged: bool = False) -> None:
    """Drop what ``load_for`` keeps per process (the loaded rule sets, the warned-once flags), so
    the next load looks at the rule files again, as a fresh process would: for a long-lived caller
    (the analysis server) whose rule files may change between commands. With ``keep_unchanged``
    a set whose files' stamp is unchanged (and settled) is reused without reading them. The
    content-keyed ``_memo`` stays: it cannot go stale."""
    global _warned
    if not keep_unchanged:
        _stamped.clear()
        trust((), None)
    _reused.clear()
    _said.clear()
    _loaded.clear()
    _warned = False


def _say_once(line: str) -> None:
    if "stale" in _said:
        return
    _said.add("stale")
    try:
        os.write(2, ("guard: rules: " + line.replace("\n", " ") + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def load(extra: tuple[str, ...] = (), config_path: str | None = None, *, run: Runner) -> RuleSet:
    """The effective rule set for these layers. Never raises.

    When the files hold mistakes: the last good set for the same layering (``errors`` empty,
    said once on stderr); else the shipped rules, with the mistakes in ``errors`` and
    ``fallback`` saying so; else (the shipped rules themselves are broken) the broken compile."""
    fast = _load_fast(extra, config_path)
    if fast is not None:
        return fast
    from guard.ruleset.layers import rule_layers

    layers = rule_layers(extra, config_path)
    files = [f for layer in layers for f in layer.files]
    key = content_key(files)
    cdir = cache_dir()
    name = f"rules-{key[:32]}.json"
    rs = _memo.get(key) or read_cache(cdir / name)
    if rs is not None and len(_memo) < 1024:
        # One object per content in a process: a long-lived shell skips the JSON, and what the
        # stages derive from a set (kept while it is the same object) is derived once.
        _memo[key] = rs
    if rs is None:
        rs = compile_layers(layers, run)
        if not any(e.startswith(INTERNAL) for e in rs.errors):  # a crash may be transient: never cache it
            write_cache(cdir / name, rs)
    if not rs.errors:
        _remember_good(cdir, _inputs_key(extra, config_path), name)
        return rs
    good = read_cache(cdir / f"rules-lkg-{_inputs_key(extra, config_path)}.json", link=True)
    if good is not None and not good.errors:
        good = _memo.setdefault("lkg-" + good.digest + "-" + key, good)
        good.fallback = f"{rs.errors[0]}; using the last good rule set"
        _say_once(good.fallback)
        return good
    if extra or config_path:
        shipped = load((), None, run=run)
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


def compile_layers(layers: list[Layer], run: Runner) -> RuleSet:
    """Compile (cold path). A bug in the compiler becomes an error, never a traceback."""
    try:
        from guard.ruleset.compile import compile_for_load

        rs = compile_for_load(layers, run)
    except Exception as e:  # noqa: BLE001 — the hot path must survive anything here
        return RuleSet([], {}, "", [str(f) for layer in layers for f in layer.files],
                       [f"{INTERNAL}: {type(e).__name__}: {e}"])
    for line in rs.dropped:
        try:
            os.write(2, f"guard: rules: {line}\n".encode("utf-8", "replace"))
        except OSError:
            pass
    return rs


def read_cache(path: Path | str, link: bool = False) -> RuleSet | None:
    """The rule set cached at ``path``, when the cache folder and file are this user's own and
    no one else may write them (``guard.system.cachedir.read_private``); ``link``: ``path`` is
    the last-known-good link to a file of the same folder."""
    data = read_private(str(path), link_in_folder=link)
    if data is None:
        return None
    try:
        raw = json.loads(data)
        held = {k: raw[k] for k in RuleSet.__record_fields__ if k in raw}
        held["rules"] = [Rule(**r) for r in held["rules"]]
        return RuleSet(**held)
    except (ValueError, TypeError, KeyError, RecursionError):
        return None


def write_cache(path: Path, rs: RuleSet) -> None:
    try:
        write_private(str(path), json.dumps(asdict(rs)).encode())
    except (TypeError, ValueError):
        pass


def _remember_good(cdir: Path, inputs: str, name: str) -> None:
    """Point rules-lkg-<inputs>.json at the cache file of this good set (a readlink when unchanged)."""
    link = cdir / f"rules-lkg-{inputs}.json"
    try:
        if os.readlink(link) == name:
            return
    except OSError:
        pass
    write_private(str(link), b"", link=name)


def warn_once(rs: RuleSet) -> None:
    """What a shell says (once per process) when the rule files are broken."""
    if rs.fallback:
        _say_once(rs.fallback)
        return
    for e in rs.errors[:3]:
        print(f"guard: rules: {e}", file=sys.stderr)
