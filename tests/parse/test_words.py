"""Quoting, escapes and expansions: one word in, the IR parts out."""

from __future__ import annotations

import pytest

from guard.ir import UNKNOWN, Arith, CmdSub, Lit, Param, ProcSub
from guard.parse import parse
from guard.parse.words import decode_ansi_c, lex_word
from tests.parse.conftest import argvs

NAME_CASES = [
    ("g'i't push", "git"),
    ("\\git push", "git"),
    ('"gi"\'t\' push', "git"),
    ("$'\\x67it' push", "git"),
    ("$'\\x67\\x69\\x74' push", "git"),
    ("$'\\147\\151\\164' push", "git"),
    ("$'\\u0067it' push", "git"),
    ('$"git" push', "git"),
    ('"git" push', "git"),
    ("g\\it push", "git"),
    ("'g'\"i\"t push", "git"),
    ("/usr/bin/git push", "/usr/bin/git"),
]


@pytest.mark.parametrize(("src", "name"), NAME_CASES)
def test_command_name_after_quote_removal(src: str, name: str) -> None:
    script = parse(src)
    assert script.parser == "tree-sitter"
    assert argvs(script)[0][:2] == [name, "push"]


@pytest.mark.parametrize(("src", "name"), NAME_CASES)
def test_text_lexer_agrees(src: str, name: str) -> None:
    first = src.split(" ")[0]
    parts = lex_word(first)
    assert "".join(p.text for p in parts if isinstance(p, Lit)) == name


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ("\\x67\\x69\\x74", "git"),
        ("a\\tb\\n", "a\tb\n"),
        ("\\e[0m", "\x1b[0m"),
        ("\\cA", "\x01"),
        ("it\\'s", "it's"),
        ("\\U0001F600", "\U0001f600"),
        ("\\q", "\\q"),
        ("\\x", "\\x"),
    ],
)
def test_ansi_c(body: str, value: str) -> None:
    assert decode_ansi_c(body) == value


def only_word(src: str, index: int = 1):
    script = parse(src)
    assert script.parser == "tree-sitter", script.error
    return script.body.words[index]


def test_quoted_flag() -> None:
    w = only_word("echo 'a'b")
    assert w.parts == (Lit("a", True), Lit("b", False))


def test_param_default_with_literal() -> None:
    (p,) = only_word("echo ${G:-git}").parts
    assert isinstance(p, Param) and p.name == "G" and p.op == ":-"
    assert p.arg is not None and p.arg.literal == "git"


def test_param_default_with_cmdsub() -> None:
    (p,) = only_word("echo ${X:-$(git push)}").parts
    assert isinstance(p, Param) and p.op == ":-"
    (sub,) = p.arg.parts
    assert isinstance(sub, CmdSub)
    assert argvs(sub.script) == [["git", "push"]]


@pytest.mark.parametrize(
    ("src", "name", "index", "length"),
    [
        ('"$@"', "@", "@", False),
        ("$1", "1", None, False),
        ('"${cmd[@]}"', "cmd", "@", False),
        ("${#x}", "x", None, True),
        ("${#a[@]}", "a", "@", True),
        ("$HOME", "HOME", None, False),
    ],
)
def test_params(src: str, name: str, index: str | None, length: bool) -> None:
    params = [p for p in only_word("echo " + src).parts if isinstance(p, Param)]
    assert len(params) == 1
    assert (params[0].name, params[0].index, params[0].length) == (name, index, length)


def test_backtick_is_cmdsub() -> None:
    (p,) = only_word("echo `git push`").parts
    assert isinstance(p, CmdSub) and argvs(p.script) == [["git", "push"]]


def test_procsub_and_arith() -> None:
    w = only_word("diff <(git show) x")
    assert isinstance(w.parts[0], ProcSub) and w.parts[0].direction == "<"
    w = only_word("echo $(( $(git push) + 1 ))")
    assert isinstance(w.parts[0], Arith)
    assert any(isinstance(p, CmdSub) and argvs(p.script) == [["git", "push"]] for p in w.parts)


def test_tilde_and_glob_stay_literal() -> None:
    assert only_word("ls ~/x").parts == (Lit("~/x", False),)
    assert only_word("ls *.py").parts == (Lit("*.py", False),)


def test_empty_quotes_is_an_empty_word() -> None:
    w = only_word("echo ''")
    assert w.literal == ""


def test_positions_are_characters() -> None:
    src = 'echo "日本語 🚀" && git push'
    script = parse(src)
    git = [s for s in script.body.items if s.words[0].literal == "git"][0]
    start, end = git.words[0].pos
    assert src[start:end] == "git"


def test_reserved_unknown_char_is_replaced() -> None:
    script = parse("echo " + UNKNOWN)
    assert UNKNOWN not in script.source
    assert script.body.words[1].literal == "\ufffd"
