"""The analysis server's per-request cost, in CPU time: what one forked worker spends between
taking a connection and having its answer, for the analysed commands of the shell bench.

    .venv/bin/python bench/worker_bench.py [--runs 15] [--baseline DIR] [--rules FILE]

For each command, each run forks a worker from a server warmed up the way ``guard.serve.server``
does it, lets the worker touch its pages the way it does before a request arrives (the tree's own
``_pre_touch``), then times (in CPU time of the worker, which a busy machine does not inflate) the
steps of a request: the check that the package is unchanged, emptying the caches (``forget``),
and ``guard_command`` on the command; and the worker's whole CPU time (fork and pre-touch
included), which is what every request costs the machine. The median of the runs is printed. ``--rules FILE`` runs the requests with
``GUARD_RULES=FILE`` (an operator's layering). ``--baseline DIR`` (an older checkout) is measured
the same way in the same run, one after the other. Asserts nothing.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COMMANDS = {
    "parse-heavy": 'x=$(echo hi); for i in 1 2; do sh -c "echo $x $i" | cat >/dev/null; done; eval "true"',
    "git status": "git status",
    "five git": "git status; git log --oneline -3; git diff --stat; git branch -a; git remote -v",
    "python -c": "python3 -c 'import os, subprocess; print(os.getcwd())'",
    "git push": "git push origin HEAD",
}


def measure(repo: str, runs: int, rules: str | None) -> dict[str, list[float]]:
    """In this process (a child of main): every figure for the guard in ``repo``."""
    sys.path.insert(0, repo)
    import time

    from guard import shell
    from guard.serve import client, server

    server.warm_up()
    if rules:
        # what a server that has served this layering before holds (when it knows how to learn)
        from guard.ruleset import load

        settle = getattr(load, "settle", None)
        if settle is not None:
            settle((rules,), None)
            server.forget()
    files = server.code_files(client.package_dir())
    log = os.path.join(tempfile.mkdtemp(prefix="worker-bench-"), "audit.jsonl")  # refusals are logged
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "GUARD_TREE": "/workspace",
           "GUARD_AUDIT_LOG": log}
    if rules:
        env["GUARD_RULES"] = rules
    out: dict[str, list[float]] = {}
    for name, command in COMMANDS.items():
        stamp_ms, forget_ms, decide_ms, whole_ms = [], [], [], []
        for _ in range(runs):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(r)
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 2)
                    quiet, _ = socket.socketpair()  # no caller waits: the whole pre-touch runs
                    server._pre_touch(quiet)  # the tree's own, as its workers run it
                    t0 = time.process_time()
                    server.code_stamp(files)
                    t1 = time.process_time()
                    server.forget()
                    t2 = time.process_time()
                    shell.guard_command(command, "/workspace/app", shell.parse_args(["-c", command]), env)
                    t3 = time.process_time()
                    os.write(w, json.dumps([t1 - t0, t2 - t1, t3 - t2]).encode())
                finally:
                    os._exit(0)
            os.close(w)
            data = _read_all(r)
            os.close(r)
            _, _, usage = os.wait4(pid, 0)
            a, b, c = json.loads(data)
            whole_ms.append((usage.ru_utime + usage.ru_stime) * 1e3)
            stamp_ms.append(a * 1e3)
            forget_ms.append(b * 1e3)
            decide_ms.append(c * 1e3)
        out[name] = [statistics.median(stamp_ms), statistics.median(forget_ms), statistics.median(decide_ms),
                     statistics.median(whole_ms)]
    return out


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--baseline", default=None, help="another guard checkout, measured the same way in this run")
    ap.add_argument("--rules", default=None, help="GUARD_RULES for the requests (an operator's rule file)")
    ap.add_argument("--repo", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.json:
        print(json.dumps(measure(ns.repo, ns.runs, ns.rules)))
        return

    def child(repo: str) -> dict[str, list[float]]:
        compileall.compile_dir(str(Path(repo) / "guard"), quiet=1)  # a start-up is not a compile
        args = [sys.executable, __file__, "--json", "--repo", repo, "--runs", str(ns.runs)]
        args += ["--rules", ns.rules] if ns.rules else []
        done = subprocess.run(args, capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    print(f"worker CPU per request, median of {ns.runs} forked workers; load average {os.getloadavg()[0]:.1f}"
          + (f"; GUARD_RULES={ns.rules}" if ns.rules else ""))
    trees = [("this tree", str(REPO))] + ([("baseline", str(Path(ns.baseline).resolve()))] if ns.baseline else [])
    results = [(label, child(repo)) for label, repo in trees]
    print("request = package check + forget + decision; worker = all its CPU, fork and pre-touch included")
    print(f"{'command':<14}" + "".join(f"{label + ' ms: request = check+forget+decide; worker':>58}"
                                       for label, _ in results))
    for name in COMMANDS:
        cells = []
        for _, r in results:
            s, f, d, whole = r[name]
            cells.append(f"{s + f + d:6.2f} = {s:.2f} + {f:.2f} + {d:.2f}; {whole:6.2f}")
        print(f"{name:<14}" + "".join(f"{c:>58}" for c in cells))
    if len(results) == 2:
        mine, base = results[0][1], results[1][1]
        ratios = [sum(mine[n][:3]) / sum(base[n][:3]) for n in COMMANDS]
        wratios = [mine[n][3] / base[n][3] for n in COMMANDS]
        print(f"this tree / baseline: request {min(ratios):.2f}x to {max(ratios):.2f}x, "
              f"worker {min(wratios):.2f}x to {max(wratios):.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
