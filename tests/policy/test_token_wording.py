"""A token-variable read is refused in words that fit the variable's forge, through the real CLI."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import guard_bin


def check(command: str) -> dict:
    p = subprocess.run([guard_bin(), "check", "--json", "--cwd", "/workspace/app", "--tree", "/workspace", "--", command],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("var", ["GITLAB_TOKEN", "CI_JOB_TOKEN", "GL_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"])
def test_token_variable_refusal_names_no_single_forge(var: str) -> None:
    for command in (f"echo ${var}", f"printenv {var}", f'curl -H "PRIVATE-TOKEN: ${var}" https://gitlab.com/api/v4/user'):
        v = check(command)
        assert (v["verdict"], v["category"], v["rule"]) == ("refuse", "token-search", "token-variable"), command
        assert "GitHub token" not in v["message"] and "no GitHub credential" not in v["message"]
        assert "GitLab" in v["message"] and "GitHub" in v["message"]  # both forges, neither assumed
        assert "glab_mr_create" in v["message"] and "gh_pr_create" in v["message"]


def test_gitlab_reads_stay_allowed() -> None:
    for command in ("echo GITLAB_TOKEN", "grep -rn CI_JOB_TOKEN .gitlab-ci.yml", "unset GL_TOKEN"):
        assert check(command)["verdict"] == "allow", command
