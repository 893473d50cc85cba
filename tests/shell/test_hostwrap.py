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


# The wrappers the published clients sent, taken from their processes' command lines (Claude Code
# 2.1.197 and 2.1.332, Gemini CLI 0.61.0, driven by tests/clients): each names what the agent wrote.
REAL = [
    ("source /h/.claude/shell-snapshots/snapshot-bash-1796533686198-hw4w0n.sh 2>/dev/null || true && "
     "shopt -u extglob 2>/dev/null || true && eval 'git push origin feature' < /dev/null && "
     "pwd -P >| /tmp/claude-c17f-cwd",
     ("claude-code", "/h/.claude/shell-snapshots/snapshot-bash-1796533686198-hw4w0n.sh", "git push origin feature")),
    ("shopt -u extglob 2>/dev/null || true && eval ls < /dev/null && pwd -P >| /tmp/claude-0a1b-cwd",
     ("claude-code", None, "ls")),
    ("source /s.sh 2>/dev/null || true && shopt -u extglob 2>/dev/null || true && eval 'echo '\"'\"'a'\"'\"' | wc' "
     "< /dev/null && pwd -P >| /tmp/claude-1-cwd", ("claude-code", "/s.sh", "echo 'a' | wc")),
    ("source /s.sh 2>/dev/null || true && shopt -u extglob 2>/dev/null || true && eval 'cat <<EOF\nx\nEOF' "
     "&& pwd -P >| /tmp/claude-1-cwd", ("claude-code", "/s.sh", "cat <<EOF\nx\nEOF")),
    # Claude Code 2.1.332: \builtin, and its own names unaliased and unset before the command
    ("source /h/.claude/shell-snapshots/snapshot-bash-1796537103615-yr8c0b.sh 2>/dev/null || true && "
     "\\builtin shopt -u extglob 2>/dev/null || true && { \\builtin unalias -- 'which'; \\builtin unset -f -- "
     "'which'; } >/dev/null 2>&1 || true && { \\builtin unalias -- 'unsetenv'; \\builtin unset -f -- 'unsetenv'; } "
     ">/dev/null 2>&1 || true && eval 'G=git; $G commit -qam wip' < /dev/null && pwd -P >| /tmp/h/claude-5498-cwd",
     ("claude-code", "/h/.claude/shell-snapshots/snapshot-bash-1796537103615-yr8c0b.sh", "G=git; $G commit -qam wip")),
    ("shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=/tmp/gemini-shell-Y9HB56/bgpids.tmp\n"
     "(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\nG=git; $G push origin x\n)\n__code=$?\nexit $__code",
     ("gemini-cli", None, "G=git; $G push origin x")),
]


@pytest.mark.parametrize(("text", "want"), REAL)
def test_the_published_clients_wrappers(text: str, want: tuple[str, str | None, str]) -> None:
    w = hostwrap.unwrap(text)
    assert w is not None and (w.client, w.snapshot, w.inner) == want


def test_client_and_session_from_each_hosts_variables() -> None:
    cases = [({"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "s1"}, ("claude-code", "s1")),
             ({"CODEX_THREAD_ID": "t1"}, ("codex", "t1")),
             ({"GEMINI_CLI": "1"}, ("gemini-cli", None)),
             ({"COPILOT_CLI": "1", "COPILOT_AGENT_SESSION_ID": "c1"}, ("copilot-cli", "c1")),
             ({"OPENCODE": "1"}, ("opencode", None)),
             ({"GEMINI_CLI": "0"}, (None, None))]
    for env, want in cases:
        assert (hostwrap.client(env), hostwrap.session(env)) == want
