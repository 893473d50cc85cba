"""`guard rules lint`: every kind of mistake, each reported as file:line:column: field: expected.

Each test writes a small rule file, lints it (the shipped rules are the layer below it, as with
GUARD_RULES), and checks the kind, the exact position and the wording an author acts on.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from guard.cli import rules as rcli
from guard.engine import rule_examples
from guard.ruleset import compile as rcompile
from guard.ruleset import layers as rlayers
from guard.ruleset.read import Diagnostic

pytestmark = pytest.mark.usefixtures("isolated_rules")


GOOD = """\
rules:
  - id: lfs-push
    category: publish
    tool: git_push
    message: "Refused: {what}. Push with {tool_call}."
    match: {program: git, subcommand: lfs, action: push}
    examples:
      refuse: ["git lfs push origin feature"]
      allow: ["git lfs ls-files"]
"""


def lint(tmp_path: Path, text: str, name: str = "mine.yaml") -> list[Diagnostic]:
    """Every diagnostic (mistakes and failing examples) the linter finds in one file."""
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    c = rcompile.compile_files(rlayers.rule_layers((str(f),), None), examples="all", run=rule_examples)
    mine = [d for d in c.diagnostics if d.file == str(f)]
    return mine + [r.diagnostic() for r in c.failures if r.entry.doc.name == str(f)]


def only(diags: list[Diagnostic], kind: str) -> Diagnostic:
    hits = [d for d in diags if d.kind == kind]
    assert len(hits) == 1, [str(d) for d in diags]
    return hits[0]


def test_a_good_file_has_no_mistakes(tmp_path):
    assert lint(tmp_path, GOOD) == []


# --------------------------------------------------------------------------- file level


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    d = only(lint(tmp_path, "rules:\n  - id: x\n    match: {program: git\n    message: y\n"), "yaml-syntax")
    assert (d.line, d.col) == (4, 12)
    assert "YAML syntax error" in d.message


def test_tab_in_indentation(tmp_path):
    d = only(lint(tmp_path, "rules:\n\t- id: x\n"), "tab")
    assert (d.line, d.col) == (2, 1)
    assert "spaces" in d.message


def test_a_tab_inside_a_string_is_content_not_a_mistake(tmp_path):
    assert lint(tmp_path, GOOD.replace("Push with {tool_call}.", "Push with\\t{tool_call}.")) == []


def test_unknown_top_level_key(tmp_path):
    d = only(lint(tmp_path, "rule:\n  - id: x\n"), "unknown-key")
    assert (d.line, d.col, d.field) == (1, 1, "rule")
    assert "did you mean 'rules'?" in d.message


def test_top_level_must_be_a_mapping(tmp_path):
    d = only(lint(tmp_path, "- id: x\n"), "wrong-type")
    assert (d.line, d.col) == (1, 1)


def test_duplicate_key(tmp_path):
    text = GOOD.replace("    tool: git_push\n", "    tool: git_push\n    tool: git_clone\n")
    d = only(lint(tmp_path, text), "duplicate-key")
    assert (d.line, d.col, d.field) == (5, 5, "rules[0].tool")
    assert "first at line 4" in d.message


# --------------------------------------------------------------------------- rule fields


def test_unknown_key_with_did_you_mean(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    message:", "    mesage:")), "unknown-key")
    assert (d.line, d.col, d.field) == (5, 5, "rules[0].mesage")
    assert "did you mean 'message'?" in d.message


def test_wrong_type(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    tool: git_push\n", "    tool: git_push\n    enabled: 'no'\n")), "wrong-type")
    assert (d.line, d.col, d.field) == (5, 14, "rules[0].enabled")
    assert d.message == 'expected true or false, got the string "no"'


def test_bad_id_format(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("id: lfs-push", "id: 'lfs push'")), "bad-format")
    assert (d.line, d.field) == (2, "rules[0].id")


def test_missing_id(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("  - id: lfs-push\n    category", "  - category")), "missing-field")
    assert d.field == "rules[0].id" and d.line == 2


def test_missing_message_on_a_refusing_rule(tmp_path):
    text = GOOD.replace('    message: "Refused: {what}. Push with {tool_call}."\n', "")
    d = only(lint(tmp_path, text), "missing-message")
    assert (d.line, d.col, d.field) == (2, 5, "rules[0].message")


def test_missing_category_on_a_refusing_rule(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    category: publish\n", "")), "missing-category")
    assert d.field == "rules[0].category" and "publish, create, absent" in d.message


def test_unknown_category_with_did_you_mean(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("category: publish", "category: pubish")), "unknown-category")
    assert (d.line, d.col) == (3, 15)
    assert "did you mean 'publish'?" in d.message


def test_bad_verdict_value(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    category: publish\n", "    verdict: deny\n    category: publish\n")), "bad-verdict")
    assert d.field == "rules[0].verdict" and "expected one of refuse, allow" in d.message


def test_unknown_tool_with_did_you_mean(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("tool: git_push", "tool: git_psh")), "unknown-tool")
    assert (d.line, d.col, d.field) == (4, 11, "rules[0].tool")
    assert "did you mean 'git_push'?" in d.message


def test_a_tool_added_in_the_config_is_known(tmp_path):
    text = GOOD.replace("tool: git_push", "tool: lfs_push") + "config:\n  tools:\n    lfs_push: 'lfs_push(prefix=\"{prefix}\")'\n"
    assert lint(tmp_path, text) == []


def test_allow_rule_with_a_category(tmp_path):
    text = "rules:\n  - id: ok\n    verdict: allow\n    category: mutate\n    match: {program: git, subcommand: lfs}\n"
    d = only(lint(tmp_path, text), "allow-rule-field")
    assert (d.line, d.field) == (4, "rules[0].category") and "exempts" in d.message


def test_exempts_on_a_refusing_rule(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    tool: git_push\n", "    tool: git_push\n    exempts: [mutate]\n")),
             "exempts-on-refusing")
    assert d.line == 5


def test_unknown_category_in_exempts(tmp_path):
    text = "rules:\n  - id: ok\n    verdict: allow\n    exempts: [mutat]\n    match: {program: git, subcommand: lfs}\n"
    d = only(lint(tmp_path, text), "unknown-category")
    assert d.field == "rules[0].exempts[0]" and "did you mean 'mutate'?" in d.message


# --------------------------------------------------------------------------- match


def test_unknown_fact_name_with_did_you_mean(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("subcommand: lfs", "subcomand: lfs")), "unknown-fact")
    assert (d.line, d.col, d.field) == (6, 27, "rules[0].match.subcomand")
    assert "not a known fact name or match key; did you mean 'subcommand'?" == d.message


def test_set_facts_point_at_the_match_keys_for_them(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("action: push}", "action: push, flags: [-f]}")), "unknown-fact")
    assert "flags_any, flags_all or flags_none" in d.message


def test_bad_fact_value(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("action: push}", "action: push, repo: inside}")), "bad-fact-value")
    assert d.field == "rules[0].match.repo"
    assert "tree, outside or unknown" in d.message


def test_empty_match(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("match: {program: git, subcommand: lfs, action: push}", "match: {}")), "empty-match")
    assert (d.line, d.col) == (6, 12) and "every command" in d.message


def test_no_match_and_nothing_to_change(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    match: {program: git, subcommand: lfs, action: push}\n", "")), "missing-field")
    assert d.field == "rules[0].match" and "no earlier layer defines" in d.message


def test_substring_that_looks_like_a_regex_is_a_warning(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("action: push}", "action: push, args_match: '^origin.*'}")), "regex-in-substring")
    assert d.severity == "warning" and "searched for literally" in d.message


# --------------------------------------------------------------------------- messages


def test_unknown_placeholder(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("Push with {tool_call}", "Push {repo} with {tool_call}")), "unknown-placeholder")
    assert (d.line, d.field) == (5, "rules[0].message")
    assert "{repo}" in d.message and "{what}, {prefix}, {url}, {path}, {tool_call}" in d.message


def test_malformed_template(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("Refused: {what}.", "Refused: {what.")), "bad-template")
    assert "{{" in d.message


def test_tool_call_without_a_tool(tmp_path):
    d = only(lint(tmp_path, GOOD.replace("    tool: git_push\n", "")), "tool-call-without-tool")
    assert d.field == "rules[0].message"


# --------------------------------------------------------------------------- layering


def test_duplicate_id_within_a_layer(tmp_path):
    rule = GOOD.split("rules:\n", 1)[1]
    d = only(lint(tmp_path, "rules:\n" + rule + rule), "duplicate-id")
    assert (d.line, d.field) == (10, "rules[1].id")
    assert "already defined at" in d.message and ":2 in the same layer" in d.message


def test_the_same_id_in_a_later_layer_is_a_replacement_not_a_mistake(tmp_path):
    text = GOOD.replace("id: lfs-push", "id: git-push").replace("lfs-push", "git-push")
    text = text.replace('refuse: ["git lfs push origin feature"]', 'refuse: ["git lfs push origin feature"]')
    assert [d for d in lint(tmp_path, text) if d.kind == "duplicate-id"] == []


def test_disabling_an_id_nobody_defines_is_a_warning(tmp_path):
    d = only(lint(tmp_path, "rules:\n  - id: no-such-rule\n    enabled: false\n"), "disable-nothing")
    assert d.severity == "warning" and d.line == 3


# --------------------------------------------------------------------------- examples


def test_refuse_example_the_rule_does_not_refuse(tmp_path):
    text = GOOD.replace('refuse: ["git lfs push origin feature"]', 'refuse: ["git lfs push origin feature", "git lfs fetch"]')
    d = only(lint(tmp_path, text), "example-refuse")
    assert (d.line, d.field) == (8, "rules[0].examples.refuse[1]")
    assert d.message.startswith('"git lfs fetch" was refused by git-mutate')
    assert "lfs-push does not match it (facts: git lfs fetch: program=git subcommand=lfs action=fetch" in d.message


def test_allow_example_the_rule_refuses(tmp_path):
    text = GOOD.replace('allow: ["git lfs ls-files"]', 'allow: ["git lfs ls-files", "git lfs push --all"]')
    d = only(lint(tmp_path, text), "example-allow")
    assert d.field == "rules[0].examples.allow[1]"
    assert d.message == '"git lfs push --all" was refused by lfs-push; expected lfs-push not to refuse it'


def test_refuse_example_won_by_another_rule_names_both(tmp_path):
    text = GOOD.replace("category: publish", "category: read-probe").replace(
        "subcommand: lfs, action: push}", "subcommand: status}").replace(
        '["git lfs push origin feature"]', '["git status"]').replace('["git lfs ls-files"]', "[]")
    text = text.replace("    tool: git_push\n", "    tool: git_status\n").replace("Push with", "Use")
    text = text.replace("match:", "priority: -5\n    match:")
    d = only(lint(tmp_path, text), "example-refuse")
    assert "was refused by git-read-probe" in d.message and "not by lfs-push" in d.message
    assert "both match and git-read-probe is tried first (priority -2 > -5)" in d.message


def test_refuse_example_exempted_by_an_allow_rule(tmp_path):
    # git lfs lock: outside the tree git-outside exempts a mutate (git lfs push is publishing, a shipped rule)
    text = GOOD.replace("category: publish", "category: mutate").replace("action: push}", "action: lock}").replace(
        '["git lfs push origin feature"]', '["git -C /tmp/x lfs lock big.bin"]').replace('["git lfs ls-files"]', "[]")
    d = only(lint(tmp_path, text), "example-refuse")
    assert "lfs-push matches but allow rule git-outside" in d.message


def test_example_of_the_wrong_shape(tmp_path):
    d = only(lint(tmp_path, GOOD.replace('refuse: ["git lfs push origin feature"]', "refuse: [42]")), "bad-example")
    assert d.field == "rules[0].examples.refuse[0]"
    assert d.message == "expected a command string or a mapping {command, cwd, tree, env}, got 42"


def test_example_mapping_with_a_misspelt_key(tmp_path):
    diags = lint(tmp_path, GOOD.replace('refuse: ["git lfs push origin feature"]', 'refuse: [{cmd: "git lfs push"}]'))
    assert only(diags, "unknown-key").message.endswith("did you mean 'command'?")
    assert only(diags, "missing-field").field == "rules[0].examples.refuse[0].command"


def test_examples_given_as_a_string_instead_of_a_list(tmp_path):
    d = only(lint(tmp_path, GOOD.replace('refuse: ["git lfs push origin feature"]', "refuse: git lfs push")),
             "bad-example")
    assert d.field == "rules[0].examples.refuse"


def test_example_with_its_own_cwd_tree_and_env(tmp_path):
    text = GOOD.replace('allow: ["git lfs ls-files"]',
                        'allow: [{command: "git lfs ls-files", cwd: /srv/t/app, tree: /srv/t, env: {HOME: /home/a}}]')
    assert lint(tmp_path, text) == []


# --------------------------------------------------------------------------- config


def test_config_tree_not_absolute(tmp_path):
    d = only(lint(tmp_path, "config:\n  trees: [workspace]\n"), "bad-config")
    assert (d.line, d.col, d.field) == (2, 11, "config.trees[0]")
    assert "an absolute path" in d.message


def test_config_github_hosts_not_strings(tmp_path):
    d = only(lint(tmp_path, "config:\n  github_hosts: [github.example.com, 443]\n"), "bad-config")
    assert d.field == "config.github_hosts[1]"


def test_config_github_host_with_a_scheme(tmp_path):
    d = only(lint(tmp_path, "config:\n  github_hosts: ['https://github.example.com']\n"), "bad-config")
    assert "no scheme" in d.message


def test_config_route_not_a_string(tmp_path):
    d = only(lint(tmp_path, "config:\n  routes:\n    worker: [push, pr]\n"), "bad-config")
    assert (d.line, d.field) == (3, "config.routes.worker")


def test_config_unknown_key(tmp_path):
    d = only(lint(tmp_path, "config:\n  github_host: [x.com]\n"), "unknown-key")
    assert "did you mean 'github_hosts'?" in d.message


def test_config_tool_template_placeholder(tmp_path):
    d = only(lint(tmp_path, "config:\n  tools:\n    t: 't(prefix=\"{prefx}\")'\n"), "unknown-placeholder")
    assert d.field == "config.tools.t" and "did you mean 'prefix'?" in d.message


# --------------------------------------------------------------------------- one pass, CLI


def test_every_mistake_is_reported_in_one_pass(tmp_path):
    text = """\
    rules:
      - id: a
        category: pubish
        tool: git_psh
        mesage: "x"
        match: {subcomand: push}
      - id: b
        verdict: deny
        message: "Refused {nope}"
        match: {}
    config:
      trees: [relative]
    """
    kinds = {d.kind for d in lint(tmp_path, text)}
    assert {"unknown-category", "unknown-key", "unknown-fact", "bad-verdict", "empty-match", "bad-config"} <= kinds


LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<field>\S+): (?P<msg>.+)$")


def test_cli_prints_file_line_column_field_and_exits_1(tmp_path, capsys):
    f = tmp_path / "mine.yaml"
    f.write_text(GOOD.replace("subcommand: lfs", "subcomand: lfs").replace("tool: git_push", "tool: git_psh"))
    assert rcli.main(["lint", str(f)]) == 1
    out = capsys.readouterr().out.splitlines()
    hits = [LINE.match(x) for x in out[:-1]]
    assert all(hits), out
    assert {(h["file"], h["line"], h["field"]) for h in hits} == {
        (str(f), "4", "rules[0].tool"), (str(f), "6", "rules[0].match.subcomand")}
    assert out[-1] == "2 mistakes in the rules"


def test_cli_clean_file_exits_0(tmp_path, capsys):
    f = tmp_path / "mine.yaml"
    f.write_text(GOOD)
    assert rcli.main(["lint", str(f)]) == 0
    assert capsys.readouterr().out.startswith("rules ok: 1 file")


def test_cli_usage_errors_exit_2(tmp_path, capsys):
    assert rcli.main(["lint", str(tmp_path / "missing.yaml")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert rcli.main(["lint", "--fix"]) == 2
    assert rcli.main(["frobnicate"]) == 2


def test_cli_without_paths_lints_guard_rules_and_names_missing_entries(tmp_path, monkeypatch, capsys):
    d = tmp_path / "rules.d"
    d.mkdir()
    (d / "x.yaml").write_text(GOOD.replace("category: publish", "category: pubish"))
    monkeypatch.setenv("GUARD_RULES", f"{d}:{tmp_path / 'gone'}")
    assert rcli.main(["lint"]) == 1
    out = capsys.readouterr().out
    assert f"{d / 'x.yaml'}:3:15: rules[0].category:" in out
    assert f"{tmp_path / 'gone'}: no such file or folder" in out


# --------------------------------------------------------------------------- stderr rules


STDERR_GOOD = """\
annotations:
  - id: bitbucket-auth
    tool: git_clone
    category: credential
    pattern: "fatal: Authentication failed for '(?P<url>https://bitbucket\\\\.org/[^']+)'"
    message: "No Bitbucket credential here by design; bring {repo} in with git_clone(url=\\"{url}\\")."
    examples:
      must: ["fatal: Authentication failed for 'https://bitbucket.org/team/lib.git/'\\n"]
      must_not: ["fatal: Authentication failed for 'https://github.com/o/r.git/'\\n"]
