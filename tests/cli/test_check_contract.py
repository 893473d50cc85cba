"""`guard check` / `explain` / `demo` as docs/behaviour.md §7 describes them: fields, exit codes, id echo."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import guard_bin

FIELDS = {"verdict", "category", "rule", "tool", "message", "invocations", "unresolved", "parser"}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([guard_bin(), *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_refuse_exits_1_with_message() -> None:
    p = run("check", "--cwd", "/workspace/app", "--tree", "/workspace", "--", "git push origin feature")
    assert p.returncode == 1
    assert "git_push" in p.stdout and p.stdout.startswith("Refused: git push")


def test_allow_exits_0() -> None:
    p = run("check", "--cwd", "/workspace/app", "--tree", "/workspace", "--", "ls -la")
    assert p.returncode == 0 and p.stdout.strip() == "allow"


def test_json_has_every_field_and_invocation_shape() -> None:
    p = run("check", "--json", "--cwd", "/workspace/app", "--tree", "/workspace", "--", "alias g=git; g push")
    obj = json.loads(p.stdout)
    assert FIELDS <= set(obj)
    assert obj["verdict"] == "refuse" and obj["category"] == "publish" and obj["tool"] == "git_push"
    git = [i for i in obj["invocations"] if i["program"] == "git"][0]
    assert set(git) >= {"program", "argv", "cwd", "in_tree", "via"}
    assert git["argv"] == ["git", "push"] and git["via"] == ["alias g"] and git["in_tree"] is True
    assert obj["parser"] in ("tree-sitter", "bashlex", "scan")


def test_jsonl_echoes_id_keeps_order_and_survives_bad_lines() -> None:
    lines = "\n".join([
        json.dumps({"id": 7, "command": "git status", "cwd": "/workspace/app"}),
        "this is not json",
        json.dumps({"command": "echo hi"}),
        json.dumps({"id": "x", "command": "git status", "cwd": "/tmp"}),
        json.dumps({"id": None, "command": 5}),
    ]) + "\n"
    p = run("check", "--jsonl", "--tree", "/workspace", stdin=lines)
    assert p.returncode == 0
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == 5
    assert out[0]["id"] == 7 and out[0]["verdict"] == "refuse" and out[0]["category"] == "read-probe"
    assert out[1]["verdict"] == "error" and "id" not in out[1]
    assert out[2]["verdict"] == "allow" and "id" not in out[2]
    assert out[3] == {**out[3], "id": "x", "verdict": "allow"}
    assert out[4]["verdict"] == "error" and out[4]["id"] is None


def test_command_line_options_are_defaults_for_each_line() -> None:
    lines = json.dumps({"id": 1, "command": "git status"}) + "\n" + json.dumps({"id": 2, "command": "git status", "cwd": "/tmp"}) + "\n"
    p = run("check", "--jsonl", "--cwd", "/srv/t/app", "--tree", "/srv/t", stdin=lines)
    a, b = (json.loads(x) for x in p.stdout.splitlines())
    assert a["verdict"] == "refuse" and b["verdict"] == "allow"


def test_env_option_feeds_variables() -> None:
    p = run("check", "--json", "--cwd", "/workspace/app", "--tree", "/workspace", "--env", "G=git", "--", "$G push")
    assert json.loads(p.stdout)["rule"] == "git-push"


def test_usage_and_configuration_errors_exit_2_without_traceback() -> None:
    for args in (["check"], ["check", "--env", "novalue", "--", "ls"], ["check", "--rules", "/nonexistent/r.yaml", "--", "ls"],
                 ["check", "--bogus"], ["frobnicate"]):
        p = run(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.startswith("guard: ")
        assert len(p.stderr.strip().splitlines()) <= 5


def test_broken_rule_file_is_a_configuration_error(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: x\n    match: {program: [git\n")
    p = run("check", "--rules", str(bad), "--", "ls")
    assert p.returncode == 2 and "Traceback" not in p.stderr and "bad.yaml" in p.stderr


def test_explain_names_rule_file_line_and_via() -> None:
    p = run("explain", "--cwd", "/workspace/app", "--tree", "/workspace", "--", "find . -exec git add {} \\;")
    assert p.returncode == 0
    assert "via find -exec" in p.stdout
    assert "rule git-mutate at rules/commands/git.yaml:" in p.stdout
    assert "parser: tree-sitter" in p.stdout


def test_explain_says_why_nothing_fired() -> None:
    p = run("explain", "--cwd", "/workspace/app", "--tree", "/workspace", "--", "echo 'git push'")
    assert "verdict: allow" in p.stdout and "1. echo git push" in p.stdout


def test_demo_runs_the_field_report_thread() -> None:
    p = run("demo")
    assert p.returncode == 0, p.stderr
    assert "allow  $ git ls-remote" in p.stdout
    assert p.stdout.count("REFUSE $ git rev-parse HEAD") == 2
    assert "allow  $ cd \"$(mktemp -d)\" && git clone" in p.stdout
