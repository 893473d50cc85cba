"""The wheel carries what an installed guard needs: the shipped rules, the rule schemas, and the
guard, guard-shell and guard-bash launchers (which must not import `re` before guard runs)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO


def test_wheel_contents(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                        str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    wheel = next(tmp_path.glob("guard-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("guard/rules/config.yaml", "guard/rules/commands/git.yaml", "guard/rules/stderr/git.yaml",
                   "guard/ruleset/schema/command-rules.json", "guard/shell/main.py", "guard/parse/treesitter.py",
                   "guard/rules/dialects/perl.yaml", "guard/rules/programs/interpreters.yaml",
                   "guard/ruleset/schema/dialects.json", "guard/resolve/inline/generic.py"):
        assert needed in names, needed
    # guard-bash: guard-shell under a name Claude Code takes as a shell (its path must name bash)
    for script, entry in (("guard-shell", "from guard.shell.main import main"), ("guard-bash", "from guard.shell.main import main"),
                          ("guard", "from guard.cli.main import main")):
        launcher = [n for n in names if n.endswith(f"/scripts/{script}")]
        assert launcher, sorted(names)[:20]
        text = zipfile.ZipFile(wheel).read(launcher[0]).decode()
        assert "import re" not in text and entry in text
