"""No input costs the analysis more than a fixed amount of time and memory: past a budget the
verdict is partial and says so in ``unresolved``. Each case runs in a child under a 1 GiB address
space limit, so a budget that fails shows as a failed test, not as a machine out of memory."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

CHILD = r"""
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from guard.context import Context
from guard.engine import analyze
ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})
cmd = sys.stdin.read()
start = time.process_time()
v = analyze(cmd, ctx)
print(json.dumps({"verdict": v.verdict, "category": v.category, "unresolved": list(v.unresolved),
                  "cpu": time.process_time() - start}))
"""


def run_child(cmd: str) -> dict:
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CHILD], input=cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    answer = json.loads(out.stdout)
    answer["wall"] = time.monotonic() - start
    return answer


DOUBLINGS = "a=gitgit; " + "a=$a$a; " * 30


@pytest.mark.parametrize(
    "name,cmd,note",
    [
        ("unreached doublings", f"if false; then {DOUBLINGS} fi; echo done", None),
        ("reached doublings", f"{DOUBLINGS} echo ${{#a}}", None),
        ("huge printf width", "if false; then x=$(printf '%0900000000d' 1); fi", None),
        ("long pipeline then a syntax error", " | ".join(["cat"] * 16000) + " (", "too costly"),
        ("million-character pipeline", " | ".join(["cat"] * 200000), "too costly"),
        # near the parse budget: which of the two budgets stops it depends on the machine's speed
        ("thirty thousand stages", " | ".join(["cat"] * 30000), ("command too large", "too costly")),
        ("a hundred thousand words", "echo " + " w" * 100000, "command too large"),
        ("deep nesting", "if true; then " * 300 + "git push; " + "fi; " * 300, "nesting deeper"),
    ],
)
def test_hostile_input_is_bounded(name: str, cmd: str, note: str | tuple[str, ...] | None) -> None:
    answer = run_child(cmd)
    assert answer["cpu"] < 10, (name, answer["cpu"])
    if note:
        notes = (note,) if isinstance(note, str) else note
        assert any(n in u for u in answer["unresolved"] for n in notes), (name, answer["unresolved"])


def test_a_budget_never_hides_the_commands_before_it() -> None:
    """Within the budgets the command is analysed as ever: a push before a big harmless tail."""
    answer = run_child("git push origin main; " + " ".join(["echo x;"] * 5000))
    assert answer["verdict"] == "refuse" and answer["category"] == "publish"


def test_a_large_heredoc_is_still_analysed_whole() -> None:
    body = "| a | b |\n" * 100000
    answer = run_child(f"cat > /tmp/notes.md <<'EOF'\n{body}EOF\ngit push origin main\n")
    assert answer["verdict"] == "refuse", answer
