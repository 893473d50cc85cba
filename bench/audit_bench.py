"""Cost of appending one audit record: median and p99 in µs, one writer and N concurrent writers.

    .venv/bin/python bench/audit_bench.py [--records 5000] [--writers 8] [--dir DIR]

Two figures per case: ``append`` is ``append_record`` of a record already built (encode, redact
again, open, one write, fstat, close); ``build+append`` adds ``build_record`` (ids, time,
redaction, caps) — what the shell pays per refusal; ``append (CPU)`` is the append's own CPU
time, which leaves out waiting for a core when there are more writers than cores. The log lives in a temporary directory on the
same file system as ``--dir`` (default: the system temp dir).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time

from guard.audit import log

COMMANDS = [
    "git push origin feature/login",
    "cd /workspace/app && git status",
    'curl -X POST -H "Authorization: token $GH_TOKEN" https://api.github.com/repos/o/r/pulls -d @pr.json',
    "env | grep -i token",
    "gh pr create --title 'Fix flaky test' --body 'Retries the fixture setup twice before failing.'",
    "git -C /workspace/svc commit -am 'wip: refactor the session cache and its invalidation'",
]


def _env(path: str, writer: int) -> dict[str, str]:
    return {
        "GUARD_AUDIT_LOG": path,
        "GUARD_AGENT": f"agent-{writer}",
        "GUARD_THREAD": f"thread-{writer}",
        "GUARD_ROLE": "worker",
        "GUARD_AUDIT_MAX_BYTES": "0",
    }


def _build(env: dict[str, str], i: int) -> dict:
    return log.build_record(
        "refusal",
        COMMANDS[i % len(COMMANDS)],
        cwd="/workspace/app",
        env=env,
        verdict="refuse",
        category="publish",
        rule="git-push",
        tool="git_push",
        via=["alias g"],
        rules_digest="0123456789abcdef",
    )


def _measure(path: str, writer: int, n: int, start_at: float) -> tuple[list[int], list[int], list[int]]:
    env = _env(path, writer)
    while time.time() < start_at:  # start the writers together
        time.sleep(0.0005)
    appends, both, cpu = [], [], []
    for i in range(n):
        t0 = time.perf_counter_ns()
        rec = _build(env, i)
        t1 = time.perf_counter_ns()
        c1 = time.thread_time_ns()
        log.append_record(rec, env)
        c2 = time.thread_time_ns()
        t2 = time.perf_counter_ns()
        appends.append(t2 - t1)
        both.append(t2 - t0)
        cpu.append(c2 - c1)
    return appends, both, cpu


def _stats(ns: list[int]) -> str:
    us = sorted(x / 1000 for x in ns)
    p99 = us[min(len(us) - 1, int(len(us) * 0.99))]
    return f"median {statistics.median(us):7.1f} µs   p99 {p99:7.1f} µs"


def _case(name: str, path: str, writers: int, n: int) -> None:
    start_at = time.time() + 0.3
    if writers == 1:
        results = [_measure(path, 0, n, start_at)]
    else:
        with multiprocessing.get_context("fork").Pool(writers) as pool:
            results = pool.starmap(_measure, [(path, w, n, start_at) for w in range(writers)])
    appends = [x for a, _, _ in results for x in a]
    both = [x for _, b, _ in results for x in b]
    cpu = [x for _, _, c in results for x in c]
    with open(path, "rb") as f:
        lines = f.read().count(b"\n")
    print(f"{name}: {writers} writer(s) x {n} records, {lines} lines in the log")
    print(f"  append        {_stats(appends)}")
    print(f"  build+append  {_stats(both)}")
    print(f"  append (CPU)  {_stats(cpu)}   (time on CPU: without waiting for a core)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=5000)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--dir", default=None)
    opts = p.parse_args()
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(dir=opts.dir) as d:
        _case("single writer", os.path.join(d, "one.jsonl"), 1, opts.records)
        _case("concurrent", os.path.join(d, "many.jsonl"), opts.writers, opts.records)
        cores = os.cpu_count() or 1
        if cores < opts.writers:
            _case("one writer per core", os.path.join(d, "cores.jsonl"), cores, opts.records)


if __name__ == "__main__":
    main()
