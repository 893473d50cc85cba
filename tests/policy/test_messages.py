"""Refusal messages (docs/behaviour.md §6): short, stable, naming the tool with arguments and the route."""

from __future__ import annotations

import json
from pathlib import Path

from guard.context import Context
from guard.engine import analyze

REPO = Path(__file__).resolve().parents[2]


def verdict(cmd: str, **env: str):
    return analyze(cmd, Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", **env}))


def test_every_fixture_refusal_message_is_short_and_names_what_was_refused() -> None:
    rows = [json.loads(x) for x in (REPO / "fixtures/commands/labelled.jsonl").read_text(encoding="utf-8").split("\n") if x.strip()]
    for r in rows:
        if r["expect"] != "refuse":
            continue
        v = analyze(r["command"], Context.from_environ(cwd=r.get("cwd", "/workspace/app"), trees=("/workspace",),
                                                      env={"HOME": "/root", **r.get("env", {})}))
        assert v.message.startswith("Refused: "), r
        limit = 800 if v.category == "publish" else 600  # publish adds the route
        assert len(v.message) <= limit, (len(v.message), v.message)
        if v.tool:
            assert v.tool in v.message


def test_wording_is_stable_across_runs_and_processes() -> None:
    a = verdict("alias g=git; g push").message
    b = verdict("alias g=git; g push").message
    assert a == b
    assert "(via alias g)" in a


def test_tool_is_named_with_arguments() -> None:
    v = verdict("git commit -am wip")  # the message the command names; no file named
    assert 'git_commit(prefix="app", files=[...], message="wip")' in v.message
    v = verdict("git commit")
    assert 'git_commit(prefix="app", files=[...], message="...")' in v.message
    v = verdict("git clone https://github.com/o/r")
    assert 'git_clone(url="https://github.com/o/r"' in v.message
    v = verdict("git diff")
    assert "git_diff(" in v.message and "diff -u" in v.message


def test_route_comes_from_guard_route_then_role() -> None:
    assert "Route for a worker" in verdict("git push", GUARD_ROLE="worker").message
    assert "review approved the exact patch" not in verdict("git push", GUARD_ROLE="worker").message
    assert "after review has approved the exact patch" in verdict("git push", GUARD_ROLE="coordinator").message
    v = verdict("git push", GUARD_ROLE="worker", GUARD_ROUTE="Ask the coordinator to land it.")
    assert v.message.endswith("Ask the coordinator to land it.")
    assert "Route" not in verdict("git status", GUARD_ROLE="worker").message


def test_primary_category_by_precedence_and_others_named() -> None:
    v = verdict("git add . && git commit -m x && git push")
    assert v.category == "publish"
    assert "Also refused: git add (mutate)" in v.message


def test_unknown_path_asks_for_a_literal_path() -> None:
    v = analyze("git -C \"$NOPE\" pull", Context.from_environ(cwd="/tmp", trees=("/workspace",), env={"HOME": "/root"}))
    assert v.verdict == "refuse" and v.category == "mutate"
    assert "name the path literally" in v.message