"""


def stderr_lint(tmp_path: Path, text: str) -> list[str]:
    f = tmp_path / "ann.yaml"
    f.write_text(text)
    c = rcompile.compile_files(rlayers.rule_layers((str(f),), None), examples="none")
    return [str(d) for d in c.diagnostics if d.file == str(f)]


def test_stderr_rule_good(tmp_path):
    assert stderr_lint(tmp_path, STDERR_GOOD) == []


def test_stderr_pattern_re2_rejects_backreference(tmp_path):
    out = stderr_lint(tmp_path, STDERR_GOOD.replace("(?P<url>https", "(a)\\\\1(?P<url>https"))
    assert len(out) == 1 and re.match(rf"{re.escape(str(tmp_path))}/ann.yaml:5:\d+: annotations\[0\]\.pattern: not a valid RE2 pattern", out[0])


def test_stderr_pattern_that_matches_an_empty_line(tmp_path):
    out = stderr_lint(tmp_path, STDERR_GOOD.replace(
        "\"fatal: Authentication failed for '(?P<url>https://bitbucket\\\\.org/[^']+)'\"", "'(?P<url>.*)'"))
    assert out == [f"{tmp_path}/ann.yaml:5:14: annotations[0].pattern: \"(?P<url>.*)\" matches an empty line, "
                   "so it would annotate every failing command"]


def test_stderr_unknown_placeholder_is_reported_by_the_annotator_loader(tmp_path):
    out = stderr_lint(tmp_path, STDERR_GOOD.replace("{repo}", "{repository}"))
    assert len(out) == 1 and "annotations[0].message" in out[0] and "{repository}" in out[0]


def test_cli_lint_covers_both_kinds_in_one_file(tmp_path, capsys):
    f = tmp_path / "both.yaml"
    f.write_text(GOOD.replace("tool: git_push", "tool: git_psh") + STDERR_GOOD.replace("{repo}", "{repository}"))
    assert rcli.main(["lint", str(f)]) == 1
    out = capsys.readouterr().out
    assert "rules[0].tool" in out and "annotations[0].message" in out


SEVEN = """\
rules:
  - id: tf-apply
    category: mutat
    tool: deploy_pipline
    message: "Refused: {wat}."
    match: {program: terraform, subcomand: apply}
