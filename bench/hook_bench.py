"""Hook latency: ``guard hook HOST`` for an allowed and a refused command, beside the Python floor.

    python bench/hook_bench.py [--runs 40] [--host claude] [--server]

A host runs its pre-tool hook before every shell command an agent makes, as a new process: the
floor is ``python -I -S -c pass`` with the same interpreter, measured in the same rounds
(interleaved, so load moves all rows alike). Each row: median and p90 wall milliseconds, CPU
(user+system of the child) median, and the median over the floor. ``--server`` leaves the
analysis server on (GUARD_SERVER unset; it is started by the first call); by default it is off
(GUARD_SERVER=0), the in-process path. The post-tool hook (an ordinary command's output) is
measured too. Nothing is asserted; it prints numbers, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def payload(host: str, command: str, cwd: str, after: str | None = None) -> str:
    if host == "copilot":
        p: dict[str, object] = {"toolName": "bash", "toolArgs": json.dumps({"command": command}), "cwd": cwd,
                                "sessionId": "bench"}
        if after is not None:
            p["toolResult"] = {"resultType": "success", "textResultForLlm": after}
        return json.dumps(p)
    tool = "run_shell_command" if host == "gemini" else "Bash"
    event = ("AfterTool" if host == "gemini" else "PostToolUse") if after is not None else (
        "BeforeTool" if host == "gemini" else "PreToolUse")
    p = {"hook_event_name": event, "tool_name": tool, "tool_input": {"command": command}, "cwd": cwd,
         "session_id": "bench"}
    if after is not None:
        p["tool_response"] = {"stdout": after, "stderr": "", "interrupted": False}
    return json.dumps(p)


def once(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, input=stdin.encode(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--host", default="claude")
    ap.add_argument("--server", action="store_true")
    a = ap.parse_args()
    tree = tempfile.mkdtemp(prefix="hook-bench-tree-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_TREE=tree, GUARD_AUDIT_LOG="off")
    if not a.server:
        env["GUARD_SERVER"] = "0"
    guard = [str(BIN / "guard"), "hook", a.host]
    rows = {
        "floor: python -I -S -c pass": ([sys.executable, "-I", "-S", "-c", "pass"], ""),
        "allowed: ls -la": (guard, payload(a.host, "ls -la", tree)),
        "allowed: pytest -q tests/": (guard, payload(a.host, "pytest -q tests/", tree)),
        "refused: git push origin feature": (guard, payload(a.host, "git push origin feature", tree)),
        "refused: G=git; $G commit -am x": (guard, payload(a.host, "G=git; $G commit -am x", tree)),
        "after: ordinary output": (guard, payload(a.host, "ls", tree, after="README.md\napp\n")),
    }
    for argv, stdin in rows.values():  # warm the page cache and guard's own caches
        once(argv, stdin, env)
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    for _ in range(a.runs):
        for name, (argv, stdin) in rows.items():
            got[name].append(once(argv, stdin, env))
    floor = statistics.median(w for w, _ in got["floor: python -I -S -c pass"])
    print(f"guard hook {a.host}, {a.runs} runs each, interleaved; server {'on' if a.server else 'off'}; "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'':38} {'median':>8} {'p90':>8} {'cpu':>8} {'+floor':>8}")
    for name, vals in got.items():
        walls = sorted(w for w, _ in vals)
        med = statistics.median(walls)
        p90 = walls[int(len(walls) * 0.9) - 1]
        cpu = statistics.median(c for _, c in vals)
        print(f"{name:38} {med:8.1f} {p90:8.1f} {cpu:8.1f} {med - floor:+8.1f}")


if __name__ == "__main__":
    main()
