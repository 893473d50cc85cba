"""Token prefixes are config (``token_prefixes``): a search for one is a token hunt, whether it
is written literally or with a character class in place of a letter, and an operator's own
prefix joins the shipped ones with ``token_prefixes+:``."""

from __future__ import annotations

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.ruleset import load
from guard.ruleset.derived import prefix_search


@pytest.mark.parametrize("word,found", [
    ("ghp_", True), ("gh[pousr]_[A-Za-z0-9]{36}", True), ("github_pat_", True), ("g[hl]p_", True),
    ("glpat-", True), ("ghp", False), ("glpath", False), ("gh[a-z]_", False), ("[", False),
])
def test_a_prefix_is_found_literally_or_with_a_class_holding_its_letter(word: str, found: bool) -> None:
    search = prefix_search(["ghp_", "gho_", "github_pat_", "glpat-"])
    assert search is not None and bool(search.search(word)) is found


def test_no_prefixes_find_nothing() -> None:
    assert prefix_search([]) is None


def test_an_operators_prefix_extends_the_shipped_ones(tmp_path, monkeypatch) -> None:
    mine = tmp_path / "acme.yaml"
    mine.write_text("config:\n  token_prefixes+: [acme_tok_]\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    load.forget()
    ctx = Context(cwd="/workspace/app", rule_paths=(str(mine),))
    assert analyze("grep -rn acme_tok_ /srv", ctx).rule == "token-pattern-search"
    assert analyze("grep -r ghp_ ~", ctx).rule == "token-pattern-search"  # the shipped ones stay
    assert analyze("grep -rn acme_tool src/", ctx).verdict == "allow"
    load.forget()


@pytest.mark.parametrize("text", [
    "grep -rn ghp_ src", "sed -n '/[gG]hp_/p' f", "[[ $x == g[hl]p_* ]]", "awk '/[a-z]+/ {print $1}'",
    "[" * 200 + "g" * 200, "[g" * 300 + "hp_", "gh[a-z]_", "x\ud800[ghp_]", "x\ud800 [abc]", "glpat-", "[", "",
])
def test_the_search_answers_as_the_pattern_does_on_every_path(text: str) -> None:
    # without a "[" the prefixes are looked for as substrings; with one RE2 runs the pattern,
    # and Python's engine takes text RE2 cannot (a lone surrogate): all give the pattern's answer
    search = prefix_search(["ghp_", "gho_", "github_pat_", "glpat-"])
    assert search is not None
    assert search.search(text) is (search.pattern.search(text) is not None)
