"""Refusal messages (docs/behaviour.md §6): what was refused and how it was recognised, why, the tool to use
with its arguments, and for publishing the route of this thread. Stable for the same input.

A message repeats parts of the command, so it leaves here as ``guard.text.display.message``
makes it: no credential (a URL filled into a tool call loses its user-info and secret
parameters), no control character, no word past 200 characters, at most 1,000 characters."""

from __future__ import annotations

import json
import posixpath

from guard.context import Context
from guard.ir import UNKNOWN, Invocation
from guard.resolve import paths
from guard.text.display import message as finished
from guard.text.redact import redact, redact_url

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any

    from guard.ruleset.model import Rule


class _Fill(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


# What a tool's call shows for an argument the command does not name, unless the tool's ``args``
# say otherwise (rules/config.yaml).
_DEFAULTS = {"files": "[...]", "paths": "[...]", "file": '"<file>"', "message": '"..."', "branch": '"<branch>"',
             "title": '"..."'}
MESSAGE_CHARS = 160  # a longer message is shown by its first line, cut here


def clean(value: str) -> str:
    """Every value filled into a message from a command passes here: the one redaction."""
    return redact(value)


def tool_spec(config: dict[str, Any], tool: str | None) -> tuple[str, dict[str, Any]]:
    """(call template, declared args) of ``tool``: a string, or ``{call, args}``."""
    spec = (config.get("tools") or {}).get(tool) if tool else None
    if isinstance(spec, dict):
        args = spec.get("args") or {}
        return str(spec.get("call") or tool), {k: (v if isinstance(v, dict) else {"default": v}) for k, v in args.items()}
    return (spec or tool or ""), {}


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _message_value(text: str) -> str:
    text = text.strip().replace(UNKNOWN, "…")
    first = text.split("\n", 1)[0].strip()
    if first != text or len(first) > MESSAGE_CHARS:
        first = first[:MESSAGE_CHARS].rstrip() + " …"
    return first


def fill_values(fills: list[tuple[Invocation, dict[str, Any]]], repo_path: str, trees: tuple[str, ...],
                declared: dict[str, Any]) -> dict[str, str]:
    """The call's arguments the command names, from the facts of its invocations answered by the
    same tool (``git add A && git commit -m M``: A and M): files relative to the repository (the
    prefix) and to the tree, the message, the branch (not one the tool's args say ``never``)."""
    out: dict[str, str] = {}
    files: list[str] = []
    tree_files: list[str] = []
    message = message_file = branch = title = None
    home = "/root"
    for inv, facts in fills:
        base = facts.get("repo_path") or inv.cwd
        for f in facts.get("files") or ():
            if UNKNOWN in f or UNKNOWN in base:
                continue
            full = paths.join(base, f, home)
            rel = posixpath.relpath(full, repo_path) if full.startswith("/") else f
            in_tree = paths.relative_to_tree(full, trees)
            if rel != "." and rel not in files:
                files.append(rel)
            if not in_tree.startswith("/") and in_tree not in tree_files:
                tree_files.append(in_tree)
        m = facts.get("message")
        if message is None and m and UNKNOWN not in m.strip().split("\n", 1)[0]:
            message = m  # only its first line is shown: a body built at run time does not hide it
        mf = facts.get("message_file")
        if message_file is None and mf and UNKNOWN not in mf:
            message_file = mf
        t = facts.get("title")
        if title is None and t and UNKNOWN not in t:
            title = t
        b = facts.get("branch")
        if branch is None and b and UNKNOWN not in b:
            branch = b
    if files:
        out["files"] = "[" + ", ".join(_quoted(clean(f)) for f in files) + "]"
    if tree_files:
        out["paths"] = "[" + ", ".join(_quoted(clean(f)) for f in tree_files) + "]"
        out["file"] = _quoted(clean(tree_files[0]))
    if message is not None:
        out["message"] = _quoted(clean(_message_value(message)))
    elif message_file is not None:
        out["message"] = "<the text of " + clean(message_file) + ">"
    if title is not None:
        out["title"] = _quoted(clean(_message_value(title)))
    never = (declared.get("branch") or {}).get("never") or ()
    if branch is not None and branch not in never:
        out["branch"] = _quoted(clean(branch))
    return out


def unfilled(rule: Rule, fills: list[tuple[Invocation, dict[str, Any]]], config: dict[str, Any],
             trees: tuple[str, ...], repo_path: str) -> list[str]:
    """The tool's declared arguments the command names but the rule's message leaves out (lint)."""
    call, declared = tool_spec(config, rule.tool)
    if not declared:
        return []
    named = fill_values(fills, repo_path, trees, declared)
    message = rule.message or ""
    shown = call if "{tool_call}" in message else ""
    return [a for a in declared if a in named and "{" + a + "}" not in shown and "{" + a + "}" not in message]


def route_text(ctx: Context, config: dict[str, Any]) -> str:
    if ctx.route:
        return ctx.route
    routes = config.get("routes") or {}
    return routes.get(ctx.role or "") or routes.get("default") or ""


def render(
    rule: Rule,
    inv: Invocation,
    facts: dict[str, Any],
    ctx: Context,
    config: dict[str, Any],
    what: str,
    *,
    unknown: bool = False,
    others: list[tuple[str, str]] | None = None,
    scanned: bool = False,
    fills: list[tuple[Invocation, dict[str, Any]]] | None = None,
) -> str:
    trees = ctx.trees
    repo_path = facts.get("repo_path") or inv.cwd
    prefix = paths.relative_to_tree(repo_path, trees).replace(UNKNOWN, "…")
    if prefix.startswith("/"):  # not in the tree: the agent must name the prefix itself
        prefix = "."
    dest = facts.get("dest_path")
    values = _Fill(
        what=what,
        prefix=prefix if prefix != "." else "<prefix>",
        url=redact_url(facts.get("url") or "<url>").replace(UNKNOWN, "…"),
        path=paths.relative_to_tree(dest, trees).replace(UNKNOWN, "…") if dest else prefix,
    )
    tool = rule.tool
    call, declared = tool_spec(config, tool)
    for name, default in _DEFAULTS.items():
        values[name] = str((declared.get(name) or {}).get("default", default))
    values.update(fill_values(fills or [(inv, facts)], repo_path, trees, declared))
    if "url" in values and facts.get("url"):
        values["url"] = clean(values["url"])
    values["tool_call"] = call.format_map(values) if tool else ""
    template = rule.message or "Refused: {what}."
    try:
        text = template.format_map(values)
    except (ValueError, IndexError):
        text = template
    if unknown:
        text += " The repository path could not be resolved from the command: name the path literally."
    if rule.category == "publish":
        route = route_text(ctx, config)
        if route:
            text += " " + route
    for cat, other in others or []:
        text += f" Also refused: {other} ({cat})."
    if scanned:
        text += " (guard could not parse this command; it was judged from a token scan.)"
    return finished(text)
