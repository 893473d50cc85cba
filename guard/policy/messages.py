"""Refusal messages (docs/behaviour.md §6): what was refused and how it was recognised, why, the tool to use
with its arguments, and for publishing the route of this thread. Stable for the same input."""

from __future__ import annotations

from guard.context import Context
from guard.ir import UNKNOWN, Invocation
from guard.resolve import paths

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any


class _Fill(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def route_text(ctx: Context, config: dict[str, Any]) -> str:
    if ctx.route:
        return ctx.route
    routes = config.get("routes") or {}
    return routes.get(ctx.role or "") or routes.get("default") or ""


def render(
    rule: dict[str, Any],
    inv: Invocation,
    facts: dict[str, Any],
    ctx: Context,
    config: dict[str, Any],
    what: str,
    *,
    unknown: bool = False,
    others: list[tuple[str, str]] | None = None,
    scanned: bool = False,
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
        url=(facts.get("url") or "<url>").replace(UNKNOWN, "…"),
        path=paths.relative_to_tree(dest, trees).replace(UNKNOWN, "…") if dest else prefix,
    )
    tool = rule.get("tool")
    tools = config.get("tools") or {}
    values["tool_call"] = (tools.get(tool) or tool or "").format_map(values) if tool else ""
    template = rule.get("message") or "Refused: {what}."
    try:
        text = template.format_map(values)
    except (ValueError, IndexError):
        text = template
    if unknown:
        text += " The repository path could not be resolved from the command: name the path literally."
    if rule.get("category") == "publish":
        route = route_text(ctx, config)
        if route:
            text += " " + route
    for cat, other in others or []:
        text += f" Also refused: {other} ({cat})."
    if scanned:
        text += " (guard could not parse this command; it was judged from a token scan.)"
    return text
