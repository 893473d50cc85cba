"""``guard rules diff --old PATH… --new PATH… [--commands FILE…] [--json]``: a rules change tried
on real commands before it reaches the fleet.

Each command of the corpus is parsed and resolved once, then classified by both rule sets; every
command whose verdict, category or tool changes is reported, grouped by the rule that decides it
now (or decided it before, when no rule does any more), with how often the corpus holds it.

A rule set is given as paths, the way ``GUARD_RULES`` gives them: files and folders of rule
YAML layered on the shipped rules. A folder holding ``config.yaml``, ``programs/`` and ``commands/`` is a whole
rule tree (another version of ``rules/``) and replaces the shipped rules instead. ``--old``
defaults to the shipped rules.

The corpus: JSON lines, each an object with a ``command`` (audit records, ``fixtures/commands``,
``guard check --jsonl`` input; a collector's envelope around an audit record is looked through)
and optionally ``cwd`` (default ``/workspace/app``), ``env``, ``tree`` and, from audit records,
``role``. Files, folders (their ``*.jsonl*``/``*.log``/``*.json`` files) and ``.gz`` files are
read; ``-`` is standard input. Exit 0 when nothing changes, 1 when something does, 2 on a usage
error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from guard.text.display import inert, show

DEFAULT_CWD = "/workspace/app"


class UsageError(Exception):
    pass


@dataclass(frozen=True)
class Case:
    command: str
    cwd: str
    env: tuple[tuple[str, str], ...] = ()
    trees: tuple[str, ...] = ()


# --------------------------------------------------------------------------- rule sets


def rule_set(paths: list[str]) -> Any:
    """The rule set these paths give (see the module's docstring); UsageError when it does not
    compile."""
    from guard.engine import rule_examples
    from guard.ruleset import layers as rulelayers
    from guard.ruleset import load as loader
    from guard.ruleset.paths import entry_path

    for p in paths:
        if not os.path.exists(entry_path(p)):
            raise UsageError(f"{p}: no such file or folder")
    whole = [p for p in paths if os.path.isdir(p) and os.path.isfile(os.path.join(p, "config.yaml"))]
    if not whole:
        layers = rulelayers.rule_layers(tuple(paths), None)
    else:
        layers = [rulelayers.tree_layer(Path(whole[0]), whole[0])]
        layers += rulelayers.rule_layers(tuple(p for p in paths if p != whole[0]), None)[1:]
    rs = loader.compile_layers(layers, rule_examples)
    if rs.errors:
        raise UsageError(f"{' '.join(paths) or 'the shipped rules'}: {rs.errors[0]}")
    return rs


# --------------------------------------------------------------------------- the corpus


def _cases_in(value: object) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict) and isinstance(value.get("command"), str):
        yield value
        return
    from guard.audit.reports.read import records_in_line

    found = records_in_line(json.dumps(value)) or []
    yield from (r for r in found if isinstance(r.get("command"), str))


def _case(obj: dict[str, Any]) -> Case:
    env = obj.get("env") if isinstance(obj.get("env"), dict) else {}
    pairs = {str(k): str(v) for k, v in env.items()}
    if isinstance(obj.get("role"), str) and "GUARD_ROLE" not in pairs:
        pairs["GUARD_ROLE"] = obj["role"]
    tree = obj.get("tree")
    trees = (
        (tree,) if isinstance(tree, str) else tuple(str(t) for t in tree) if isinstance(tree, list) else ()
    )
    cwd = obj.get("cwd") if isinstance(obj.get("cwd"), str) and obj.get("cwd") else DEFAULT_CWD
    return Case(obj["command"], cwd, tuple(sorted(pairs.items())), trees)


def read_corpus(paths: list[str], stdin: IO[bytes]) -> tuple[Counter[Case], int]:
    """Each distinct case with how often the corpus holds it, and the lines skipped."""
    from guard.audit.reports.read import streams

    cases: Counter[Case] = Counter()
    skipped = 0
    for _, stream in streams(paths, stdin):
        for raw in stream:
            line = raw.decode("utf-8", "replace").strip() if isinstance(raw, bytes) else raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                value = json.loads(line)
            except ValueError:
                skipped += 1
                continue
            found = list(_cases_in(value))
            skipped += not found
            for obj in found:
                cases[_case(obj)] += 1
    return cases, skipped


# --------------------------------------------------------------------------- replay


def _outcome(v: Any) -> dict[str, Any]:
    return {"verdict": v.verdict, "category": v.category, "rule": v.rule, "tool": v.tool,
            "action": v.action or "-"}  # a move from observe to refuse is a change


def replay(cases: Counter[Case], old: Any, new: Any) -> list[dict[str, Any]]:
    """Every case whose verdict, category or tool differs between the two rule sets."""
    from guard import parse, resolve
    from guard.context import Context
    from guard.policy import classify as classifier

    changed = []
    for case, count in cases.items():
        base = Context.from_environ(
            cwd=case.cwd, env={"HOME": "/root", **dict(case.env)}, trees=case.trees or None
        )
        script = parse.parse(case.command)
        outcomes = []
        for rs in (old, new):
            ctx = classifier.effective_context(base, rs)
            try:
                verdict = classifier.classify(script, resolve.resolve(script, ctx), ctx, rs)
                outcomes.append(_outcome(verdict))
            except Exception as e:  # a bug in guard: shown, not hidden
                outcomes.append(
                    {"verdict": "error", "category": None, "rule": None, "tool": None, "action": "-", "error": str(e)}
                )
        a, b = outcomes
        if (a["verdict"], a["category"], a["tool"], a["action"]) != (b["verdict"], b["category"], b["tool"], b["action"]):
            changed.append({"command": case.command, "cwd": case.cwd, "count": count, "old": a, "new": b})
    changed.sort(key=lambda c: (_group(c), -c["count"], c["command"]))
    return changed


def _group(change: dict[str, Any]) -> str:
    return change["new"]["rule"] or change["old"]["rule"] or "-"


def _kind(change: dict[str, Any]) -> str:
    a, b = change["old"]["verdict"], change["new"]["verdict"]
    if a != "refuse" and b == "refuse":
        return "newly refused"
    if a == "refuse" and b != "refuse":
        return "no longer refused"
    old, new = change["old"], change["new"]
    if (old["category"], old["tool"]) == (new["category"], new["tool"]):
        return "action changed"  # a rule on trial moved between observe and warn, say
    return "category or tool changed"


def summarise(cases: Counter[Case], changed: list[dict[str, Any]], skipped: int) -> dict[str, Any]:
    groups: dict[str, dict[str, Any]] = {}
    for c in changed:
        g = groups.setdefault(_group(c), {"rule": _group(c), "commands": 0, "occurrences": 0, "changes": []})
        g["commands"] += 1
        g["occurrences"] += c["count"]
        g["changes"].append({**c, "kind": _kind(c)})
    kinds = Counter(_kind(c) for c in changed)
    return {
        "commands": len(cases),
        "occurrences": sum(cases.values()),
        "skipped_lines": skipped,
        "changed": len(changed),
        "newly_refused": kinds["newly refused"],
        "no_longer_refused": kinds["no longer refused"],
        "category_or_tool_changed": kinds["category or tool changed"],
        "action_changed": kinds["action changed"],
        "by_rule": sorted(groups.values(), key=lambda g: (-g["occurrences"], g["rule"])),
    }


def _side(o: dict[str, Any]) -> str:
    if o["verdict"] != "refuse":
        on_trial = o.get("action") in ("warn", "observe")
        return f"allow ({o['action']} by {show(o['rule'] or '-', 40)})" if on_trial else o["verdict"]
    return (
        f"refuse {show(o['category'] or '-', 20)} {show(o['rule'] or '-', 40)} {show(o['tool'] or '-', 24)}"
    )


def render_text(data: dict[str, Any]) -> str:
    lines = [
        f"guard rules diff: {data['commands']} commands ({data['occurrences']} occurrences) replayed;"
        f" {data['changed']} change: {data['newly_refused']} newly refused, {data['no_longer_refused']}"
        f" no longer refused, {data['category_or_tool_changed']} with another category or tool"
        + (f", {data['action_changed']} with another action" if data["action_changed"] else "")
    ]
    if data["skipped_lines"]:
        lines.append(f"  {data['skipped_lines']} lines without a command skipped")
    for g in data["by_rule"]:
        lines.append("")
        lines.append(f"{show(g['rule'], 60)}: {g['commands']} commands, {g['occurrences']} occurrences")
        for c in g["changes"]:
            lines.append(f"  {c['count']:>6}  {show(c['command'], 100)}")
            lines.append(f"          {_side(c['old'])}  →  {_side(c['new'])}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="guard rules diff", description="Replay commands through two rule sets; show what changes."
    )
    p.add_argument(
        "--old",
        nargs="+",
        default=[],
        metavar="PATH",
        help="the rule set in use (default: the shipped rules)",
    )
    p.add_argument("--new", nargs="+", required=True, metavar="PATH", help="the rule set to try")
    p.add_argument(
        "--commands",
        nargs="+",
        default=[],
        metavar="FILE",
        help="JSON lines with a command each: audit logs, fixtures, a sample (- for stdin)",
    )
    p.add_argument("--json", action="store_true", help="the changes as one JSON object")
    return p  # fmt: skip


def main(argv: list[str]) -> int:
    try:
        opts = _parser().parse_args(argv)
        if not opts.commands:
            raise UsageError("--commands FILE… is needed: audit logs or JSON lines of commands to replay")
        old, new = rule_set(opts.old), rule_set(opts.new)
        stdin = sys.stdin.buffer if sys.stdin is not None else open(os.devnull, "rb")
        cases, skipped = read_corpus(opts.commands, stdin)
    except UsageError as e:
        print(f"guard rules diff: {inert(str(e))}", file=sys.stderr)
        return 2
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except OSError as e:
        print(
            f"guard rules diff: cannot read {inert(e.filename or 'input')}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 2
    data = summarise(cases, replay(cases, old, new), skipped)
    text = json.dumps(data, indent=2) + "\n" if opts.json else render_text(data)
    sys.stdout.write(text)
    sys.stdout.flush()
    return 1 if data["changed"] else 0
