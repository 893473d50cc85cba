"""``guard rules list|lint|test [PATH…]``."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard.engine import rule_examples
from guard.ruleset.actions import effective, mode_of
from guard.ruleset.compile import compile_files, compile_for_load
from guard.ruleset.layers import Layer, display, rule_layers
from guard.ruleset.paths import entry_path

USAGE = "usage: guard rules list|lint|test [PATH…] | guard rules draft PROGRAM…"
HELP_TIMEOUT = 5.0  # seconds a program's --help, --version or manual may take



@dataclass
class Target:
    """What a ``guard rules`` invocation looks at."""

    layers: list[Layer]
    only: set[Path] | None  # report on these files only (PATHs given); None: all
    missing: list[str] = field(default_factory=list)


def target(paths: list[str], env: Mapping[str, str]) -> Target:
    """No PATH: the effective set (shipped + GUARD_RULES + GUARD_CONFIG). PATHs: the shipped rules
    plus PATHs in place of GUARD_RULES, with GUARD_CONFIG; mistakes are reported in PATHs only."""
    config = env.get("GUARD_CONFIG") or None
    if paths:
        layers = rule_layers(tuple(paths), config)
        only = {f.resolve() for layer in layers[1:] for f in layer.files}
        return Target(layers, only)
    extra = tuple(p for p in env.get("GUARD_RULES", "").split(":") if p)
    missing = [p for p in extra if not os.path.exists(entry_path(p))]
    if config and not os.path.exists(config):
        missing.append(config)
    return Target(rule_layers(extra, config), None, missing)


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


def _typed(annotations: list[dict[str, Any]]) -> list[Any]:
    """The checked annotations as the annotator runs them."""
    from guard.ruleset.annotations import typed
    from guard.ruleset.patterns import compile_pattern

    return [typed(d, compile_pattern) for d in annotations]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def cmd_lint(t: Target, out: Any) -> int:
    """Every mistake of every file in one pass (schema, checks, failing examples), then a count."""
    c = compile_files(t.layers, examples="all", run=rule_examples)
    lines = [f"{p}: no such file or folder (named in GUARD_RULES or GUARD_CONFIG)" for p in t.missing]
    diags = [d for d in c.diagnostics if _mine(t, d.file)]
    diags += [r.diagnostic() for r in c.failures if _mine(t, r.entry.doc.name)]
    from guard.act.annotate import run_examples

    mine = [r for r in _typed(c.annotations) if _mine(t, r.source)]
    lines += run_examples(mine)
    errors = [d for d in diags if d.severity == "error"]
    for d in sorted(diags, key=lambda d: (d.file, d.line, d.col)):
        print(d, file=out)
    for line in lines:
        print(line, file=out)
    for note in c.ruleset.notes:
        if _mine(t, note.split(":", 1)[0]):
            print(note, file=out)
    n = len(errors) + len(lines)
    nfiles = len({f for layer in t.layers for f in layer.files if t.only is None or f.resolve() in t.only})
    if n:
        print(f"{_plural(n, 'mistake')} in the rules", file=out)
        return 1
    print(f"rules ok: {_plural(nfiles, 'file')}, {len(c.ruleset.rules)} command rules and "
          f"{len(c.annotations)} annotations in effect", file=out)
    trial = _on_trial(c.ruleset)
    if trial:  # never weaker by accident: say which rules do not refuse
        print(f"on trial (they do not refuse): {', '.join(f'{rid} ({a})' for rid, a in trial)}"
              f"; guard rules list shows every rule's action", file=out)
    return 0


def _on_trial(rs: Any) -> list[tuple[str, str]]:
    """The refusing rules whose action here (config, GUARD_MODE) is warn or observe."""
    mode, _ = mode_of(os.environ.get("GUARD_MODE"))
    actions = [(r.id, effective(r, rs.config, mode)[0]) for r in rs.rules if r.verdict != "allow"]
    return [(rid, a) for rid, a in actions if a != "refuse"]


def cmd_test(t: Target, out: Any) -> int:
    """Run every example (command rules: against the rule alone and the whole set; annotations:
    through the annotator); print the failures, then the counts."""
    c = compile_files(t.layers, examples="all", run=rule_examples)
    errors = [d for d in c.errors if _mine(t, d.file)]
    for d in errors:
        print(d, file=out)
    results = [r for r in c.examples if _mine(t, r.entry.doc.name)]
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(r.diagnostic(), file=out)
    from guard.act.annotate import run_examples

    mine = [r for r in _typed(c.annotations) if _mine(t, r.source)]
    sfail = run_examples(mine)
    for line in sfail:
        print(line, file=out)
    nex = sum(len(r.must) + len(r.must_not) for r in mine)
    nbad = len(errors) + len(failed) + len(sfail)
    print(f"{len(results) - len(failed)}/{len(results)} command examples passed, "
          f"{nex - len(sfail)}/{nex} annotation examples passed ({_plural(len(mine), 'annotation')})"
          + (f"; {_plural(len(errors), 'mistake')} in the rules (guard rules lint)" if errors else ""), file=out)
    return 1 if nbad else 0


def cmd_list(t: Target, out: Any) -> int:
    c = compile_files(t.layers, examples="none")
    if c.ruleset.errors:
        print(f"the rule files hold {len(c.ruleset.errors)} mistake(s), first: {c.ruleset.errors[0]}", file=out)
        print("guard keeps using the last good rule set until they are fixed (guard rules lint)", file=out)
        rs = c.ruleset
    else:
        rs = compile_for_load(t.layers, rule_examples)  # what the loader would use: without rules whose examples fail
    width = max([len(r.id) for r in rs.rules] + [len(a["id"]) for a in rs.annotations] + [10])
    mode, mode_note = mode_of(os.environ.get("GUARD_MODE"))
    if mode_note:
        print(f"guard: {mode_note}", file=sys.stderr)
    print(f"{'id':<{width}}  {'verdict':<12}  {'action':<8}  {'tool':<13}  source", file=out)
    for r in rs.rules:
        allow = r.verdict == "allow"
        verdict = "allow" if allow else str(r.category)
        action = "-" if allow else effective(r, rs.config, mode)[0]  # what a match does here and now
        note = ""
        if r.id in c.replaced:
            note = "  (replaces " + ", ".join(c.replaced[r.id]) + ")"
        print(f"{r.id:<{width}}  {verdict:<12}  {action:<8}  {r.tool or '-':<13}  {r.source}{note}",
              file=out)
    for d in rs.disabled:
        print(f"{d['id']:<{width}}  {'disabled':<12}  {'-':<8}  {'-':<13}  {d['source']}  (by {d['by']})", file=out)
    for line in rs.dropped:
        print(f"not loaded: {line}", file=out)
    if rs.annotations:
        print(f"\n{'annotation':<{width}}  {'category':<12}  {'tool':<13}  source", file=out)
        for a in rs.annotations:
            print(f"{a['id']:<{width}}  {a.get('category') or 'annotation':<12}  {a.get('tool') or '-':<13}  "
                  f"{display(Path(a['source']))}:{a['line']}", file=out)
    return 0


def _read(argv: list[str]) -> tuple[bytes, str | None]:
    """What ``argv`` prints (stdout and stderr), run with no shell, stdin closed, LC_ALL=C and a
    short timeout; or the reason it could not be read."""
    import signal
    import subprocess

    env = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MANWIDTH": "100", "HOME": "/nonexistent"}
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=env, start_new_session=True)
    except OSError as e:
        return b"", f"{argv[0]}: {e.strerror or e}"
    try:
        out, _ = p.communicate(timeout=HELP_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # its own session: what it started goes too
        p.communicate()
        return b"", f"{' '.join(argv)} did not finish in {HELP_TIMEOUT:g} s"
    return out, None


def draft_one(program: str) -> tuple[str | None, str | None]:
    """The draft entry for ``program`` (its --help, --version and manual), or the one-line reason
    there is none."""
    import shutil

    from guard.ruleset import draft

    path = shutil.which(program)
    if path is None:
        return None, f"{program}: not found on PATH"
    help_bytes, why = _read([path, "--help"])
    if why:
        return None, why
    if not draft.is_text(help_bytes):
        return None, f"{program} --help printed no text"
    help_text = help_bytes.decode("utf-8", "replace")
    manual = b""
    if shutil.which("man"):
        manual, _ = _read(["man", "-P", "cat", os.path.basename(program)])
        manual = manual if draft.is_text(manual) and b"No manual entry" not in manual[:200] else b""
    version_bytes, _ = _read([path, "--version"])
    version_bytes = version_bytes if draft.is_text(version_bytes) else b""
    version = draft.version_line(version_bytes.decode("utf-8", "replace")) or draft.version_line(help_text)
    d = draft.draft(os.path.basename(program), help_text, manual.decode("utf-8", "replace"), version)
    if d.usage is None and not (d.with_value or d.with_values or d.cwd_option or d.shell_option):
        return None, f"{program} --help shows no usage line and no options"
    return draft.render(d), None


def cmd_draft(programs: list[str], out: Any) -> int:
    """``guard rules draft PROGRAM…``: a draft ``runs:`` entry per program; 2 if one could not be read."""
    status = 0
    for program in programs:
        text, why = draft_one(program)
        if why:
            print(f"guard: rules draft: {why}", file=sys.stderr)
            status = 2
        else:
            print(text, file=out, end="")
    return status


def main(argv: list[str]) -> int:
    """``guard rules list|lint|test [PATH…]``, ``guard rules draft PROGRAM…``; ``argv`` starts
    with the subcommand."""
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    if argv and argv[0] == "draft":
        if len(argv) < 2 or any(a.startswith("-") for a in argv[1:]):
            print(f"guard: {USAGE}", file=sys.stderr)
            return 2
        return cmd_draft(argv[1:], sys.stdout)
    if not argv or argv[0] not in ("list", "lint", "test"):
        print(f"guard: {USAGE}", file=sys.stderr)
        return 2
    sub, paths = argv[0], argv[1:]
    for p in paths:
        if p.startswith("-"):
            print(f"guard: rules {sub}: unknown option {p}; {USAGE}", file=sys.stderr)
            return 2
        if not os.path.exists(entry_path(p)):
            print(f"guard: rules {sub}: {p}: no such file or folder", file=sys.stderr)
            return 2
    t = target(paths, os.environ)
    try:
        return {"list": cmd_list, "lint": cmd_lint, "test": cmd_test}[sub](t, sys.stdout)
    except BrokenPipeError:
        return 0
