"""Inputs that must never raise and must finish."""

from __future__ import annotations

import pytest

from guard.ir import Script
from guard.parse import parse
from tests.parse.conftest import argvs

HOSTILE = {
    "nul": "echo \x00 git\x00push",
    "binary": bytes(range(256)).decode("latin-1") * 4,
    "lone surrogate": "echo \ud800 git push",
    "reserved char": "echo \uffff",
    "unbalanced single": "echo 'abc",
    "unbalanced double": 'echo "abc $(x',
    "unbalanced paren": "echo $(((",
    "unbalanced heredoc": "cat <<EOF\nno end",
    "deep cmdsub": "echo " + "$(" * 1000 + "git push" + ")" * 1000,
    "deep subshell": "(" * 1000 + "git push" + ")" * 1000,
    "deep group": "{ " * 1000 + "git push; " + "}; " * 1000,
    "deep if": "if a; then " * 600 + "git push" + "; fi" * 600,
    "deep backticks": "echo " + "`" * 301,
    "deep dquote": 'echo "' + '$(echo "' * 500 + "x" + '")' * 500 + '"',
    "deep arith": "echo $((" * 400 + "1" + "))" * 400,
    "huge": "echo " + "a" * 10_000_000,
    "many statements": "echo hi; " * 50_000,
    "only operators": ";;&&||| & ) } fi done",
    "lone backslash": "\\",
    "crlf": "git status\r\ngit push\r\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_returns_a_script(name: str) -> None:
    script = parse(HOSTILE[name])
    assert isinstance(script, Script)
    assert script.parser in ("tree-sitter", "bashlex", "scan", "none")
    if script.body is None and script.parser == "none":
        assert script.error


def test_too_deep_is_reported_not_crashed() -> None:
    script = parse(HOSTILE["deep cmdsub"])
    assert script.parser == "tree-sitter"
    assert script.error and "nesting" in script.error


def test_shallow_part_of_deep_input_is_kept() -> None:
    src = "git push; " + HOSTILE["deep group"]
    assert ["git", "push"] in argvs(parse(src))


def test_non_string_input() -> None:
    assert isinstance(parse(b"git status"), Script)
    assert isinstance(parse(None), Script)  # type: ignore[arg-type]
