"""``guard check`` and ``guard explain``: the verdict for a command, for a program or a person.

Only argument handling and printing live here; the analysis is ``guard.engine``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from guard.context import Context
from guard.ir import UNKNOWN, Verdict

EXIT_ALLOW, EXIT_REFUSE, EXIT_USAGE = 0, 1, 2


def _show(s: str) -> str:
    return s.replace(UNKNOWN, "…")


def verdict_json(v: Verdict, id_: Any = None, with_id: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if with_id:
        out["id"] = id_
    out.update(
        verdict=v.verdict,
        category=v.category,
        rule=v.rule,
        tool=v.tool,
        message=v.message,
        invocations=[
            {
                "program": _show(i.program),
                "argv": [_show(a) for a in i.argv],
                "cwd": _show(i.cwd),
                "in_tree": place,
                "via": [_show(x) for x in i.via],
            }
            for i, place in zip(v.invocations, v.in_tree or (None,) * len(v.invocations), strict=False)
        ],
        unresolved=list(v.unresolved),
        parser=v.parser,
    )
    if v.rule_source:
        out["rule_source"] = v.rule_source
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        print(f"guard: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="guard check", add_help=True)
    p.add_argument("--cwd")
    p.add_argument("--tree", action="append", default=[])
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--rules", action="append", default=[])
    p.add_argument("--json", action="store_true")
    p.add_argument("--jsonl", action="store_true")
    p.add_argument("--strict", action="store_true")
    p.add_argument("command", nargs="*")
    return p


def _env_pairs(pairs: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--env expects NAME=VALUE, got {pair!r}")
        k, v = pair.split("=", 1)
        env[k] = v
    return env


def _base_context(ns: argparse.Namespace) -> Context:
    env = dict(os.environ)
    env.update(_env_pairs(ns.env))
    for r in ns.rules:
        if not os.path.exists(r):
            raise ValueError(f"--rules {r}: no such file or folder")
    rules = tuple(ns.rules) or None
    extra = tuple(p for p in env.get("GUARD_RULES", "").split(":") if p)
    ctx = Context.from_environ(
        cwd=ns.cwd or os.getcwd(),
        env=env,
        trees=tuple(ns.tree) or None,
        rule_paths=extra + (rules or ()),
    )
    if ns.strict:
        from guard.record import replace

        ctx = replace(ctx, strict=True)
    return ctx


def _config_errors(ctx: Context) -> list[str]:
    from guard import policy

    return policy.load(ctx).errors


def _parsed(argv: list[str]) -> tuple[argparse.Namespace, Context] | None:
    """The options and the context they give; None (after a one-line message) when unusable."""
    ns = _check_parser().parse_args(argv)
    try:
        return ns, _base_context(ns)
    except ValueError as e:
        print(f"guard: {e}", file=sys.stderr)
        return None


def cmd_check(argv: list[str]) -> int:
    parsed = _parsed(argv)
    if parsed is None:
        return EXIT_USAGE
    ns, ctx = parsed
    errors = _config_errors(ctx)
    if errors:
        for e in errors[:5]:
            print(f"guard: configuration error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if ns.jsonl:
        return _check_stream(ctx)
    if not ns.command:
        print("guard: check needs a command (guard check [options] -- COMMAND)", file=sys.stderr)
        return EXIT_USAGE
    from guard.engine import analyze

    command = " ".join(ns.command) if len(ns.command) > 1 else ns.command[0]
    try:
        v = analyze(command, ctx)
    except Exception as e:  # a bug in guard: one line, never a traceback
        print(f"guard: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if ns.json:
        print(json.dumps(verdict_json(v), ensure_ascii=False))
    elif v.verdict == "refuse":
        print(v.message)
    else:
        print("allow" + (f" (unresolved: {'; '.join(v.unresolved)})" if v.unresolved else ""))
    return EXIT_REFUSE if v.verdict == "refuse" else EXIT_ALLOW


def _check_stream(ctx: Context) -> int:
    from guard.engine import analyze
    from guard.record import replace

    out = sys.stdout
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        id_: Any = None
        has_id = False
        try:
            obj = json.loads(line)
            if isinstance(obj, dict):
                has_id, id_ = "id" in obj, obj.get("id")
            if not isinstance(obj, dict) or not isinstance(obj.get("command"), str):
                raise ValueError("expected an object with a string 'command'")
            lctx = ctx
            if obj.get("cwd") is not None:
                lctx = replace(lctx, cwd=str(obj["cwd"]))
            if isinstance(obj.get("env"), dict):
                env = dict(lctx.env)
                env.update({str(k): str(v) for k, v in obj["env"].items()})
                lctx = replace(lctx, env=env)
            v = analyze(obj["command"], lctx)
            res = verdict_json(v, id_, has_id)
        except Exception as e:  # one bad line never stops the stream
            res = {"id": id_} if has_id else {}
            res.update(verdict="error", message=f"{type(e).__name__}: {e}")
        out.write(json.dumps(res, ensure_ascii=False) + "\n")
        out.flush()
    return EXIT_ALLOW


def cmd_explain(argv: list[str]) -> int:
    parsed = _parsed(argv)
    if parsed is None:
        return EXIT_USAGE
    ns, ctx = parsed
    if not ns.command:
        print("guard: explain needs a command", file=sys.stderr)
        return EXIT_USAGE
    command = " ".join(ns.command) if len(ns.command) > 1 else ns.command[0]
    print(explain_text(command, ctx))
    return EXIT_ALLOW


def explain_text(command: str, ctx: Context) -> str:
    from guard import parse, policy, resolve

    rs = policy.load(ctx)
    ctx = policy.effective_context(ctx, rs)
    script = parse.parse(command)
    res = resolve.resolve(script, ctx)
    v = policy.classify(script, res, ctx, rs)
    lines = [f"command: {command if len(command) < 300 else command[:297] + '...'}"]
    lines.append(f"cwd: {ctx.cwd}   tree: {':'.join(ctx.trees)}")
    lines.append(f"parser: {script.parser}" + (f" ({script.error})" if script.error else ""))
    lines.append(f"invocations: {len(v.invocations)}")
    places = v.in_tree or (None,) * len(v.invocations)
    for n, (inv, place) in enumerate(zip(v.invocations, places, strict=False), 1):
        where = {True: "in the tree", False: "outside the tree", None: "unknown"}[place]
        lines.append(f"  {n}. {' '.join(_show(a) for a in inv.argv)}")
        lines.append(f"     cwd {_show(inv.cwd)} ({where})")
        if inv.via:
            lines.append(f"     via {' → '.join(_show(x) for x in inv.via)}")
    if v.unresolved:
        lines.append("unresolved:")
        lines.extend(f"  - {u}" for u in v.unresolved)
    if v.verdict == "refuse":
        lines.append(f"verdict: refuse ({v.category}) by rule {v.rule} at {v.rule_source}")
        lines.append(f"tool: {v.tool or '-'}")
        lines.append(f"message: {v.message}")
    else:
        lines.append("verdict: allow (no refusing rule matched any invocation)")
    return "\n".join(lines)