annotations:
  - id: tf-lock
    pattern: "(a)\\\\1"
    mesage: "the state is locked"
  - id: tf-other
    pattern: "lock (?P<who>\\\\S+)"
    message: "locked by {whom}"
    supersedes: [tf-lok]
"""


def test_nine_mistakes_of_both_kinds_are_reported_in_one_pass_with_positions_and_suggestions(tmp_path, capsys):
    """One lint run names every mistake of a file, command rules and annotations alike, each as
    file:line:column: field: … (with a did-you-mean where one is close), then counts them."""
    f = tmp_path / "seven.yaml"
    f.write_text(SEVEN)
    assert rcli.main(["lint", str(f)]) == 1
    out = capsys.readouterr().out.splitlines()
    mine = [line for line in out if line.startswith(f"{f}:")]
    fields = [line.split(": ", 2)[1] for line in mine]
    assert sorted(fields) == sorted([
        "rules[0].category", "rules[0].tool", "rules[0].message", "rules[0].match.subcomand",
        "annotations[0].message", "annotations[0].pattern", "annotations[0].mesage", "annotations[1].message",
        "annotations[1].supersedes[0]",
    ]), out
    assert all(re.match(rf"{re.escape(str(f))}:\d+:\d+: ", line) for line in mine)
    text = "\n".join(mine)
    for hint in ("did you mean 'mutate'", "did you mean 'subcommand'", "did you mean 'message'", "{wat}",
                 "{whom}", "did you mean 'tf-lock'", "invalid escape sequence"):
        assert hint in text, (hint, text)
    assert out[-1] == "9 mistakes in the rules"


def test_lint_says_whether_a_config_list_was_replaced_or_extended(tmp_path, capsys):
    f = tmp_path / "cfg.yaml"
    f.write_text("config:\n  token_vars: [ACME_TOKEN]\n")
    assert rcli.main(["lint", str(f)]) == 0
    out = capsys.readouterr().out
    assert f"{f}: config token_vars: replaced (" in out and "write token_vars+: to add to them" in out
    f.write_text("config:\n  token_vars+: [ACME_TOKEN]\n")
    assert rcli.main(["lint", str(f)]) == 0
    out = capsys.readouterr().out
    assert f"{f}: config token_vars: extended (" in out and "+ 1 added)" in out


def test_an_example_another_rule_hides_fails_against_the_rule_alone(tmp_path):
    """An allow example that passes in the effective set only because an allow rule exempts it
    still shows that the rule alone is too broad."""
    diags = lint(tmp_path, """\
        rules:
          - id: no-make
            category: mutate
            message: "Refused: {what}."
            match: {program: make}
            examples:
              refuse: ["make install"]
              allow: ["make -n install"]
          - id: dry-make
            verdict: allow
            match: {program: make, flags_any: [-n]}
        """)
    fails = [d for d in diags if d.kind == "example-allow"]
    assert len(fails) == 1 and "alone" in fails[0].message and "no-make" in fails[0].message, diags
