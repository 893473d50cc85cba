"""The inline entry point: interpreter table, dispatch, caps, never raising."""

from __future__ import annotations

import pytest

from guard.resolve.inline import MAX_SOURCE, Finding, looks_like_command
from tests.resolve.inline.catalogue import analyze as analyze_inline
from tests.resolve.inline.catalogue import interpreter_lang, interpreters


@pytest.mark.parametrize(
    ("program", "lang"),
    [
        ("python", "python"), ("python3", "python"), ("python3.11", "python"), ("pypy3", "python"),
        ("node", "node"), ("nodejs", "node"), ("bun", "node"), ("deno", "node"),
        ("perl", "perl"), ("ruby", "ruby"), ("php", "php"),
        ("awk", "awk"), ("gawk", "awk"), ("mawk", "awk"), ("nawk", "awk"),
    ],
)
def test_interpreters_table(program: str, lang: str) -> None:
    spec = interpreters().get(program) or interpreters()[program.rstrip("0123456789.")]  # python3.11: versioned
    assert spec["dialect"] == lang
    assert interpreter_lang(program) == lang


@pytest.mark.parametrize(
    ("program", "lang"),
    [("/usr/bin/python3.12", "python"), ("perl5.36", "perl"), ("php8.2", "php"), ("python3.exe", "python"),
     ("bash", None), ("git", None), ("pythonista", None)],
)
def test_interpreter_lang_versioned_and_foreign(program: str, lang: str | None) -> None:
    assert interpreter_lang(program) == lang


@pytest.mark.parametrize("var", ["GH_PAT", "GITLAB_TOKEN", "MY_OWN_TOKEN"])
@pytest.mark.parametrize("code", ["python3 -c 'import os; print(os.environ[\"{v}\"])'",
                                  "python3 -c 'import os; os.getenv(\"{v}\")'",
                                  "node -e 'console.log(process.env.{v})'",
                                  "echo ${v}"])
def test_the_inline_analysers_use_the_config_token_vars(tmp_path, monkeypatch, var: str, code: str) -> None:
    """A variable is a token because the config says so, in the shell and in inline code alike
    (the analysers report every variable read; the rule set's token_vars decide)."""
    from guard.context import Context
    from guard.engine import analyze

    f = tmp_path / "c.yaml"
    f.write_text("config:\n  token_vars+: [MY_OWN_TOKEN]\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"}, rule_paths=(str(f),))
    v = analyze(code.format(v=var), ctx)
    assert (v.verdict, v.category) == ("refuse", "token-search")
    assert analyze(code.format(v="HOME"), ctx).verdict == "allow"


@pytest.mark.parametrize(
    ("lang", "src"),
    [
        ("python", "import os; os.system('git push')"),
        ("node", "require('child_process').execSync('git push')"),
        ("perl", "system('git push')"),
        ("ruby", "system('git push')"),
        ("php", "system('git push');"),
        ("awk", 'BEGIN { system("git push") }'),
    ],
)
def test_dispatch_to_each_language(lang: str, src: str) -> None:
    findings, notes = analyze_inline(lang, src)
    assert findings == [Finding(kind="shell", shell="git push", detail=findings[0].detail, line=1)]
    assert notes == []


def test_unknown_language_is_a_note() -> None:
    assert analyze_inline("cobol", "DISPLAY 'git push'") == ([], ["cobol: no analyser for this language"])


@pytest.mark.parametrize("lang", ["python", "node", "perl", "ruby", "php", "awk"])
def test_oversized_source_is_a_note(lang: str) -> None:
    findings, notes = analyze_inline(lang, "x" * (MAX_SOURCE + 1))
    assert findings == []
    assert notes == [f"{lang}: source larger than {MAX_SOURCE} characters, not analysed"]


@pytest.mark.parametrize("lang", ["python", "node", "perl", "ruby", "php", "awk"])
@pytest.mark.parametrize("src", ["", "\x00\x01\x02", "\ud800", "\uffff git push", "💥" * 1000])
def test_odd_input_never_raises(lang: str, src: str) -> None:
    findings, notes = analyze_inline(lang, src)
    assert findings == []
    assert isinstance(notes, list)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("git push", True), ("/usr/bin/git push", True), ("cd x && git commit -m y", True), ("curl -X POST u", True),
     ("gh pr create", True), ("echo git push", False), ("github", False), ("digit", False), ("legit push", False)],
)
def test_looks_like_command(text: str, expected: bool) -> None:
    assert looks_like_command(text) is expected
