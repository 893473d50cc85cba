"""``guard demo``: agent commands walked through the analysis in a temporary tree.

The first steps replay the thread that motivated guard (a private repository, a credential
failure, read probes in a tree with no .git, a private dependency); the rest are the tricks
agents try once a plain ``git push`` is refused, and ordinary work that must pass. For the two
allowed steps that fail in the field, the stderr the real tools print (recorded against the
test suite's loopback server: fixtures/stderr/git-ls-remote-private-git2.39.5.txt and
pip-git-url-pip26.3.txt, with the server's URL put back to the field report's) is replayed
through the annotator, so the demo shows what guard-shell appends, not a promise.
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


PRIVATE = "https://github.com/acme/private-lib.git"

# What git 2.39.5 and pip 26.3 wrote to stderr (fixtures/stderr/, the loopback URL replaced).
RECORDED: dict[str, str] = {
    f"git ls-remote {PRIVATE}": "fatal: could not read Username for 'https://github.com': terminal prompts disabled\n",
    f"pip install git+{PRIVATE}": (
        f"  Running command git clone --filter=blob:none --quiet {PRIVATE} /tmp/pip-req-build-m32vakji\n"
        "  fatal: could not read Username for 'https://github.com': terminal prompts disabled\n"
        "  error: subprocess-exited-with-error\n"
        "  \n"
        f"  × git clone --filter=blob:none --quiet {PRIVATE} /tmp/pip-req-build-m32vakji did not run successfully.\n"
        "  │ exit code: 128\n"
        "  ╰─> No available output.\n"
        "  \n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
        f"ERROR: Failed to build 'git+{PRIVATE}' when git clone --filter=blob:none --quiet {PRIVATE} "
        "/tmp/pip-req-build-m32vakji\n"
    ),
}


def replay(command: str, verdict: object, env: dict[str, str], cwd: str) -> tuple[str, str] | None:
    """(the recorded stderr, what the annotator appends to it) for ``command``, or None."""
    stderr = RECORDED.get(command)
    if stderr is None:
        return None
    from guard.act.annotate import Annotator, facts_from_verdict, load_rules

    facts = facts_from_verdict(verdict)
    ann = Annotator(load_rules(None, env=env), env=env, in_tree=facts.in_tree, programs=facts.programs,
                    argvs=facts.argvs, command=command, cwd=cwd, audit=False)
    ann.feed(stderr.encode())
    return stderr, ann.finish(1).decode()


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
            else:
                shown = replay(command, v, env, app)
                if shown is not None:
                    stderr, notes = shown
                    print(" " * 9 + "its real stderr, then what guard-shell appends:")
                    for line in stderr.splitlines():
                        print(" " * 9 + "│ " + line)
                    for line in notes.splitlines():
                        wrapped = textwrap.wrap(line, min(width, 100) - 11, break_on_hyphens=False, break_long_words=False)
                        for i, part in enumerate(wrapped):
                            print(" " * 9 + ("│ " if i == 0 else "│   ") + part)
        print(f"\n{refused} of {len(STEPS)} refused. Try: guard explain 'alias g=git; g push'")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
