"""Added latency of guard-shell behind the agent hosts' own wrappers, against plain bash running
the same wrapper string, side by side in one run: median ms per snapshot size and wrapper.

    .venv/bin/python bench/wrapper_bench.py [--runs 20] [--command 'ls -la src && cat README.md']

Wrappers: plain ``-c CMD``, Codex ``-lc CMD``, Claude Code's ``-c -l "source SNAP && eval 'CMD'
\\< /dev/null && pwd -P >| CWDFILE"`` (no snapshot, small, medium, large) and Codex's
``-lc ". SNAP && CMD"`` (small, medium, large). Snapshots are made by real bash in Claude Code's
format (tests/hosts/snapshots.py): small (5 aliases, 2 functions), medium (34 nvm- and
conda-like functions), large (bash-completion's git functions). Runs alternate bash and
guard-shell. ``first`` is guard-shell's first run on a snapshot (nothing cached for it yet);
the medians are of the runs after it. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.shell_bench import _spawn  # noqa: E402
from tests.hosts import snapshots  # noqa: E402  (the generator the tests use)


def _guard_shell() -> str:
    cand = Path(sys.executable).parent / "guard-shell"
    return str(cand) if cand.exists() else (shutil.which("guard-shell") or "guard-shell")


def _once(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, int, float]:
    """Wall seconds, exit status, and CPU seconds of the process and the children it waited
    for (the analysis server's share, about a millisecond per request, is not in it)."""
    t = time.perf_counter()
    _, status, usage = os.wait4(_spawn(argv, cwd, env), 0)
    return time.perf_counter() - t, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def _with_stdin(argv: list[str], stdin: str, cwd: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    with open(stdin, "rb") as fh:
        subprocess.run(argv, stdin=fh, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--command", default="ls -la src && cat README.md | wc -l")
    ns = ap.parse_args()
    guard = _guard_shell()
    with tempfile.TemporaryDirectory(prefix="guard-wrapper-bench-") as tmp:
        base = Path(tmp)
        home = base / "home"
        codex_dir = home / ".codex" / "shell_snapshots"
        codex_dir.mkdir(parents=True)
        work = base / "work"
        (work / "src").mkdir(parents=True)
        (work / "README.md").write_text("# bench\n")
        (base / "run").mkdir(mode=0o700)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
               "GUARD_TREE": str(base / "tree"), "GUARD_AUDIT_LOG": "off", "XDG_CACHE_HOME": str(base / "cache"),
               "XDG_RUNTIME_DIR": str(base / "run")}
        snaps: dict[str, tuple[str, str, int]] = {}
        for size in ("small", "medium", "large"):
            if not snapshots.available(size):
                print(f"({size}: {snapshots.GIT_COMPLETION} not installed, skipped)")
                continue
            made = snapshots.make(size, base / "snaps")
            codex = codex_dir / f"{size}.sh"
            shutil.copy(made, codex)
            snaps[size] = (str(made), str(codex), made.stat().st_size)
        cwd_file = str(base / "claude-bench-cwd")
        cmd = ns.command
        cases: list[tuple[str, list[str]]] = [
            ("plain -c", ["-c", cmd]),
            ("codex -lc", ["-lc", cmd]),
            ("claude, no snapshot", ["-c", "-l", snapshots.claude_wrapper(None, cmd, cwd_file)]),
        ]
        for size, (claude_snap, codex_snap, nbytes) in snaps.items():
            kb = f"{nbytes / 1024:.0f} KB"
            cases.append((f"claude {size} ({kb})", ["-c", "-l", snapshots.claude_wrapper(claude_snap, cmd, cwd_file)]))
            cases.append((f"codex . {size} ({kb})", ["-lc", snapshots.codex_snapshot_wrapper(codex_snap, cmd)]))
        # start the analysis server once, outside the timings
        for _ in range(3):
            _once([guard, "-c", "git --version >/dev/null"], str(work), env)
        print(f"command: {cmd}\nload average {os.getloadavg()[0]:.1f}; {ns.runs} runs each, alternating\n")
        print(f"{'':28} {'wall ms (median)':^35} | {'CPU ms (median)':^26}")
        print(f"{'wrapper':28} {'bash':>8} {'guard':>8} {'added':>8} {'first':>8} | {'bash':>8} {'guard':>8} "
              f"{'added':>8}")
        for name, args in cases:
            first, status, _ = _once([guard, *args], str(work), env)
            if status != 0:
                print(f"{name:28} guard-shell exited {status}: check the command")
                continue
            bash_r, guard_r = [], []
            for _ in range(ns.runs):
                bash_r.append(_once(["/bin/bash", *args], str(work), env))
                guard_r.append(_once([guard, *args], str(work), env))
            b, g = (statistics.median(r[0] for r in rs) * 1000 for rs in (bash_r, guard_r))
            bc, gc = (statistics.median(r[2] for r in rs) * 1000 for rs in (bash_r, guard_r))
            print(f"{name:28} {b:8.1f} {g:8.1f} {g - b:+8.1f} {first * 1000 - b:+8.1f} | {bc:8.1f} {gc:8.1f} "
                  f"{gc - bc:+8.1f}")
        # guard hook HOST for the same command, beside guard-shell -c running it
        guard_cli = str(Path(guard).with_name("guard"))
        payload = base / "payload.json"
        payload.write_text(json.dumps({"session_id": "bench", "cwd": str(work), "hook_event_name": "PreToolUse",
                                       "tool_name": "Bash", "tool_input": {"command": cmd}}))
        hook_t, shell_t = [], []
        for _ in range(ns.runs + 1):
            hook_t.append(_with_stdin([guard_cli, "hook", "claude"], str(payload), str(work), env))
            shell_t.append(_once([guard, "-c", cmd], str(work), env)[0])
        h, g = statistics.median(hook_t[1:]) * 1000, statistics.median(shell_t[1:]) * 1000
        print(f"\nguard hook claude (answer only, the command is not run): {h:.1f} ms; "
              f"guard-shell -c (analysis and run): {g:.1f} ms")
        from guard.shell import client

        path = client.socket_path(env)
        if path:
            client.stop_server(path)  # the server this run started, in its own runtime folder


if __name__ == "__main__":
    main()
