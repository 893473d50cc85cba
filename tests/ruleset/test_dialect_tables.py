"""A rule author adds a language with YAML alone: a dialect table (any rule file's `dialects:`)
and a program spec's `inline:`. Both are schema-checked, and their examples run when the rules
load, with the mistakes said as file:line:column like every other rule file's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze, rule_examples
from guard.ruleset import compile as rcompile
from guard.ruleset import layers as rlayers
from guard.ruleset import read as rread

pytestmark = pytest.mark.usefixtures("isolated_rules")

# A made-up interpreter, "luax", that runs Lua: read with the Lua grammar through a table of its own.
LUAX = """\
programs:
  - program: luax
    subcommand: false
    inline:
      dialect: luax
      code_option: [--run]
      examples:
        - {command: "luax --run 'print(1)'", code: "print(1)"}
dialects:
  - dialect: luax
    grammar: {module: tree_sitter_lua}
    strings: [string, string_content]
    variables: [identifier]
    lists: [arguments]
    concat: {types: [binary_expression], operators: [".."]}
    assignments:
      - {type: assignment_statement, left: variable_list, right: expression_list}
    calls:
      - {type: function_call, function: name, arguments: arguments}
    runs:
      - {names: [sh.run], as: shell, args: 1}
    examples:
      runs:
        - {code: 'local g = "git"; sh.run(g .. " push")', shell: git push}
      allows:
        - 'print("git push")'
"""


def _diags(tmp_path: Path, text: str, examples: str = "unshipped") -> list[rread.Diagnostic]:
    f = tmp_path / "mine.yaml"
    f.write_text(textwrap.dedent(text))
    c = rcompile.compile_files(rlayers.rule_layers((str(f),), None), examples=examples, run=rule_examples)
    return [d for d in c.diagnostics if d.file == str(f)]


def test_a_new_language_in_yaml_alone(tmp_path: Path) -> None:
    assert _diags(tmp_path, LUAX) == []
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"},
                               rule_paths=(str(tmp_path / "mine.yaml"),))
    v = analyze("luax --run 'local r = \"origin\"; sh.run(\"git push \" .. r)'", ctx)
    assert (v.verdict, v.category) == ("refuse", "publish")
    assert [i.argv for i in v.invocations if i.program == "git"] == [("git", "push", "origin")]
    assert analyze("luax --run 'print(\"git push\")'", ctx).verdict == "allow"


def test_a_dialect_example_that_fails_is_said_where_it_is(tmp_path: Path) -> None:
    diags = _diags(tmp_path, LUAX.replace("shell: git push}", "shell: git pull}"))
    assert [(d.line, d.kind) for d in diags] == [(24, "dialect-example")]  # the runs: example's own line
    assert "runs the shell line 'git push', the example says the shell line 'git pull'" in diags[0].message


def test_an_allows_example_that_runs_git_is_a_mistake(tmp_path: Path) -> None:
    diags = _diags(tmp_path, LUAX.replace("""'print("git push")'""", """'sh.run("git status")'"""))
    assert [d.kind for d in diags] == ["dialect-example"] and "the example says it runs none" in diags[0].message


def test_an_inline_example_that_reads_elsewhere_is_a_mistake(tmp_path: Path) -> None:
    diags = _diags(tmp_path, LUAX.replace('code: "print(1)"', "script: print.lua"))
    assert [d.kind for d in diags] == ["inline-example"]
    assert "reads the code 'print(1)', the example says the script 'print.lua'" in diags[0].message


@pytest.mark.parametrize(("change", "kind", "words"), [
    (("grammar: {module: tree_sitter_lua}", "grammar: {module: tree_sitter_nosuch}"), "bad-grammar", "cannot be loaded"),
    (("    strings: [string", "    strngs: [string"), "unknown-key", "did you mean 'strings'"),
    (("as: shell, args: 1", "as: shel, args: 1"), "bad-value", "did you mean 'shell'"),
    (("code_option: [--run]", "code_option: [run]"), "bad-option", "an option name"),
])
def test_schema_and_grammar_mistakes(tmp_path: Path, change: tuple[str, str], kind: str, words: str) -> None:
    diags = _diags(tmp_path, LUAX.replace(*change))
    assert diags and diags[0].kind == kind and words in diags[0].message, diags


def test_the_shipped_tables_examples_run_under_lint_only(tmp_path: Path) -> None:
    """Loading the shipped rules runs no dialect example (that imports every grammar): CI's lint
    and `guard rules test` do, and they pass."""
    shipped = rlayers.rule_layers((), None)
    assert rcompile.compile_files(shipped, examples="unshipped", run=rule_examples).ruleset.dialects.keys() >= {
        "perl", "ruby", "php", "lua", "go", "java", "kotlin", "groovy", "rust", "powershell"}
    c = rcompile.compile_files(shipped, examples="all", run=rule_examples)
    assert [str(d) for d in c.diagnostics if d.kind in ("dialect-example", "inline-example", "bad-grammar")] == []
