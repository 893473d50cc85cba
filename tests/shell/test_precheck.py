"""The pre-check is proven safe: on every labelled command it never lets through what the full
analysis refuses, and it does let through the plain commands it exists for."""

from __future__ import annotations

import json
import os

import pytest

from guard.context import Context
from guard.engine import analyze, rule_examples
from guard.ruleset import derived as rderived
from guard.ruleset import layers as rlayers
from guard.ruleset import load as loader
from guard.shell.precheck import trivially_allowed as _trivially_allowed
from tests.conftest import REPO, SHARED

PROJECTS = str(REPO / "fixtures" / "projects")
SHIPPED = rderived.derived(loader.load((), None, run=rule_examples)).precheck  # the plan the shipped rules give


def trivially_allowed(command: str, env=None, shadowed=(), plan=SHIPPED) -> bool:
    return _trivially_allowed(command, env=env, shadowed=shadowed, plan=plan)


def _labelled() -> list[dict]:
    rows = []
    for path in sorted((REPO / "fixtures" / "commands").glob("*.jsonl")):
        rows += [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]
    return rows


def _verdict(row: dict) -> str:
    fill = lambda s: s.replace("{projects}", PROJECTS)  # noqa: E731
    env = {"HOME": "/root", **{k: fill(v) for k, v in row.get("env", {}).items()}}
    ctx = Context.from_environ(cwd=fill(row.get("cwd", "/workspace/app")), trees=(fill(row.get("tree", "/workspace")),), env=env)
    return analyze(fill(row["command"]), ctx).verdict


def test_same_verdict_with_and_without_the_precheck_on_every_labelled_fixture() -> None:
    rows = _labelled()
    assert len(rows) > 1000
    skipped = 0
    for row in rows:
        if trivially_allowed(row["command"]):
            skipped += 1
            assert row["expect"] == "allow", row
            assert _verdict(row) == "allow", row
    assert skipped >= 20  # it is exercised, not vacuous


def test_same_verdict_on_the_shared_corpus_sample() -> None:
    path = SHARED / "corpus" / "agent-commands.jsonl"
    if not path.exists():
        pytest.skip("shared corpus not available")
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})
    n = 0
    for line in path.read_text(encoding="utf-8").split("\n")[:8000]:
        cmd = json.loads(line)["command"]
        if trivially_allowed(cmd):
            n += 1
            assert analyze(cmd, ctx).verdict == "allow", cmd
    assert n > 100


@pytest.mark.parametrize("cmd", ["ls -la", "pytest -q tests/", "cat README.md", "true", "grep -rn TODO src", "mkdir -p build/out",
                                 "ls *.py", "wc -l test_?.py"])
def test_plain_commands_pass(cmd: str) -> None:
    assert trivially_allowed(cmd)


@pytest.mark.parametrize(
    "cmd",
    ["git status", "ls; git push", "cat ~/.netrc", "echo $GITHUB_TOKEN", "grep -r ghp_ .", "cp -r /tmp/r .", "env",
     "ls | sh", "echo 'x'", "mkdir .git", "cat /proc/1/environ", "./run.sh", "FOO=1 ls", "ls $(which git)", "g\\it push",
     "cat x > y", "ls\ngit push", "echo hi && make", "cat /root/.n?trc", "ls /root/.config/g?", "cat .n*",
     "cat /pr*/1/environ"],
)
def test_anything_that_might_matter_gets_the_full_analysis(cmd: str) -> None:
    assert not trivially_allowed(cmd)


def test_a_name_redefined_by_an_exported_function_or_alias_is_not_plain() -> None:
    assert not trivially_allowed("cat README.md", env={"BASH_FUNC_cat%%": "() {  git push\n}"})
    assert not trivially_allowed("ls", shadowed={"ls"})
    assert trivially_allowed("ls", env={"BASH_FUNC_other%%": "() { :; }"}, shadowed={"ll"})


# --------------------------------------------------------------------------- the plan is the rule set's


