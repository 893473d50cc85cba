"""`guard explain`: each invocation's facts, in text and JSON, and its own --help."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import guard_bin

CTX = ("--cwd", "/workspace/app", "--tree", "/workspace")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("GUARD_RULES", "GUARD_CONFIG", "GUARD_TREE")}
    full.update(env or {})
    return subprocess.run([guard_bin(), *args], capture_output=True, text=True, timeout=60, env=full)


def explain_json(command: str, *extra: str) -> dict:
    p = run("explain", "--json", *CTX, *extra, "--", command)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def facts_of(command: str, program: str, *extra: str) -> dict:
    obj = explain_json(command, *extra)
    return next(i["facts"] for i in obj["invocations"] if i["facts"]["program"] == program)


def test_glab_mr_create_facts() -> None:
    f = facts_of("glab mr create --title x", "glab")
    assert (f["subcommand"], f["action"]) == ("mr", "create")
    assert f["flags"] == ["--title"] and f["args"] == ["create", "x"]


def test_git_dash_c_push_facts_place_the_repository() -> None:
    f = facts_of("git -C /tmp/x push origin HEAD", "git")
    assert f["subcommand"] == "push" and f["args"] == ["origin", "HEAD"]
    assert f["repo"] == "outside" and f["repo_path"] == "/tmp/x"
    f = facts_of("cd /workspace/app && git push origin HEAD", "git")
    assert f["repo"] == "tree" and f["repo_path"] == "/workspace/app"


def test_curl_post_to_gitlab_facts() -> None:
    f = facts_of("curl -X POST https://gitlab.com/api/v4/projects", "curl", "--rules", "@gitlab")
    assert f["http_method"] == "POST" and f["http_write"] is True and f["forge"] == "gitlab"
    assert f["http_path"] == "/api/v4/projects" and f["url"] == "https://gitlab.com/api/v4/projects"
    get = facts_of("curl https://gitlab.com/api/v4/projects", "curl", "--rules", "@gitlab")
    assert get["http_method"] == "GET" and get["http_write"] is False
    off = facts_of("curl -X POST https://gitlab.com/api/v4/projects", "curl")  # the pack is off by default
    assert off["http_method"] == "POST" and off["forge"] == "" and off["http_write"] is False


def test_token_read_fact() -> None:
    assert facts_of("echo $GITLAB_TOKEN", "echo")["token_ref"] is True
    assert "token_ref" not in facts_of("echo GITLAB_TOKEN", "echo")


def text_facts(text: str) -> list[dict]:
    """The facts of each invocation in explain's text, read back as the YAML mapping they spell."""
    out: list[dict] = []
    parts: list[str] | None = None
    for line in [*text.splitlines(), ""]:
        if parts is not None and line.startswith(" " * 12):
            parts.append(line.strip())
            continue
        if parts is not None:
            out.append(yaml.safe_load("{" + " ".join(parts) + "}"))
            parts = None
        if line.startswith("     facts: "):
            parts = [line.removeprefix("     facts: ")]
    return out


def test_text_shows_every_fact_the_json_shows() -> None:
    command = "git -C /tmp/x push origin HEAD; glab mr create --fill; curl -d 'a: b' https://gitlab.com/api/graphql"
    obj = explain_json(command)
    p = run("explain", *CTX, "--", command)
    assert p.returncode == 0
    assert text_facts(p.stdout) == [i["facts"] for i in obj["invocations"]]
    assert "cwd /workspace/app, repository /tmp/x (outside the tree)" in p.stdout
    assert "verdict: refuse (publish) by rule" in p.stdout


def test_the_facts_shown_are_the_facts_rules_match(tmp_path: Path) -> None:
    """A rule written from what explain shows matches: each scalar fact, alone, picks the command."""
    commands = ["glab mr create --title x", "git -C /tmp/x push origin HEAD",
                "curl -X POST https://gitlab.com/api/v4/projects"]
    for n, command in enumerate(commands):
        inv = explain_json(command)["invocations"][0]
        rules = []
        for key, value in inv["facts"].items():
            if key == "program" or not isinstance(value, (str, bool)):
                continue
            rules.append({"id": f"probe-{key.replace('_', '-')}", "category": "publish", "priority": 1000,
                          "message": "Refused: {what} (probe).",
                          "match": {"program": inv["facts"]["program"], key: value}})
        assert len(rules) >= 2, inv
        for rule in rules:
            path = tmp_path / f"probe-{n}-{rule['id']}.yaml"
            path.write_text(yaml.safe_dump({"rules": [rule]}))
            got = explain_json(command, "--rules", str(path))
            assert got["rule"] == rule["id"], (command, rule["match"], got["rule"])


def test_json_keeps_the_check_fields_and_adds_context() -> None:
    obj = explain_json("glab mr view 12")
    assert obj["verdict"] == "allow" and obj["command"] == "glab mr view 12"
    assert obj["cwd"] == "/workspace/app" and obj["trees"] == ["/workspace"]
    assert obj["parser"] in ("tree-sitter", "bashlex", "scan") and "parse_error" in obj
    assert obj["invocations"][0]["facts"]["action"] == "view"


def test_help_documents_explain_options_at_any_width() -> None:
    outs = []
    for columns in ("40", "250"):
        p = run("explain", "--help", env={"COLUMNS": columns})
        assert p.returncode == 0 and p.stderr == ""
        outs.append(p.stdout)
    assert outs[0] == outs[1]
    text = outs[0]
    assert text.startswith("usage: guard explain ")
    for option in ("--cwd DIR", "--tree DIR", "--env NAME=VALUE", "--rules PATH", "--strict", "--json"):
        line = next((ln for ln in text.splitlines() if ln.strip().startswith(option)), None)
        assert line is not None and len(line.split(option, 1)[1].strip()) > 10, option
    assert "--jsonl" not in text and "--time-budget" not in text  # check's options, not explain's


@pytest.mark.parametrize("args", [["explain"], ["explain", "--no-such-option", "--", "ls"]])
def test_usage_errors_are_one_line(args: list[str]) -> None:
    p = run(*args)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith("guard: ")
