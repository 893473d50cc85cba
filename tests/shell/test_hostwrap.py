"""The hosts' wrapper strings: the agent's command comes out exactly as bash would eval it, and
anything that is not exactly a wrapper is left alone."""

from __future__ import annotations

import subprocess

import pytest

from guard.shell import hostwrap
from tests.hosts import snapshots

COMMANDS = ["ls -la", "echo 'it'\\''s' \"$HOME\"", "printf '%s\\n' a b | sort -r", "cat <<'EOF'\nx 'y'\nEOF",
            "echo \"a'b\" && echo '' ''", "a=1; echo \"${a}'\"", "echo \\'"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_claude_wrapper_gives_back_what_bash_evaluates(cmd: str) -> None:
    text = snapshots.claude_wrapper("/home/u/.claude/shell-snapshots/snapshot-bash-1-x.sh", cmd, "/tmp/claude-ab-cwd")
    w = hostwrap.unwrap(text)
    assert w is not None and (w.client, w.snapshot, w.inner) == (
        "claude-code", "/home/u/.claude/shell-snapshots/snapshot-bash-1-x.sh", cmd)
    # what bash itself hands to eval, for the same quoted word
    quoted = text.split("&& eval ", 1)[1].rsplit(" \\< /dev/null", 1)[0]
    got = subprocess.run(["/bin/bash", "-c", f"printf %s {quoted}"], capture_output=True, text=True).stdout
    assert got == cmd


def test_claude_wrapper_without_snapshot_and_codex_snapshot() -> None:
    w = hostwrap.unwrap(snapshots.claude_wrapper(None, "git status", "/tmp/claude-1-cwd"))
    assert (w.client, w.snapshot, w.inner, w.analysis_text()) == ("claude-code", None, "git status", "git status")
    w = hostwrap.unwrap(". /home/u/.codex/shell_snapshots/0199.sh && cd src && make")
    assert (w.client, w.snapshot, w.inner) == ("codex", "/home/u/.codex/shell_snapshots/0199.sh", "cd src && make")
    assert w.analysis_text() == "source /home/u/.codex/shell_snapshots/0199.sh\ncd src && make"


@pytest.mark.parametrize("text", [
    "source venv/bin/activate && pytest",  # an agent's own source: analysed whole
    ". ./env.sh && make",
    "eval 'ls' \\< /dev/null && pwd -P >| /tmp/x; git push",  # more after the cwd file
    "source /s.sh && eval 'ls' \\< /dev/null && pwd -P > /tmp/x",
    "source $SNAP && eval 'ls' \\< /dev/null && pwd -P >| /tmp/x",
    "eval 'ls \\< /dev/null && pwd -P >| /tmp/x",
    "eval \"ls\" \\< /dev/null && pwd -P >| /tmp/x",
    "",
])
def test_other_shapes_are_not_unwrapped(text: str) -> None:
    assert hostwrap.unwrap(text) is None


def test_client_from_the_environment() -> None:
    assert hostwrap.client({"CLAUDECODE": "1"}) == "claude-code"
    assert hostwrap.client({}) is None
