"""In-process analysis speed: checks per second, median and p99 per command, the slowest command,
and the hostile-size cases, over the shared corpus and the peers' test commands.

    .venv/bin/python bench/analysis_bench.py [--shared ../shared] [--limit N] [--baseline DIR]

After a warm-up that loads every stage once (``warm``: as the analysis server does before it
answers), each command is analysed once for throughput (as `guard check --jsonl` does), then the per-command
figures are the best of two runs, so a scheduling hiccup on a busy machine does not count as the
command's cost. Throughput and the per-command median and p99 are given in wall time and in CPU
time (the figures to trust when the load average is high). ``--baseline DIR`` measures the guard checkout in DIR (for instance the
code before a change, from ``git worktree add``) the same way in the same run, one after the
other, and prints both, then the headline figures side by side. Targets: >= 20,000 checks/s and p99 < 0.5 ms. Asserts nothing.

Then the same corpus as one ``guard check --jsonl`` stream, the way a caller pipes it: with
``--jobs 1`` and with its default (the CPUs it may use, at most 4), and the baseline's.

``--instructions`` counts instead, under valgrind's callgrind, the user-space instructions per
command of every 20th corpus command (1,472), after a warm-up on the commands halfway between
them, with ``PYTHONHASHSEED=0`` and private cache folders: a figure that does not move with the
machine's load, for this tree and the baseline.
"""

from __future__ import annotations

import argparse
import compileall
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


def commands(path: Path, limit: int | None) -> list[str]:
    out = []
    with path.open() as f:
        for line in f:
            out.append(json.loads(line)["command"])
            if limit and len(out) >= limit:
                break
    return out


def per_command(analyze, cmds: list[str], ctx) -> tuple[list[float], list[float]]:
    """Each command's wall time and CPU time (this thread's), each the best of two runs."""
    walls, cpus = [], []
    for c in cmds:
        best = best_cpu = float("inf")
        for _ in range(2):
            t, u = time.perf_counter(), time.thread_time()
            analyze(c, ctx)
            best_cpu = min(best_cpu, time.thread_time() - u)
            best = min(best, time.perf_counter() - t)
        walls.append(best)
        cpus.append(best_cpu)
    return walls, cpus


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


# Modules the analysis imports on first use (the parsers it falls back on, the inline-program
# analysers, the evaluator of deterministic commands), in either tree: about 50 ms in all, which a
# one-pass figure would otherwise count as the analysis of the few commands that first need them.
LAZY = ("guard.parse.bashlex_fallback", "guard.parse.scan", "guard.resolve.compute", "guard.resolve.gitalias",
        "guard.resolve.inline.python", "guard.resolve.inline.node", "guard.resolve.inline.oneliners",
        "guard.resolve.inline.tcl")


def warm(analyze, ctx) -> None:
    """Load the rules, the parsers and every lazily imported stage once, as a long-lived checker
    has them (the analysis server imports them all before it answers, and runs its warm-up
    commands): the timed pass then measures the analysis, not first imports."""
    import importlib

    from guard import parse

    analyze("true", ctx)
    if hasattr(parse, "warm"):  # an older baseline (the code the issue was filed on) has none
        parse.warm()  # tree-sitter's grammar: "true" is read without it
    for name in LAZY:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    try:  # bashlex itself, and its parse tables, load on the first parse (as the server warms it)
        importlib.import_module("guard.parse.bashlex_fallback").lower("echo hi", 0, 0, "")
    except Exception:  # noqa: BLE001 - a warm-up failure only costs speed
        pass
    for c in ("echo $(date) &", "python3 -c 'import os'", "node -e 'process.exit(0)'", "perl -e 'print 1'",
              "echo aGk= | base64 -d", "git status"):
        analyze(c, ctx)


