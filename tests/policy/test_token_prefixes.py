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
