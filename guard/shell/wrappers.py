"""The text agent hosts put around the agent's command when they run it with ``SHELL -c``: one
entry per host and version family, as data. ``guard.shell.hostwrap`` matches a command against
these shapes and takes out what the agent wrote.

A shape is a sequence of pieces, matched left to right:

- a plain string: that text, exactly;
- ``OPTIONAL(…)``: the pieces inside, or nothing;
- ``SNAPSHOT``: one shell word (plain, single-quoted, or double-quoted without expansions), the
  file the host sources first; its definitions are the command's state;
- ``EVAL_WORD``: one such word, whose value is the agent's command (the host quoted it for
  ``eval``);
- ``COMMAND``: the agent's command as it is, up to the text after it (which then must end the
  whole string);
- ``PATH``: one plain word without shell metacharacters (a temporary file the host names);
- ``NAME``: one shell word the host names (not kept);
- ``REPEAT(…)``: the pieces inside, any number of times (none included).

Kept as Python literals rather than YAML: this is read on guard-shell's hot path, where loading
a YAML parser costs more than the whole pre-check. Each entry says where its shape was taken
from, so a new client release that changes it is a new entry, not an edit of a regular
expression.
"""

from __future__ import annotations

SNAPSHOT = ("snapshot",)
EVAL_WORD = ("eval-word",)
COMMAND = ("command",)
PATH = ("path",)
NAME = ("name",)


def OPTIONAL(*pieces: object) -> tuple[str, tuple[object, ...]]:  # noqa: N802 - reads as a marker
    return ("optional", pieces)


def REPEAT(*pieces: object) -> tuple[str, tuple[object, ...]]:  # noqa: N802 - reads as a marker
    return ("repeat", pieces)


# Claude Code 2.1.x (its buildExecCommand): the parts joined with " && ", spawned as
# ``SHELL -c TEXT`` (``-c -l`` when there is no snapshot). The snapshot and the cwd file are quoted
# only when they need it; the command is quoted with '"'"' for a quote, and left bare when it is
# one plain word; `` < /dev/null`` is left off for heredocs and commands that read a redirection.
_CLAUDE_2_1 = (
    OPTIONAL("source ", SNAPSHOT, " 2>/dev/null || true && "),
    OPTIONAL("shopt -u extglob 2>/dev/null || true && "),
    OPTIONAL("setopt NO_EXTENDED_GLOB NO_BARE_GLOB_QUAL 2>/dev/null || true && "),
    OPTIONAL("{ shopt -u extglob || setopt NO_EXTENDED_GLOB NO_BARE_GLOB_QUAL; } >/dev/null 2>&1 || true && "),
    "eval ", EVAL_WORD,
    OPTIONAL(" < /dev/null"),
    " && pwd -P >| ", PATH,
)

# Claude Code 2.1.3xx (2.1.332): the shell options with ``\builtin``, then, for each name it keeps
# from the user's definitions (which, unsetenv), ``{ \builtin unalias -- 'N'; \builtin unset -f
# -- 'N'; } >/dev/null 2>&1 || true``, all joined with " && " as before.
_CLAUDE_2_1_3 = (
    OPTIONAL("source ", SNAPSHOT, " 2>/dev/null || true && "),
    OPTIONAL("\\builtin shopt -u extglob 2>/dev/null || true && "),
    REPEAT("{ \\builtin unalias -- ", NAME, "; \\builtin unset -f -- ", NAME, "; } >/dev/null 2>&1 || true && "),
    "eval ", EVAL_WORD,
    OPTIONAL(" < /dev/null"),
    " && pwd -P >| ", PATH,
)

# Claude Code before 2.1: ``source SNAPSHOT && eval 'CMD' \< /dev/null && pwd -P >| CWDFILE``.
_CLAUDE_2_0 = (
    OPTIONAL("source ", SNAPSHOT, " && "),
    "eval ", EVAL_WORD, " \\< /dev/null && pwd -P >| ", PATH,
)

# Gemini CLI 0.x (its ShellToolInvocation): ``bash -c TEXT``, bash found on PATH; the command
# trimmed, in a subshell whose EXIT trap records background jobs.
_GEMINI_0 = (
    "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=", PATH,
    "\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n", COMMAND, "\n)\n__code=$?\nexit $__code",
)
_GEMINI_0_BARE = ("shopt -u promptvars nullglob extglob nocaseglob dotglob; ", COMMAND)

# Codex with a shell snapshot: ``SHELL -lc ". SNAPSHOT && CMD"``, the snapshot under
# ``…/shell_snapshots/``.
_CODEX = (". ", SNAPSHOT, " && ", COMMAND)
_CODEX_SOURCE = ("source ", SNAPSHOT, " && ", COMMAND)

# (client as the audit log names it, version family, shape, text the snapshot path must contain)
WRAPPERS: tuple[tuple[str, str, tuple[object, ...], str], ...] = (
    ("claude-code", "2.1", _CLAUDE_2_1, ""),
    ("claude-code", "2.1.3", _CLAUDE_2_1_3, ""),
    ("claude-code", "2.0", _CLAUDE_2_0, ""),
    ("gemini-cli", "0.x", _GEMINI_0, ""),
    ("gemini-cli", "0.x", _GEMINI_0_BARE, ""),
    ("codex", "0.x", _CODEX, "/shell_snapshots/"),
    ("codex", "0.x", _CODEX_SOURCE, "/shell_snapshots/"),
)

# How each host marks the processes it starts: (variable, value or "" for any, client, the
# variable holding its session id or "").
ENVIRONMENT: tuple[tuple[str, str, str, str], ...] = (
    ("CLAUDECODE", "1", "claude-code", "CLAUDE_CODE_SESSION_ID"),
    ("CODEX_THREAD_ID", "", "codex", "CODEX_THREAD_ID"),
    ("GEMINI_CLI", "1", "gemini-cli", ""),
    ("COPILOT_CLI", "1", "copilot-cli", "COPILOT_AGENT_SESSION_ID"),
    ("OPENCODE", "1", "opencode", ""),
)
