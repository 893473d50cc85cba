"""Shell snapshots made the way Claude Code makes them, by real bash, from rc files of three sizes.

Claude Code sources the user's rc once and dumps its state into a snapshot file that it then
sources before every command: ``unalias -a``, every function as
``eval "$(echo '<base64 of declare -f NAME>' | base64 -d)" > /dev/null 2>&1``, ``shopt -p``,
the ``set -o`` options that are on, ``alias -- NAME='VALUE'`` for every alias, and
``export PATH=…``. ``creation_script`` is that dump as a command (it runs under
``$SHELL -c -l``, so guard-shell sees it too); ``make`` runs it with real bash.

Sizes: ``small`` (5 aliases including gs and gp, 2 functions, about 2 KB), ``medium`` (34 nvm-
and conda-like functions, about 11 KB plus options), ``large`` (bash-completion's git functions,
about 110 KB; needs /usr/share/bash-completion/completions/git).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_COMPLETION = "/usr/share/bash-completion/completions/git"

SMALL_RC = r"""
alias ll='ls -alF'
alias la='ls -A'
alias gs='git status'
alias gp='git push'
alias py='python3'
mkcd() { mkdir -p "$1" && cd "$1"; }
gpush() { git push origin "$(git rev-parse --abbrev-ref HEAD)"; }
"""


def medium_rc() -> str:
    """34 functions in the style of nvm and conda: path juggling, version lookups, activation."""
    parts = []
    for tool in ("nvm", "conda", "pyenv", "rbenv", "goenv", "sdk"):
        parts.append(f"""
{tool}_resolve() {{
  local want="${{1:-default}}" dir
  for dir in "$HOME/.{tool}/versions"/*; do
    case "$dir" in *"$want"*) printf '%s\\n' "$dir"; return 0;; esac
  done
  echo "{tool}: version $want not found" >&2
  return 1
}}
{tool}_use() {{
  local d
  d="$({tool}_resolve "$@")" || return 1
  export PATH="$d/bin:${{PATH}}"
  export {tool.upper()}_CURRENT="$d"
}}
{tool}_ls() {{ ls -1 "$HOME/.{tool}/versions" 2>/dev/null | sort -V; }}
{tool}_current() {{ echo "${{{tool.upper()}_CURRENT:-system}}"; }}
{tool}_deactivate() {{
  [ -n "${{{tool.upper()}_CURRENT:-}}" ] || return 0
  PATH="$(printf '%s' "$PATH" | tr ':' '\\n' | grep -v "^${{{tool.upper()}_CURRENT}}/bin$" | paste -sd: -)"
  unset {tool.upper()}_CURRENT
}}
""")
    parts.append(r"""
__conda_exe() { ( "$CONDA_EXE" $_CE_M $_CE_CONDA "$@" ) ; }
__conda_hashr() { hash -r; }
__conda_activate() {
  local ask_conda
  ask_conda="$(PS1="${PS1:-}" __conda_exe shell.posix "$@")" || return
  eval "$ask_conda"
  __conda_hashr
}
conda_reactivate() { __conda_activate reactivate; }
""")
    return "".join(parts) + "alias gs='git status'\nalias gp='git push'\n"


def large_rc() -> str:
    return f"source {GIT_COMPLETION}\nalias gs='git status'\nalias gp='git push'\n"


def creation_script(rc: str, snapshot: str, filter_functions: bool = True) -> str:
    """The command that sources ``rc`` and writes ``snapshot`` in Claude Code's format."""
    keep = "grep -vE '^_[^_]'" if filter_functions else "cat"
    return f"""SNAPSHOT_FILE={snapshot}
source "{rc}" < /dev/null
echo "# Snapshot file" >| "$SNAPSHOT_FILE"
echo "# Unset all aliases to avoid conflicts with functions" >> "$SNAPSHOT_FILE"
echo "unalias -a 2>/dev/null || true" >> "$SNAPSHOT_FILE"
echo "# Functions" >> "$SNAPSHOT_FILE"
declare -f > /dev/null 2>&1
declare -F | cut -d' ' -f3 | {keep} | while read func; do
  encoded_func=$(declare -f "$func" | base64 )
  echo "eval \\"\\$(echo '$encoded_func' | base64 -d)\\" > /dev/null 2>&1" >> "$SNAPSHOT_FILE"
done
echo "# Shell Options" >> "$SNAPSHOT_FILE"
shopt -p | head -n 1000 >> "$SNAPSHOT_FILE"
set -o | grep -E '[[:space:]]on$' | awk '{{print "set -o " $1}}' | head -n 1000 >> "$SNAPSHOT_FILE"
echo "shopt -s expand_aliases" >> "$SNAPSHOT_FILE"
echo "# Aliases" >> "$SNAPSHOT_FILE"
alias | sed 's/^alias //g' | sed 's/^/alias -- /' | head -n 1000 >> "$SNAPSHOT_FILE"
echo "export PATH=$(printf %q "$PATH")" >> "$SNAPSHOT_FILE"
"""


def rc_text(size: str) -> str:
    return {"small": SMALL_RC, "medium": medium_rc(), "large": large_rc()}[size]


def available(size: str) -> bool:
    return size != "large" or os.path.isfile(GIT_COMPLETION)


def make(size: str, folder: Path, shell: str = "/bin/bash") -> Path:
    """Write the rc of ``size`` and its snapshot (made by running the creation script with
    ``shell -c -l``) under ``folder``; return the snapshot's path."""
    folder.mkdir(parents=True, exist_ok=True)
    rc = folder / f"{size}.bashrc"
    rc.write_text(rc_text(size))
    snap = folder / f"snapshot-bash-{size}.sh"
    script = creation_script(str(rc), str(snap), filter_functions=size != "large")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), "LANG": "C.UTF-8"}
    subprocess.run([shell, "-c", "-l", script], check=True, env=env, cwd=folder, capture_output=True, timeout=120)
    return snap


def claude_wrapper(snapshot: str | None, command: str, cwd_file: str) -> str:
    """The string Claude Code passes to ``$SHELL -c -l``: the command single-quoted with ``'\\''``."""
    quoted = "'" + command.replace("'", "'\\''") + "'"
    head = f"source {snapshot} && " if snapshot else ""
    return f"{head}eval {quoted} \\< /dev/null && pwd -P >| {cwd_file}"


def codex_snapshot_wrapper(snapshot: str, command: str) -> str:
    """Codex's snapshot variant, passed to ``$SHELL -lc``."""
    return f". {snapshot} && {command}"
