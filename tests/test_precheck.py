"""The pre-check is proven safe: on every labelled command it never lets through what the full
analysis refuses, and it does let through the plain commands it exists for."""

from __future__ import annotations

import json

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.precheck import trivially_allowed
from tests.conftest import REPO, SHARED

PROJECTS = str(REPO / "fixtures" / "projects")


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
