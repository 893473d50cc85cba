"""In-process analysis speed: checks per second, median and p99 per command, the slowest command,
and the hostile-size cases, over the shared corpus and the peers' test commands.

    .venv/bin/python bench/analysis_bench.py [--shared ../shared] [--limit N]

Each command is analysed once for throughput (as `guard check --jsonl` does), then the per-command
figures are the best of two runs, so a scheduling hiccup on a busy machine does not count as the
command's cost. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from guard.context import Context  # noqa: E402
from guard.engine import analyze  # noqa: E402


def commands(path: Path, limit: int | None) -> list[str]:
    out = []
    with path.open() as f:
        for line in f:
            out.append(json.loads(line)["command"])
            if limit and len(out) >= limit:
                break
    return out


def per_command(cmds: list[str], ctx: Context) -> list[float]:
    times = []
    for c in cmds:
        best = float("inf")
        for _ in range(2):
            t = time.perf_counter()
            analyze(c, ctx)
            best = min(best, time.perf_counter() - t)
        times.append(best)
    return times


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    ap.add_argument("--limit", type=int, default=None)
    ns = ap.parse_args()
    shared = Path(ns.shared)
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    analyze("true", ctx)  # load the rules and the parser once, as a long-lived checker does

    corpus = commands(shared / "corpus" / "agent-commands.jsonl", ns.limit)
    t0 = time.perf_counter()
    for c in corpus:
        analyze(c, ctx)
    wall = time.perf_counter() - t0
    times = per_command(corpus, ctx)
    print(f"corpus: {len(corpus)} commands in {wall:.2f} s = {len(corpus) / wall:,.0f} checks/s (one pass)")
    print(f"  per command (best of 2): median {statistics.median(times) * 1e6:.0f} µs, "
          f"p99 {pct(times, 0.99) * 1e3:.2f} ms, max {max(times) * 1e3:.1f} ms, "
          f"{sum(t > 0.05 for t in times)} above 50 ms")

    peers = []
    for f in sorted((shared / "peers").glob("*.jsonl")):
        peers += commands(f, None)
    ptimes = per_command(peers, ctx)
    print(f"peers: {len(peers)} commands: median {statistics.median(ptimes) * 1e6:.0f} µs, "
          f"max {max(ptimes) * 1e3:.1f} ms, {sum(t > 0.05 for t in ptimes)} above 50 ms")

    for label, cmd in (
        ("1 MB command", "echo " + "x" * (1 << 20)),
        ("1 MB heredoc to a file", "cat > /tmp/f <<'EOF'\n" + ("line of text\n" * 80000) + "EOF"),
        ("500 levels of $( )", "$(" * 500 + "echo hi" + ")" * 500),
        ("500 nested subshells", "(" * 500 + "git status" + ")" * 500),
        ("500 nested bash -c (eval chain)", "eval " * 500 + "git push"),
    ):
        t = time.perf_counter()
        v = analyze(cmd, ctx)
        print(f"{label}: {(time.perf_counter() - t) * 1e3:.0f} ms → {v.verdict}"
              + (f" ({v.unresolved[0][:60]})" if v.unresolved else ""))


if __name__ == "__main__":
    main()
