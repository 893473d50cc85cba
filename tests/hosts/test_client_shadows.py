"""What a client's shell snapshot does to the agent's command: Claude Code 2.1 shadows grep and
find with functions that run its own executable as ugrep and bfs (``exec -a``), passing the
arguments on as ``${1+"$@"}``. A token hunt through them is still one."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.shell.decide import decide

# The shape of the functions Claude Code 2.1.197 writes into its snapshot (abridged).
SNAPSHOT = """unalias grep 2>/dev/null || true
function grep {
  local _cc_a
  for _cc_a in ${1+"$@"}; do
    case "$_cc_a" in --null|--null-data) command grep ${1+"$@"}; return ;; esac
  done
  local _cc_bin="${CLAUDE_CODE_EXECPATH:-}"
  [[ -x $_cc_bin ]] || _cc_bin=/home/u/.local/bin/claude
  if [[ ! -x $_cc_bin ]]; then command grep ${1+"$@"}; return; fi
  (exec -a ugrep "$_cc_bin" -G --ignore-files --hidden -I --exclude-dir=.git ${1+"$@"})
}
function find {
  local _cc_bin="${CLAUDE_CODE_EXECPATH:-}"
  [[ -x $_cc_bin ]] || _cc_bin=/home/u/.local/bin/claude
  (exec -a bfs "$_cc_bin" -S dfs -regextype findutils-default ${1+"$@"})
}
"""


@pytest.mark.parametrize(("command", "refused"), [
    ("grep -rn ghp_ ~ 2>/dev/null | head -3", True),
    ("find / -name .git-credentials", True),
    ("grep -rn TODO src", False),
    ("find . -name '*.py'", False),
])
def test_shadowed_searches_are_judged_as_what_they_run(tmp_path: Path, command: str, refused: bool) -> None:
    snap = tmp_path / "snapshot-bash-1-x.sh"
    snap.write_text(SNAPSHOT)
    tree = tmp_path / "tree"
    tree.mkdir()
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": "off",
           "CLAUDE_CODE_EXECPATH": "/opt/claude/bin/claude"}
    d = decide(f"source {snap}\n{command}", cwd=str(tree), env=env)
    assert (d.action == "refuse") == refused, d.message


def test_alternative_expansion_keeps_every_positional_field() -> None:
    from guard.shell.decide import decide as judge

    d = judge('f() { g ${1+"$@"}; }; g() { git "$@"; }; f push origin feature', cwd="/tmp",
              env={"GUARD_TREE": "/tmp", "GUARD_AUDIT_LOG": "off", "PATH": "/usr/bin:/bin", "HOME": "/root"})
    assert d.action == "refuse" and "git push" in (d.message or "")
