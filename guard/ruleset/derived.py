"""Values every stage needs, derived from one compiled rule set and handed to the stages as
parameters: the forges and their hosts, the token variables, the program specs, the programs
some rule names, the pre-check's plan, the refusal vocabulary. Nothing here is kept as a module
constant; ``derived(rs)`` computes them once per rule set."""

from __future__ import annotations

import os

from guard.ruleset.model import RuleSet, per_set
from guard.ruleset.stores import Stores
from guard.system import planfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Iterable, Mapping
    from typing import Any

    from guard.ruleset.model import Forge
    from guard.ruleset.programs import Spec


class Derived:
    """What the stages read from ``rs`` (see the module's docstring)."""

    __slots__ = ("rs", "forges", "token_vars", "token_prefixes", "token_words", "programs", "named", "read_all", "precheck", "categories",
                 "writes", "default_exempt", "trees", "stores")

    def __init__(self, rs: RuleSet) -> None:
        from guard.ruleset.programs import READER_FACTS, compile_specs  # what each program's argv gives

        self.rs = rs
        self.forges: tuple[Forge, ...] = forges_of(rs.config)
        self.token_vars = frozenset(rs.config.get("token_vars") or ())
        self.token_prefixes = prefix_search(rs.config.get("token_prefixes") or ())
        self.token_words = words_search(rs.config.get("token_words") or ())
        self.stores = Stores(rs.config.get("credential_stores") or ())
        self.programs: Mapping[str, Spec] = compile_specs(rs.programs)
        self.named = frozenset(p for r in rs.rules for p in _as_list(r.match.get("program")))
        self.read_all = any("program" not in r.match and not READER_FACTS.isdisjoint(r.match) for r in rs.rules)
        self.precheck = _plan(rs, self.named)
        vocab = rs.vocabulary or {}
        self.categories: tuple[str, ...] = tuple(vocab.get("categories") or ())
        self.writes = frozenset(vocab.get("writes") or ())
        self.default_exempt: tuple[str, ...] = tuple(vocab.get("default_exempt") or ())
        self.trees: tuple[str, ...] = tuple(rs.config.get("trees") or ())


_recent: dict = {}


def derived(rs: RuleSet) -> Derived:
    """The derived values of ``rs``, computed once per rule set."""
    return per_set(_recent, rs, Derived)


def forges_of(config: Mapping[str, Any]) -> tuple[Forge, ...]:
    """The config's ``forges``; a forge's hosts may also be given as ``<name>_hosts``."""
    from guard.ruleset.model import Forge

    out = []
    for name, f in (config.get("forges") or {}).items():
        f = f or {}
        hosts = config.get(f"{name}_hosts", f.get("hosts")) or ()
        out.append(Forge(name, tuple(h.lower() for h in hosts), tuple(f.get("api_paths") or ()),
                         tuple(f.get("token_paths") or ())))
    return tuple(out)


def words_search(words: Iterable[str]) -> re.Pattern[str] | None:
    """The config's ``token_words`` as one case-blind pattern (None: none given, or one that is not
    a pattern, which lint reports)."""
    import re

    words = [str(w) for w in words]
    if not words:
        return None
    try:
        return re.compile("|".join(f"(?:{w})" for w in words), re.I)
    except re.error:
        return None


class PrefixSearch:
    """Finds any of the token prefixes in a word, literally or as a search pattern would write
    it: each letter or digit may also be a ``[...]`` class holding it (``gh[pousr]_`` for ghp_).

    Text without a ``[`` can only hold a prefix literally, so ``search`` tries each prefix as a
    substring there (grep and sed words, nearly all of them). Text with a ``[`` goes to the
    pattern, run by RE2 (compiled on first use): Python's engine tries every alternative at every
    offset and walks each ``[`` to its ``]``, some hundred microseconds on a long script; RE2's
    automaton reads the text once. The same pattern, so the same answers; Python's engine takes
    text RE2 cannot be given (a lone surrogate).
    """

    __slots__ = ("pattern", "literals", "_re2")

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        import re

        alts = ["".join(f"(?:{re.escape(c)}|\\[[^\\]]*{re.escape(c)}[^\\]]*\\])" if c.isalnum() else re.escape(c)
                        for c in p)
                for p in prefixes]
        self.pattern: re.Pattern[str] = re.compile("|".join(alts))
        self.literals = prefixes
        self._re2: Any = None

    def search(self, text: str) -> bool:
        if "[" not in text:
            for p in self.literals:
                if p in text:
                    return True
            return False
        fast = self._re2
        if fast is None:
            import re2

            opts = re2.Options()
            opts.log_errors = False
            fast = self._re2 = re2.compile(self.pattern.pattern, opts)
        try:
            return fast.search(text) is not None
        except UnicodeEncodeError:
            return self.pattern.search(text) is not None