def measure(repo: Path, shared: Path, limit: int | None) -> dict:
    """Every figure for the guard in ``repo``, imported in this process."""
    sys.path.insert(0, str(repo))
    from guard.context import Context
    from guard.engine import analyze

    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    warm(analyze, ctx)
    corpus = commands(shared / "corpus" / "agent-commands.jsonl", limit)
    t0, c0 = time.perf_counter(), time.process_time()
    for c in corpus:
        analyze(c, ctx)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    times, cpus = per_command(analyze, corpus, ctx)
    peers = []
    for f in sorted((shared / "peers").glob("*.jsonl")):
        peers += commands(f, None)
    ptimes, _ = per_command(analyze, peers, ctx)
    big = []
    for label, cmd in (
        ("1 MB command", "echo " + "x" * (1 << 20)),
        ("1 MB heredoc to a file", "cat > /tmp/f <<'EOF'\n" + ("line of text\n" * 80000) + "EOF"),
        ("500 levels of $( )", "$(" * 500 + "echo hi" + ")" * 500),
        ("500 nested subshells", "(" * 500 + "git status" + ")" * 500),
        ("500 nested bash -c (eval chain)", "eval " * 500 + "git push"),
    ):
        t = time.perf_counter()
        v = analyze(cmd, ctx)
        big.append((label, (time.perf_counter() - t) * 1e3, v.verdict + (f" ({v.unresolved[0][:60]})" if v.unresolved else "")))
    return {
        "n": len(corpus), "wall": wall, "cpu": cpu, "median": statistics.median(times), "p99": pct(times, 0.99),
        "cpu_median": statistics.median(cpus), "cpu_p99": pct(cpus, 0.99),
        "max": max(times), "over50": sum(t > 0.05 for t in times), "peers": len(peers),
        "pmedian": statistics.median(ptimes), "pmax": max(ptimes), "pover50": sum(t > 0.05 for t in ptimes),
        "big": big,
    }


def stream(repo: Path, shared: Path, limit: int | None, jobs: str) -> dict:
    """``guard check --jsonl`` of ``repo`` over the corpus as one stream, as a caller pipes it: the
    lines/s from start to last answer (the start, about 0.3 s, included) and the CPU of the
    whole process tree. ``jobs`` is added to its options ("" for the defaults)."""
    lines = tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False)
    with lines:
        for c in commands(shared / "corpus" / "agent-commands.jsonl", limit):
            lines.write(json.dumps({"command": c}).encode() + b"\n")
    code = f"import sys; sys.path.insert(0, {str(repo)!r}); from guard.cli.main import main; main()"
    argv = [sys.executable, "-c", code, "check", "--jsonl", "--tree", "/workspace", "--cwd", "/workspace/app"]
    argv += jobs.split()
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(lines.name, "rb") as fin:
        done = subprocess.run(argv, stdin=fin, capture_output=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.unlink(lines.name)
    n = done.stdout.count(b"\n")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"n": n, "wall": wall, "cpu": cpu, "jobs": jobs}


def report_stream(label: str, r: dict) -> None:
    print(f"  {label}: guard check --jsonl {r['jobs'] or '(default options)'}: {r['n']} lines in {r['wall']:.2f} s = "
          f"{r['n'] / r['wall']:,.0f} lines/s (CPU {r['cpu']:.2f} s = {r['n'] / r['cpu']:,.0f} per CPU-second)")


def counted(repo: Path, shared: Path) -> int:
    """Run every 20th corpus command inside ``functools.reduce`` (the one function callgrind
    collects in), after the others halfway between them; the number of commands run."""
    import functools

    sys.path.insert(0, str(repo))
    from guard.context import Context
    from guard.engine import analyze

    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    corpus = commands(shared / "corpus" / "agent-commands.jsonl", None)
    for c in corpus[10::20]:
        analyze(c, ctx)
    sample = corpus[::20]
    functools.reduce(lambda _, c: analyze(c, ctx) and None, sample, None)
    return len(sample)


def instructions(trees: list[tuple[str, str]], shared: Path) -> None:
    """Instructions per command for each tree, counted by callgrind in a child of its own."""
    if not shutil.which("valgrind"):
        raise SystemExit("analysis_bench: --instructions needs valgrind")
    results = []
    for label, repo in trees:
        compileall.compile_dir(str(Path(repo) / "guard"), quiet=1)  # count the analysis, not a compile
        out = Path(tempfile.mkdtemp(prefix="analysis-bench-cg-"))
        env = {**os.environ, "PYTHONHASHSEED": "0", "XDG_CACHE_HOME": str(out / "cache"), "HOME": str(out)}
        args = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=functools_reduce",
                f"--callgrind-out-file={out}/cg.out", sys.executable, __file__, "--counted", "--repo", repo,
                "--shared", str(shared)]
        done = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
        n = int(done.stdout.strip().splitlines()[-1])
        total = next(int(line.split()[1]) for line in (out / "cg.out").read_text().splitlines()
                     if line.startswith("totals:"))
        results.append((label, n, total))
        shutil.rmtree(out, ignore_errors=True)
    for label, n, total in results:
        print(f"{label}: {total / n:,.0f} instructions per command ({n:,} commands, {total:,} in all)")
    if len(results) == 2:
        print(f"this tree / baseline: {results[0][2] / results[1][2]:.3f}x")