def _examples(rule_paths: tuple[str, ...]) -> list[tuple[str, str, Context]]:
    """(rule id, command, context) of every example of every rule in effect."""
    from guard.ruleset.compile import compile_files
    from guard.ruleset.examples import example_context

    c = compile_files(rlayers.rule_layers(rule_paths, None), examples="none")
    live = {r.source for r in c.ruleset.rules}
    out = []
    for e in c.entries:
        if e.source in live:
            for kind in ("refuse", "allow"):
                for ex in (e.rule.get("examples") or {}).get(kind, []):
                    out.append((e.id, *example_context(ex)))
    return out


USER_RULES = """\
rules:
  - id: no-touch
    category: mutate
    message: "Refused: {what}. Create files with the editor tool."
    match: {program: touch}
    examples:
      refuse: ["touch notes.txt", "touch -c a b"]
      allow: ["ls notes.txt"]
  - id: no-loose-grep
    category: read-probe
    message: "Refused: {what}."
    match: {args_match: SECRET_PLACE}
    examples:
      refuse: ["grep -r x SECRET_PLACE"]
"""


def test_a_user_rule_on_a_program_takes_it_off_the_precheck_and_a_program_less_rule_turns_it_off(tmp_path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text(USER_RULES.split("  - id: no-loose-grep")[0])
    plan = rderived.derived(loader.load((str(f),), None, run=rule_examples)).precheck
    assert "touch" not in plan.programs and "ls" in plan.programs
    assert not trivially_allowed("touch notes.txt", plan=plan) and trivially_allowed("ls notes.txt", plan=plan)
    f.write_text(USER_RULES)
    assert not rderived.derived(loader.load((str(f),), None, run=rule_examples)).precheck.programs


def test_every_rule_example_gets_the_same_verdict_through_guard_shell_as_through_guard_check(
        tmp_path, monkeypatch) -> None:
    """guard-shell's decision (guard.shell.main.decide, pre-check included, the command not run) and
    guard check's verdict agree on every example of every rule, shipped and a user's."""
    from guard.shell import main as shell

    f = tmp_path / "mine.yaml"
    f.write_text(USER_RULES.split("  - id: no-loose-grep")[0])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("GUARD_RULES", f"{f}:@gitlab")
    monkeypatch.setattr(loader, "_memo", {})
    monkeypatch.setattr(loader, "_loaded", {})
    examples = _examples((str(f), "@gitlab"))
    assert {"no-touch", "git-push", "glab-mr-create"} <= {e[0] for e in examples}
    assert len(examples) > 150
    env = {**os.environ, "HOME": "/root"}
    analyze("true", Context.from_environ(cwd="/workspace/app", env=env))  # loading the rules caches the plan
    assert _trivially_allowed("ls", env=env)  # the shell finds it
    passed = 0
    wrong = []
    for rid, command, ctx in examples:
        run_env = {**env, **{k: v for k, v in ctx.env.items() if k != "PATH"}, "GUARD_TREE": ":".join(ctx.trees)}
        d = shell.decide(command, cwd=ctx.cwd, env=run_env)
        v = analyze(command, Context.from_environ(cwd=ctx.cwd, env=run_env))
        passed += bool(d.plain)
        assert not (d.plain and command.startswith("touch")), command
        if (d.action == "run") != (v.verdict == "allow"):
            wrong.append(f"{rid}: {command!r}: guard-shell {d.action}, guard check {v.verdict}")
    assert not wrong, "\n".join(wrong)
    assert passed >= 2  # the pre-check took part (ls notes.txt among them)


def test_the_shipped_plan_file_is_the_plan_the_shipped_rules_give() -> None:
    """guard-shell uses guard/ruleset/precheck-shipped.txt until loading the rules caches a plan;
    after an edit of the shipped rules, write rderived.plan_text(rderived.derived(rs).precheck) there."""
    from guard.system.planfile import SHIPPED_PLAN, shipped_plan

    with open(SHIPPED_PLAN, encoding="utf-8") as fh:
        assert fh.read() == rderived.plan_text(SHIPPED)
    assert shipped_plan().programs == SHIPPED.programs and "ls" in SHIPPED.programs


def test_with_no_plan_cached_the_shipped_plan_serves_only_the_shipped_rules(tmp_path, monkeypatch) -> None:
    from guard.system.planfile import current_plan

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    assert current_plan({}).programs == SHIPPED.programs
    assert current_plan({"GUARD_RULES": str(tmp_path / "mine.yaml")}) is None