def prefix_search(prefixes: Iterable[str]) -> PrefixSearch | None:
    """The search for any of ``prefixes`` (see ``PrefixSearch``), or None when there are none."""
    ordered = tuple(p for p in sorted(set(prefixes), key=len, reverse=True) if p)
    return PrefixSearch(ordered) if ordered else None


def _as_list(v: object) -> list:
    return [] if v is None else v if isinstance(v, list) else [v]


# --------------------------------------------------------------------------- the pre-check's plan


def _plan(rs: RuleSet, named: frozenset[str]) -> planfile.Plan:
    """The config's ``precheck`` programs, less every program a rule names; none at all when a
    rule naming no program wants a fact the watched fragments do not cover."""
    cfg = rs.config.get("precheck") or {}
    covers = set(cfg.get("covers") or ())
    # a program that runs another command (a spec's runs:), a program in another language (its
    # inline:), an HTTP client (http:) or a task runner (recipes:) is never plain: what it runs or
    # sends is judged
    runners = frozenset(name for name, spec in rs.programs.items()
                        if spec.get("runs") or spec.get("inline") or spec.get("http") or spec.get("recipes"))
    programs = frozenset(cfg.get("programs") or ()) - named - runners
    for r in rs.rules:
        m = r.match
        if "program" not in m and not set(m) <= covers:
            programs = frozenset()  # a rule on any program: every command gets the analysis
            break
    return planfile.Plan(programs, tuple(str(w).lower() for w in cfg.get("watched") or ()))


def plan_text(plan: planfile.Plan) -> str:
    """A plan as ``guard/ruleset/precheck-shipped.txt`` holds it."""
    return ("# guard-shell's pre-check under the shipped rules alone, derived from them (config precheck:,\n"
            "# less every program a rule names); tests/shell/test_precheck.py checks it. Programs, then watched.\n"
            + " ".join(sorted(plan.programs)) + "\n" + " ".join(plan.watched) + "\n")


def stamp(extra: tuple[str, ...], config_path: str | None) -> tuple | None:
    """Name, size and mtime of every command rule file and of the folders holding them (a file
    added or removed changes its folder's mtime): a plan holds for this stamp only."""
    from guard.ruleset.paths import command_rule_files, shipped_dir

    files = command_rule_files(extra, config_path, folders=True)
    base = shipped_dir()
    if files is None or base is None:
        return None
    dirs = [os.path.join(base, sub) for sub in ("programs", "dialects", "commands", "stderr")]
    for p in extra:
        if os.path.isdir(p):
            dirs += [d for d, _, _ in os.walk(p)]
    return tuple((f, *planfile.size_mtime(f)) for f in (*dirs, *files))


_plan_paths: dict[tuple, str] = {}  # (layers, cache folder) -> plan file
_plan_bytes: dict[tuple, bytes] = {}  # (stamp, plan) -> the plan file's bytes
MEMO_MAX = 64


def remember_plan(extra: tuple[str, ...], config_path: str | None, at: tuple | None, plan: planfile.Plan) -> None:
    """Store ``plan`` where ``planfile.current_plan`` finds it, for the rule files as they were at
    ``at`` (their ``stamp`` taken before the rule set was loaded, so an edit during the load
    leaves a plan that no longer holds). The file is rewritten only when its bytes differ; they
    and its name are computed once per process (the analysis server's workers inherit them), so
    a request that finds the plan in place reads the file and no more."""
    from guard.system.cachedir import cache_root, read_private, write_private

    if at is None:
        return
    where = (extra, config_path, cache_root())
    path = _plan_paths.get(where)
    if path is None:
        path = _memo_put(_plan_paths, where, planfile.plan_file(extra, config_path))
    what = (at, plan.programs, plan.watched)
    data = _plan_bytes.get(what)
    if data is None:
        data = _memo_put(_plan_bytes, what, planfile.plan_text(at, plan) or b"")
    if not data or read_private(path) == data:
        return
    write_private(path, data)


def _memo_put(memo: dict, key: tuple, value: Any) -> Any:
    if len(memo) >= MEMO_MAX:
        memo.clear()
    memo[key] = value
    return value