def report(label: str, r: dict) -> None:
    print(f"{label}: corpus {r['n']} commands in {r['wall']:.2f} s = {r['n'] / r['wall']:,.0f} checks/s "
          f"(one pass; CPU {r['cpu']:.2f} s = {r['n'] / r['cpu']:,.0f} checks per CPU-second)")
    print(f"  per command (best of 2): median {r['median'] * 1e6:.0f} µs, p99 {r['p99'] * 1e3:.2f} ms, "
          f"max {r['max'] * 1e3:.1f} ms, {r['over50']} above 50 ms; CPU median {r['cpu_median'] * 1e6:.0f} µs, "
          f"p99 {r['cpu_p99'] * 1e3:.2f} ms")
    print(f"  peers: {r['peers']} commands: median {r['pmedian'] * 1e6:.0f} µs, max {r['pmax'] * 1e3:.1f} ms, "
          f"{r['pover50']} above 50 ms")
    for name, ms, verdict in r["big"]:
        print(f"  {name}: {ms:.0f} ms → {verdict}")


SIDE_BY_SIDE = (  # (label, figure of a result, format)
    ("checks per CPU-second", lambda r: r["n"] / r["cpu"], "{:,.0f}"),
    ("checks per second (wall)", lambda r: r["n"] / r["wall"], "{:,.0f}"),
    ("p50 per command, CPU (µs)", lambda r: r["cpu_median"] * 1e6, "{:.0f}"),
    ("p99 per command, CPU (ms)", lambda r: r["cpu_p99"] * 1e3, "{:.2f}"),
    ("p50 per command, wall (µs)", lambda r: r["median"] * 1e6, "{:.0f}"),
    ("p99 per command, wall (ms)", lambda r: r["p99"] * 1e3, "{:.2f}"),
)


def side_by_side(this: dict, base: dict) -> None:
    """The headline figures of both trees in one table, with this tree's ratio to the baseline."""
    print(f"  {'':28} {'this tree':>12} {'baseline':>12} {'ratio':>7}")
    for label, fig, fmt in SIDE_BY_SIDE:
        a, b = fig(this), fig(base)
        print(f"  {label:28} {fmt.format(a):>12} {fmt.format(b):>12} {a / b:>6.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--baseline", default=None, help="another guard checkout, measured the same way in this run")
    ap.add_argument("--repo", default=None, help=argparse.SUPPRESS)  # the child's tree (for --baseline)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--instructions", action="store_true",
                    help="instead: instructions per command under callgrind (every 20th corpus command)")
    ap.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)  # the child callgrind runs
    ns = ap.parse_args()
    shared = Path(ns.shared).resolve()
    if ns.counted:
        print(counted(Path(ns.repo), shared))
        return
    if ns.instructions:
        trees = [("this tree", str(REPO))] + ([("baseline", str(Path(ns.baseline).resolve()))] if ns.baseline else [])
        instructions(trees, shared)
        return
    if ns.json:
        print(json.dumps(measure(Path(ns.repo), shared, ns.limit)))
        return

    def child(repo: str) -> dict:
        args = [sys.executable, __file__, "--json", "--repo", repo, "--shared", str(shared)]
        args += ["--limit", str(ns.limit)] if ns.limit else []
        out = subprocess.run(args, capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    print(f"load average {os.getloadavg()[0]:.1f} before; target >= 20,000 checks/s, p99 < 0.5 ms")
    this = child(str(REPO))
    report("this tree", this)
    streams = [("this tree", stream(REPO, shared, ns.limit, "--jobs 1")),
               ("this tree", stream(REPO, shared, ns.limit, ""))]
    if ns.baseline:
        base = child(str(Path(ns.baseline).resolve()))
        report(f"baseline {ns.baseline}", base)
        side_by_side(this, base)
        streams.append(("baseline", stream(Path(ns.baseline).resolve(), shared, ns.limit, "")))
    for label, r in streams:
        report_stream(label, r)
    print(f"load average {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
