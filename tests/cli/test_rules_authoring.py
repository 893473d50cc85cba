"""`guard rules test` and `guard rules list`, through the command line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guard.cli import rules as rcli

pytestmark = pytest.mark.usefixtures("isolated_rules")


RULES = """\
rules:
  - id: lfs-push
    category: publish
    tool: git_push
    message: "Refused: {what}. Push with {tool_call}."
    match: {program: git, subcommand: lfs, action: push}
    examples:
      refuse:
        - git lfs push origin feature
        - {command: "git lfs push --all", cwd: /tmp/x}
      allow: ["git lfs ls-files"]
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


def write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "mine.yaml"
    f.write_text(textwrap.dedent(text))
    return f


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    code = rcli.main(list(argv))
    return code, capsys.readouterr().out.splitlines()


def test_passing_examples_exit_0_and_count_both_kinds(tmp_path, capsys):
    f = write(tmp_path, RULES)
    code, out = run(capsys, "test", str(f))
    assert code == 0, out
    assert out == ["3/3 command examples passed, 2/2 annotation examples passed (1 annotation)"]


def test_a_failing_command_example_names_its_line(tmp_path, capsys):
    f = write(tmp_path, RULES.replace('allow: ["git lfs ls-files"]', 'allow: ["git lfs ls-files", "git lfs push"]'))
    code, out = run(capsys, "test", str(f))
    assert code == 1
    assert out[0] == (f'{f}:11:35: rules[0].examples.allow[1]: "git lfs push" was refused by lfs-push; '
                      "expected lfs-push not to refuse it")
    assert out[-1].startswith("3/4 command examples passed")


def test_a_refuse_example_decided_by_another_rule_names_both_ids(tmp_path, capsys):
    f = write(tmp_path, RULES.replace("category: publish", "category: token-search").replace(
        "- git lfs push origin feature", "- git lfs push origin feature\n        - git push"))
    code, out = run(capsys, "test", str(f))
    assert code == 1
    line = next(x for x in out if "examples.refuse[1]" in x)
    assert re.match(rf"{re.escape(str(f))}:10:11: rules\[0\]\.examples\.refuse\[1\]: \"git push\" was refused by "
                    r"git-push \(publish, rules/commands/publish\.yaml:\d+\), not by lfs-push; lfs-push does not match it", line)


def test_a_failing_stderr_example_is_reported_by_the_annotator(tmp_path, capsys):
    f = write(tmp_path, RULES.replace('must: ["fatal: Authentication failed for \'https://bitbucket.org/',
                                      'must: ["fatal: Authentication failed for \'https://gitlab.com/'))
    code, out = run(capsys, "test", str(f))
    assert code == 1
    assert out == [f"{f}:13: bitbucket-auth: examples.must[0] did not annotate",
                   "3/3 command examples passed, 1/2 annotation examples passed (1 annotation)"]


def test_test_reports_mistakes_that_stop_examples(tmp_path, capsys):
    f = write(tmp_path, RULES.replace("category: publish", "category: pubish"))
    code, out = run(capsys, "test", str(f))
    assert code == 1
    assert out[0].startswith(f"{f}:3:15: rules[0].category: expected one of publish")


def test_list_shows_the_effective_set_with_sources_overrides_and_disabled(tmp_path, capsys, monkeypatch):
    d = tmp_path / "rules.d"
    d.mkdir()
    (d / "a.yaml").write_text(RULES)
    (d / "b.yaml").write_text(textwrap.dedent("""\
        rules:
          - id: gh-auth
            enabled: false
          - id: git-push
            message: "Refused: {what}. Ask the coordinator."
        """))
    monkeypatch.setenv("GUARD_RULES", str(d))
    code, out = run(capsys, "list")
    assert code == 0
    rows = {line.split()[0]: line for line in out if line and not line.startswith(("id ", "annotation "))}
    assert re.match(rf"lfs-push +publish +refuse +git_push +{re.escape(str(d / 'a.yaml'))}:2$", rows["lfs-push"])
    assert re.search(rf"git-push +publish +refuse +git_push +{re.escape(str(d / 'b.yaml'))}:4 +\(replaces rules/commands/publish\.yaml:\d+\)$",
                     rows["git-push"])
    assert re.search(rf"gh-auth +disabled +- +- +rules/commands/tokens\.yaml:\d+ +\(by {re.escape(str(d / 'b.yaml'))}:2\)$",
                     rows["gh-auth"])
    assert re.match(rf"bitbucket-auth +credential +git_clone +{re.escape(str(d / 'a.yaml'))}:13$", rows["bitbucket-auth"])
    assert re.match(r"git-terminal-prompts-disabled +credential +git_clone +rules/stderr/git\.yaml:\d+$",
                    rows["git-terminal-prompts-disabled"])


def test_guard_rules_through_the_installed_cli(tmp_path):
    f = write(tmp_path, RULES)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, "-m", "guard.cli.main", "rules", "test", str(f)], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    bad = subprocess.run([sys.executable, "-m", "guard.cli.main", "rules", "lint", str(tmp_path / "nope")], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip() == f"guard: rules lint: {tmp_path / 'nope'}: no such file or folder"


def test_list_names_rules_left_out_because_their_examples_fail(tmp_path, capsys):
    f = write(tmp_path, RULES.replace('allow: ["git lfs ls-files"]', 'allow: ["git lfs push"]'))
    code, out = run(capsys, "list", str(f))
    assert code == 0
    assert not any(line.startswith("lfs-push ") for line in out)
    assert f"not loaded: {f}:2: rule lfs-push not loaded: its examples fail (examples.allow[0]); run guard rules test {f}" in out


def test_lint_runs_examples_even_when_another_rule_has_a_mistake(tmp_path, capsys):
    broken = "  - id: other\n    category: pubish\n    message: x\n    match: {program: git, subcommand: x}\n"
    f = write(tmp_path, RULES.replace('allow: ["git lfs ls-files"]', 'allow: ["git lfs push"]').replace(
        "annotations:", broken + "annotations:"))
    code, out = run(capsys, "lint", str(f))
    assert code == 1
    assert any("rules[1].category" in line for line in out)
    assert any("rules[0].examples.allow[0]" in line for line in out)
