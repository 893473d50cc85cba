"""What the analysis needs to know about the world: cwd, tree roots, environment, shell state.

Precedence (docs/behaviour.md §7): command-line options beat the environment, which beats the config file,
which beats the shipped defaults. The CLI builds a Context with its options; everything else
comes from ``from_environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from guard.record import dataclass, field

DEFAULT_TREES = ("/workspace",)


@dataclass(frozen=True, slots=True)
class Context:
    cwd: str
    trees: tuple[str, ...] = DEFAULT_TREES
    env: Mapping[str, str] = field(default_factory=dict)
    rule_paths: tuple[str, ...] = ()
    config_path: str | None = None
    strict: bool = False
    # State of a live interactive shell (guard-shell): alias name → value, function name → the
    # source text of its definition.
    aliases: Mapping[str, str] = field(default_factory=dict)
    functions: Mapping[str, str] = field(default_factory=dict)
    # Files the shell reads before the command (a login shell's profiles): what they define
    # becomes the state; what they run is the machine's own set-up and is not judged.
    startup_files: tuple[str, ...] = ()
    # GUARD_MODE as given (refuse, warn or observe): every refusing rule's action unless the
    # config names the rule or its category (guard.ruleset.actions)
    mode: str | None = None
    # The program catalogue's command runners (a program spec's ``runs:``, rules/programs/):
    # program name → how its argv says what it runs. Filled from the rule set by the engine;
    # the resolver reads it, so a new wrapper is a YAML entry.
    runs: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # The catalogue's archivers (a program spec's ``archive:``): program name → how its argv
    # packs or unpacks an archive, so an archive made and unpacked in one command is a copy.
    archives: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # The catalogue's interpreters (a program spec's ``inline:``: program name → the dialect it
    # runs and where its program sits) and the dialect tables (rules/dialects/: dialect name →
    # table), filled from the rule set the same way: a new language is YAML.
    interpreters: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    dialects: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # The whole catalogue, compiled (program name → its spec): what the resolver asks of a
    # program beyond what it runs (which options leave .git out of an archive). Filled by the engine.
    catalogue: Mapping[str, object] = field(default_factory=dict)
    # The catalogue's task runners (a program spec's ``recipes:``: program name → the file it
    # reads its recipes from, its format, and which words name the file and the recipes).
    recipes: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    @property
    def home(self) -> str:
        return self.env.get("HOME") or "/root"

    @property
    def tmpdir(self) -> str:
        return self.env.get("TMPDIR") or "/tmp"

    @property
    def role(self) -> str | None:
        return self.env.get("GUARD_ROLE") or None

    @property
    def route(self) -> str | None:
        return self.env.get("GUARD_ROUTE") or None

    @classmethod
    def from_environ(
        cls,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        trees: tuple[str, ...] | None = None,
        rule_paths: tuple[str, ...] | None = None,
        **kw: object,
    ) -> Context:
        env = dict(os.environ if env is None else env)
        if cwd is None:
            try:
                cwd = os.getcwd()
            except OSError:
                cwd = env.get("PWD") or "/"
        if trees is None:
            raw = env.get("GUARD_TREE")
            trees = tuple(t for t in raw.split(":") if t) if raw else None
        if rule_paths is None:
            raw = env.get("GUARD_RULES", "")
            rule_paths = tuple(p for p in raw.split(":") if p)
        strict = env.get("GUARD_STRICT", "") in ("1", "true", "yes")
        if "mode" not in kw:
            kw["mode"] = env.get("GUARD_MODE") or None
        return cls(
            cwd=cwd,
            trees=trees or (),  # empty: the config (or the shipped default) decides
            env=env,
            rule_paths=rule_paths,
            config_path=env.get("GUARD_CONFIG") or None,
            strict=strict,
            **kw,  # type: ignore[arg-type]
        )
