"""The audit log's costs: appending one record, and ``guard audit`` over a fleet's logs.

    .venv/bin/python bench/audit_bench.py [--records 5000] [--writers 8] [--dir DIR]
    .venv/bin/python bench/audit_bench.py report [--sizes 1000000,10000000] [--files 400] [--dir DIR]

``report`` generates the fleet (``bench/audit_fleet.py``; kept in ``--dir`` for the next run) and
runs ``guard audit`` over it side by side, each in a child process, measuring wall time, CPU time
and peak RSS (``wait4``): today's code (``--engine python``, every record in memory, the report
the issue compares against), the DuckDB engine as it was at ``--base-rev`` (a git worktree of
that commit, made for the run and removed after it; ``--base-rev ''`` leaves it out), and the
DuckDB engine of this checkout; then it checks that all printed the same report byte for byte,
and prints the targets beside the figures with the load average. Today's code runs under an
address-space cap (``--baseline-cap-gb``, default 6): past it, it fails with a MemoryError, and
the figure printed is how long it ran before it did.

Appending:

Two figures per case: ``append`` is ``append_record`` of a record already built (encode, redact
again, open, one write, fstat, close); ``build+append`` adds ``build_record`` (ids, time,
redaction, caps) — what the shell pays per refusal; ``append (CPU)`` is the append's own CPU
time, which leaves out waiting for a core when there are more writers than cores. The log lives in a temporary directory on the
same file system as ``--dir`` (default: the system temp dir).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    if sys.argv[1:2] == ["report"]:
        report_main(sys.argv[2:])
        return
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


# --------------------------------------------------------------------------- guard audit over a fleet

HERE = Path(__file__).resolve().parent
TARGETS = {1_000_000: (8.0, 500), 10_000_000: (60.0, 1024)}  # seconds, MB


def _fleet(root: Path, records: int, files: int) -> tuple[Path, dict]:
    """The generated fleet for this size, made once and kept."""
    sys.path.insert(0, str(HERE))
    import audit_fleet

    stamp_text = json.dumps(
        {"records": records, "files": files, "generator": _digest(HERE / "audit_fleet.py")}
    )
    where = root / f"fleet-{records}-{files}"
    stamp = where / ".stamp"
    if not (stamp.exists() and json.loads(stamp.read_text())["key"] == stamp_text):
        if where.exists():
            for old in where.iterdir():
                old.unlink()
        t0 = time.perf_counter()
        stats = audit_fleet.generate(where, records, files)
        stats["generated_s"] = round(time.perf_counter() - t0, 1)
        stats["bytes"] = sum(p.stat().st_size for p in where.iterdir())
        stamp.write_text(json.dumps({"key": stamp_text, "stats": stats}))
    return where, json.loads(stamp.read_text())["stats"]


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _run(argv: list[str], out: Path, cap_bytes: int | None = None, pythonpath: str | None = None) -> dict:
    """One child: wall seconds, CPU seconds, peak RSS in MB, exit status."""

    def limit() -> None:
        if cap_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # python -m puts the working directory first on sys.path: run where the code to measure is
    cwd = pythonpath or str(HERE.parent)
    t0 = time.perf_counter()
    with open(out, "wb") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.PIPE, preexec_fn=limit, env=env, cwd=cwd)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return {
        "load": os.getloadavg()[0],
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "status": proc.returncode,
        "last_stderr": last[0][:120],
    }


def _median(results: list[dict]) -> dict:
    """Each figure's median over the runs (the failed ones left out when any succeeded), and the
    load average at the median wall time's run."""
    ok = [r for r in results if r["status"] == 0] or results
    pick = dict(sorted(ok, key=lambda r: r["wall"])[len(ok) // 2])
    for key in ("cpu", "rss_mb"):
        pick[key] = statistics.median(r[key] for r in ok)
    return {**pick, "runs": len(results)}


def _interleaved(jobs: dict[str, tuple], runs: int) -> dict[str, dict]:
    """``jobs``: name -> the arguments of ``_run``. The engines take turns, run after run, so a
    change in the machine's load falls on each of them rather than on whichever ran then."""
    results: dict[str, list[dict]] = {name: [] for name in jobs}
    for _ in range(runs):
        for name, args in jobs.items():
            results[name].append(_run(*args))
    return {name: _median(rs) for name, rs in results.items()}


def _line(name: str, r: dict | None) -> str:
    if r is None:
        return f"  {name:<34} not run"
    state = "" if r["status"] == 0 else f"   FAILED (exit {r['status']}: {r['last_stderr']})"
    return (
        f"  {name:<34} {r['wall']:7.1f} s wall  {r['cpu']:7.1f} s CPU  {r['rss_mb']:7.0f} MB peak RSS"
        f"   (load {r['load']:.1f}){state}"
    )


def _base_checkout(rev: str, root: Path) -> Path | None:
    """A worktree of ``rev`` under ``root`` (the code to compare with), or None when there is none."""
    if not rev:
        return None
    where = root / f"base-{rev}"
    if not where.exists():
        made = subprocess.run(
            ["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(where), rev],
            capture_output=True,
        )
        if made.returncode != 0:
            print(f"base {rev}: no worktree ({made.stderr.decode(errors='replace').strip()[:120]})")
            return None
    return where


def _drop_checkout(where: Path | None) -> None:
    if where is not None:
        subprocess.run(["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(where)],
                       capture_output=True)  # fmt: skip


def report_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="audit_bench.py report")
    p.add_argument("--sizes", default="1000000,10000000", help="records per fleet, comma-separated")
    p.add_argument("--files", type=int, default=400)
    p.add_argument("--dir", default=None, help="where the fleets are kept (default: a temp dir, removed)")
    p.add_argument(
        "--runs", type=int, default=1, help="runs per engine and size, taking turns (medians are printed)"
    )
    p.add_argument("--baseline-cap-gb", type=float, default=6.0)
    p.add_argument(
        "--base-rev", default="a00e9d8", help="the DuckDB engine of this commit runs too ('' for none)"
    )
    p.add_argument(
        "--no-baseline-above",
        type=int,
        default=10_000_000,
        help="skip today's code for fleets larger than this",
    )
    opts = p.parse_args(argv)  # fmt: skip
    import duckdb

    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}, duckdb {duckdb.__version__}")
    root_ctx = tempfile.TemporaryDirectory() if opts.dir is None else None
    root = Path(root_ctx.name if root_ctx else opts.dir)
    root.mkdir(parents=True, exist_ok=True)
    # One list of known rules for every engine, so "never fired" does not differ with the rules
    # each checkout ships.
    rules = root / "rules-list.txt"
    rules.write_text((HERE.parent / "tests" / "audit" / "golden" / "rules.txt").read_text())
    guard = [sys.executable, "-m", "guard.cli.main", "audit", "--rules-list", str(rules)]
    base = _base_checkout(opts.base_rev, root)
    results = {}
    try:
        for size in [int(x) for x in opts.sizes.split(",")]:
            where, stats = _fleet(root, size, opts.files)
            print(
                f"\n{size:,} records in {stats['files']} files, {stats['bytes'] / 1e6:.0f} MB"
                f" ({stats['duplicates']} duplicate copies, {stats['malformed']} malformed lines,"
                f" {stats['enveloped']} in collector envelopes; gzip: one file in ten)"
            )
            jobs: dict[str, tuple] = {"new": ([*guard, "--engine", "duckdb", str(where)], root / "new.txt")}
            if base is not None:
                jobs["base"] = ([*guard, "--engine", "duckdb", str(where)], root / "base.txt", None, str(base))
            if size <= opts.no_baseline_above:
                cap = int(opts.baseline_cap_gb * 1024**3)
                jobs["old"] = ([*guard, "--engine", "python", str(where)], root / "old.txt", cap)
            done = _interleaved(jobs, opts.runs)
            new, before, old = done["new"], done.get("base"), done.get("old")
            target = TARGETS.get(size)
            if target:
                print(f"  {'target':<34} {target[0]:7.1f} s wall  {'':>13}  {target[1]:7.0f} MB peak RSS")
            print(_line("today (--engine python)", old))
            if base is not None:
                print(_line(f"DuckDB engine at {opts.base_rev}", before))
            print(_line("DuckDB engine (this checkout)", new))
            outputs = {"today": (old, "old.txt"), "base": (before, "base.txt")}
            for name, (r, file) in outputs.items():
                if r and r["status"] == 0 and new["status"] == 0:
                    same = (root / file).read_bytes() == (root / "new.txt").read_bytes()
                    print(f"  vs {name}: {r['wall'] / new['wall']:.1f}x faster (wall), {r['cpu'] / new['cpu']:.1f}x less CPU,"
                          f" {r['rss_mb'] / new['rss_mb']:.1f}x less memory; same report byte for byte: {'yes' if same else 'NO'}")  # fmt: skip
            if old and old["status"] != 0:
                print(
                    f"  today's code failed under a {opts.baseline_cap_gb:g} GB cap after {old['wall']:.0f} s"
                )
            if target:
                ok = new["status"] == 0 and new["wall"] <= target[0] and new["rss_mb"] <= target[1]
                print(f"  target: ≤ {target[0]:g} s and ≤ {target[1]} MB: {'met' if ok else 'NOT met'}"
                      f" (wall figures mean little at a load above the {os.cpu_count()} cores)")  # fmt: skip
            results[size] = {"today": old, "base": before, "duckdb": new}
    finally:
        _drop_checkout(base)
        if root_ctx:
            root_ctx.cleanup()


if __name__ == "__main__":
    main()
