"""Every pointer names the tool that does what the agent wanted, filled in from the command.

The labelled set (fixtures/pointers/refusals.jsonl) is every refusal of the shared corpus with
the cwd in the tree; bench/pointer_accuracy.py prints its confusion table. The cases below go
through the real ``guard check`` command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guard.engine import analyze
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import pointer_accuracy  # noqa: E402

GUARD = [sys.executable, "-m", "guard.cli.main"]


def test_the_labelled_corpus_refusals_name_the_intended_tool_with_the_named_arguments() -> None:
    rows = pointer_accuracy.cases()
    assert len(rows) > 1000  # every corpus refusal, not a sample
    r = pointer_accuracy.score(rows, analyze)
    wrong = [m for m in r["misses"] if m[2] != "unfilled"]
    assert r["right"] / r["total"] >= 0.99, wrong[:10]
    assert r["filled"] / r["named"] >= 0.97, [m for m in r["misses"] if m[2] == "unfilled"][:10]


def check(command: str, cwd: str = "/workspace/app") -> dict:
    out = subprocess.run([*GUARD, "check", "--json", "--cwd", cwd, "--tree", "/workspace", "--", command],
                         capture_output=True, text=True, cwd=REPO, env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize(("command", "tool", "shows"), [
    # discarding edits → the revision store's restore, with the paths (relative to the tree)
    ("git checkout src/a.py", "restore", ['restore(paths=["app/src/a.py"]']),
    ("git checkout -- README.md", "restore", ['"app/README.md"']),
    ("git checkout HEAD -- src/a.py src/b.py", "restore", ['["app/src/a.py", "app/src/b.py"]']),
    ("git restore setup.py tox.ini", "restore", ['"app/setup.py", "app/tox.ini"']),
    ("git reset --hard HEAD~1", "restore", ["restore("]),
    # setting work aside → checkpoint, and restore to come back
    ("git stash", "checkpoint", ["checkpoint()", "restore("]),
    ("git stash pop", "restore", ["restore("]),
    # one file's past → file_history with the path
    ("git show HEAD~1:src/x.py", "file_history", ['file_history(path="app/src/x.py")']),
    ("git log -p src/x.py", "file_history", ['file_history(path="app/src/x.py")']),
    ("git blame src/x.py", "file_history", ['file_history(path="app/src/x.py")']),
    ("git show HEAD", "git_log", ['git_log(prefix="app")']),
    # updating from upstream → git_status
    ("git fetch origin", "git_status", ['git_status(prefix="app")']),
    ("git pull", "git_status", ['git_status(prefix="app")']),
    # git grep → grep, no tool
    ("git grep -n TODO", None, ["grep -rn PATTERN .", "git grep --no-index"]),
    # a branch is named when publishing
    ("git checkout -b fix/parser", "git_push", ['git_push(prefix="app", branch="fix/parser")']),
    ("git switch -c topic", "git_push", ['branch="topic"']),
    # commit with the files and the message the command names
    ("git add src/a.py tests/t.py && git commit -m 'parser: accept commas'", "git_commit",
     ['git_commit(prefix="app", files=["src/a.py", "tests/t.py"], message="parser: accept commas")']),
    ("git commit -am 'fix: off by one'", "git_commit", ['message="fix: off by one"']),
    ("git commit -F /tmp/msg.txt", "git_commit", ["message=<the text of /tmp/msg.txt>"]),
    # a push's branch from the refspec destination; never a protected one
    ("git push origin HEAD:refs/heads/fix/x", "git_push", ['branch="fix/x"']),
    ("git push -u origin feature/y", "git_push", ['branch="feature/y"']),
    ("git push origin main", "git_push", ['branch="<feature-branch>"']),
    # tag push versus branch push; tag creation versus listing
    ("git push origin v1.2.0", None, ["a tag push"]),
    ("git push --tags", None, ["a tag push"]),
    ("git tag v1", None, ["git tag v1."]),
    ("git tag -l", "git_log", ["git tag -l."]),
    ("git branch -D old", None, ["git branch -D."]),
    # a pull request's branch and title from --head and --title
    ("gh pr create -H fix/x -t 'parser: accept commas' -b body", "gh_pr_create",
     ['gh_pr_create(prefix="app", branch="fix/x", title="parser: accept commas", body="...")']),
])
def test_the_pointer_follows_what_the_invocation_does(command: str, tool: str | None, shows: list[str]) -> None:
    v = check(command)
    assert v["verdict"] == "refuse"
    assert v["tool"] == tool, v["message"]
    for text in shows:
        assert text in v["message"], v["message"]
    assert len(v["message"]) <= 600 + len(" Route: commit named files with git_commit, push a feature branch with "
                                           "git_push, open a pull request with gh_pr_create.")


def test_paths_are_relative_to_the_prefix_the_cwd_gives() -> None:
    v = check("git add ../lib/x.py b.py && git commit -m 'x'", cwd="/workspace/app/src")
    assert 'git_commit(prefix="app/src", files=["../lib/x.py", "b.py"], message="x")' in v["message"]
    v = check("git -C /workspace/other add a.py")
    assert 'prefix="other", files=["a.py"]' in v["message"]


def test_no_credential_reaches_a_call() -> None:
    v = check("git commit -m 'token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked'")
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in v["message"]
    assert "ghp_[REDACTED]" in v["message"] or "[REDACTED]" in v["message"]
    v = check("git push https://x:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r HEAD:refs/heads/fix/t")
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in v["message"]
    assert 'branch="fix/t"' in v["message"]


def test_a_heredoc_message_reaches_the_call() -> None:
    # $(cat <<'EOF' … EOF) is deterministic: its output is the heredoc's text
    v = check("git add a.py && git commit -m \"$(cat <<'EOF'\nparser: accept commas\n\nWhy it matters.\nEOF\n)\"")
    assert 'files=["a.py"], message="parser: accept commas …"' in v["message"]


def test_a_message_on_stdin_reaches_the_call() -> None:
    v = check("git add a.py && git commit -F- <<'MSG'\nparser: accept commas\nMSG")
    assert 'files=["a.py"], message="parser: accept commas"' in v["message"]
    # a body built at run time does not hide a literal subject line
    v = check('git commit -m "fix: x\n\nuses $(CFLAGS) now"')
    assert 'message="fix: x …"' in v["message"]


def test_a_long_message_is_shown_by_its_first_line() -> None:
    v = check("git commit -m 'subject line' -m 'a long body paragraph that explains why'")
    assert 'message="subject line …"' in v["message"]


def test_gh_pr_checkout_gets_git_repository_context() -> None:
    v = check("gh pr checkout 15")
    assert v["verdict"] == "refuse" and v["category"] == "mutate" and v["tool"] == "git_clone"
    assert check("gh pr checkout 15", cwd="/tmp/r")["verdict"] == "allow"
    assert check("gh pr view 15")["verdict"] == "allow"


def test_lint_flags_a_call_that_leaves_a_named_argument_unfilled(tmp_path: Path) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text("""rules:
  - id: my-commit
    category: mutate
    priority: 5
    tool: git_commit
    message: "Refused: {what}. Use git_commit with the files."
    match: {program: git, subcommand: add, repo: tree}
    examples:
      refuse: ["git add src/a.py"]
""")
    out = subprocess.run([*GUARD, "rules", "lint", str(rules)], capture_output=True, text=True, cwd=REPO,
                         env={"HOME": "/root", "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "c")})
    assert out.returncode == 1
    assert "names files, but the message leaves it out of git_commit's call" in out.stdout + out.stderr
    rules.write_text(rules.read_text().replace("Use git_commit with the files.", "Use {tool_call}."))
    out = subprocess.run([*GUARD, "rules", "lint", str(rules)], capture_output=True, text=True, cwd=REPO,
                         env={"HOME": "/root", "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "c")})
    assert out.returncode == 0, out.stdout + out.stderr
