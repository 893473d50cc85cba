"""``guard demo``: agent commands walked through the analysis in a temporary tree.

The first steps replay the thread that motivated guard (a private repository, a credential
failure, read probes in a tree with no .git, a private dependency); the rest are the tricks
agents try once a plain ``git push`` is refused, and ordinary work that must pass.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap

from guard.context import Context
from guard.record import replace

STEPS: tuple[tuple[str, str], ...] = (
    ("the field report's thread", "git ls-remote https://github.com/acme/private-lib.git"),
    ("", "git rev-parse HEAD"),
    ("", "git rev-parse HEAD"),
    ("", "pip install git+https://github.com/acme/private-lib.git"),
    ("after a refused git push", "git push origin feature"),
    ("", "g=git; $g push origin feature"),
    ("", "alias g=git; g push"),
    ("", "find . -name '*.py' -exec git add {} +"),
    ("", "bash -c 'git commit -am wip'"),
    ("", "echo Z2l0IHB1c2g= | base64 -d | sh"),
    ("", "python3 -c \"import subprocess; subprocess.run(['git', 'push'])\""),
    ("", "curl -X POST -H 'Accept: application/vnd.github+json' https://api.github.com/repos/acme/app/pulls -d '{\"title\":\"x\"}'"),
    ("", "env | grep -i token"),
    ("", "git stash"),
    ("ordinary work that must pass", "cd \"$(mktemp -d)\" && git clone https://github.com/acme/tool.git && cd tool && make"),
    ("", "grep -rn \"git push\" docs/ ; echo 'git push' > NOTES.md"),
    ("", "pytest -q tests/ && npm run build"),
    ("", "curl -s https://api.github.com/repos/acme/app"),
)


def main(argv: list[str]) -> int:
    from guard.engine import analyze

    width = shutil.get_terminal_size((100, 20)).columns
    root = tempfile.mkdtemp(prefix="guard-demo-")
    try:
        tree = os.path.join(root, "workspace")
        app = os.path.join(tree, "app")
        os.makedirs(os.path.join(app, "docs"))
        env = dict(os.environ)
        env.update(GIT_TERMINAL_PROMPT="0", GUARD_ROLE="worker", TMPDIR=os.path.join(root, "tmp"))
        env.pop("GUARD_ROUTE", None)
        os.makedirs(env["TMPDIR"])
        ctx = replace(Context.from_environ(cwd=app, env=env, trees=(tree,)), rule_paths=())
        print(f"guard demo: tree {tree} (a stand-in for /workspace), cwd {app}, role worker\n")
        refused = 0
        for heading, command in STEPS:
            if heading:
                print(f"── {heading} " + "─" * max(0, min(width, 100) - len(heading) - 4))
            v = analyze(command, ctx)
            mark = "REFUSE" if v.verdict == "refuse" else "allow "
            refused += v.verdict == "refuse"
            print(f"{mark} $ {command}")
            if v.verdict == "refuse":
                for line in textwrap.wrap(v.message or "", min(width, 100) - 9):
                    print(" " * 9 + line)
            elif "ls-remote" in command or "git+" in command:
                print(" " * 9 + "allowed: if it fails for want of a credential, guard-shell appends an explanation.")
        print(f"\n{refused} of {len(STEPS)} refused. Try: guard explain 'alias g=git; g push'")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
