"""Loading, validating and caching stderr rules; every shipped rule's examples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from guard.act.annotate import check_example, lint, load_rules, run_examples
from guard.ruleset.annotations import shipped_dir

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "rules" / "stderr"

GOOD = """annotations:
  - id: demo
    pattern: 'boom (?P<url>\\S+)'
    message: "it went boom at {url}"
    examples:
      must: ["boom http://x/y\\n"]
      must_not: ["bang\\n"]
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_shipped_rules_load_cleanly_and_are_found_by_default() -> None:
    assert shipped_dir() == SHIPPED
    rules = load_rules(None, env={"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]})
    assert lint([str(SHIPPED)]) == []
    ids = {r.id for r in rules}
    for rid in ("git-terminal-prompts-disabled", "git-not-a-repository", "ssh-publickey-denied",
                "ssh-host-key-verification", "git-repository-not-found", "gh-auth-login", "github-401",
                "pip-git-credential", "uv-git-credential", "poetry-git-credential", "cargo-git-credential",
                "npm-git-credential", "yarn-git-credential", "go-git-credential", "bundler-git-credential"):
        assert rid in ids


def test_every_shipped_example_behaves() -> None:
    rules = load_rules([SHIPPED])
    assert rules
    assert run_examples(rules) == []
    for r in rules:
        assert r.must and r.must_not, r.id


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_examples_hold_when_stderr_arrives_in_pieces(chunk: int) -> None:
    for rule in load_rules([SHIPPED]):
        for ex in rule.must:
            assert check_example(rule, ex, chunk=chunk), (rule.id, chunk)
        for ex in rule.must_not:
            assert check_example(rule, ex, chunk=chunk) is None, (rule.id, chunk)


def test_a_failing_example_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(GOOD.replace('must_not: ["bang\\n"]', 'must_not: ["boom http://z\\n"]'))
    failures = run_examples(load_rules([f]))
    assert len(failures) == 1 and "demo: examples.must_not[0] annotated" in failures[0]


def test_broken_yaml_warns_once_and_other_files_still_load(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text("annotations:\n  - id: x\n    pattern: [unclosed\n")
    (tmp_path / "b.yaml").write_text(GOOD)
    rules = load_rules([tmp_path])
    err = capfd.readouterr().err.splitlines()
    assert [r.id for r in rules] == ["demo"]
    assert len(err) == 1 and "a.yaml:4:1: YAML syntax error" in err[0] and "annotations are skipped" in err[0]
    assert "Traceback" not in "\n".join(err)


def test_files_that_are_not_stderr_rules_are_ignored(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "commands.yaml").write_text("rules:\n  - id: push\n    program: git\n")
    (tmp_path / "broken-commands.yaml").write_text("rules: [\n")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    assert load_rules([tmp_path]) == []
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("    pattern: '(a)\\1'\n    message: m\n", "pattern"),
        ("    pattern: '(?=a)b'\n    message: m\n", "pattern"),
        ("    pattern: 'a'\n    message: 'at {nowhere}'\n", "message"),
        ("    pattern: 'a'\n", "message"),
        ("    pattern: 'a'\n    message: m\n    when: {cwd: x}\n", "when.cwd"),
        ("    pattern: 'a'\n    message: m\n    colour: red\n", "colour"),
    ],
)
def test_a_bad_rule_names_file_line_column_and_field(tmp_path: Path, body: str, field: str,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("annotations:\n  - id: bad\n" + body + GOOD.split("annotations:\n", 1)[1])
    rules = load_rules([f])
    assert [r.id for r in rules] == ["demo"]
    (err,) = capfd.readouterr().err.splitlines()
    assert f"{f}:" in err and f"annotations[0].{field}" in err


def test_guard_rules_env_adds_files(tmp_path: Path) -> None:
    f = tmp_path / "extra.yaml"
    f.write_text(GOOD)
    rules = load_rules(None, env={"GUARD_RULES": f"{tmp_path / 'missing-dir'}:{f}",
                                  "XDG_CACHE_HOME": str(tmp_path / "c")}, warn=False)
    ids = [r.id for r in rules]
    assert "demo" in ids and "git-terminal-prompts-disabled" in ids


def test_cached_rules_load_without_importing_yaml(tmp_path: Path) -> None:
    code = (
        "import sys; from guard.act.annotate import load_rules; "
        "r = load_rules(); print(len(r), 'yaml' in sys.modules)"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c"), "PYTHONPATH": str(REPO)}
    env.pop("GUARD_RULES", None)
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    n1, y1 = first.stdout.split()
    n2, y2 = second.stdout.split()
    assert n1 == n2 and int(n1) > 0
    assert (y1, y2) == ("True", "False")
    # a changed file is re-read, not served stale from the cache
    assert any((tmp_path / "c" / "guard" / "stderr-rules").iterdir())
