"""A grammar is imported when a command runs its language, never before: the plain path (and
loading the rules, cold cache or warm) pays for none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import json, sys
from guard.context import Context
from guard.engine import analyze

ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})
out = []
for command in sys.argv[1:]:
    analyze(command, ctx)
    out.append(sorted(m for m in sys.modules if m.startswith("tree_sitter_") and "." not in m))
print(json.dumps(out))
"""


def _grammars_after(commands: list[str], cache: Path) -> list[list[str]]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *commands], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/root", "XDG_CACHE_HOME": str(cache)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("warm", [False, True])
def test_ordinary_commands_import_no_grammar_but_bash(tmp_path: Path, warm: bool) -> None:
    if warm:
        _grammars_after(["true"], tmp_path)  # the rules compiled and cached by another process
    got = _grammars_after(["ls", "git status", "python3 -c 'print(1)'", "cd /tmp && make -j4 test"], tmp_path)
    assert all(set(g) <= {"tree_sitter_bash"} for g in got), got


def test_a_language_imports_its_own_grammar_only(tmp_path: Path) -> None:
    got = _grammars_after(["ls", "perl -e 'system(\"git push\")'", "ruby -e 'puts 1'"], tmp_path)
    assert set(got[1]) - set(got[0]) == {"tree_sitter_perl"}
    assert set(got[2]) - set(got[1]) == {"tree_sitter_ruby"}
