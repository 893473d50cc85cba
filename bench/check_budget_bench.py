"""Per-line cost of ``guard check --jsonl`` on real input: the numbers its budgets come from.

Runs every line of the shared corpus and the peers' cases (plus, with ``--hostile`` and
``--fuzz N``, the generated lines of ``tests/cli/fuzzgen.py``) through the same budgeted worker that
``guard check`` uses, one line at a time, and prints the distribution of wall-clock time per
line and of the worker's peak resident memory per line (VmHWM, reset before each line).

    .venv/bin/python bench/check_budget_bench.py [--shared DIR] [--hostile] [--fuzz N] [--no-corpus]
        [--seconds S] [--memory MIB]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "cli"))

from guard.cli.check import _handle_line  # noqa: E402
from guard.context import Context  # noqa: E402
from guard.engine import analyze  # noqa: E402
from guard.system import budget  # noqa: E402

FILES = ["corpus/agent-commands.jsonl", "corpus/syntax-probe.jsonl", "peers/codex-cases.jsonl",
         "peers/dcg-cases.jsonl", "peers/safety-net-cases.jsonl"]


def _reset_peak(pid: int) -> None:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("GUARD_SHARED", str(Path(__file__).resolve().parents[2] / "shared")))
    ap.add_argument("--hostile", action="store_true", help="also run the stream-attack lines")
    ap.add_argument("--fuzz", type=int, default=0, help="also run N generated fuzz lines")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--memory", type=int, default=8192)
    ns = ap.parse_args()
    lines: list[tuple[str, bytes]] = []
    for name in [] if ns.no_corpus else FILES:
        path = Path(ns.shared) / name
        if path.exists():
            lines += [(name, raw.rstrip(b"\n")) for raw in path.read_bytes().split(b"\n") if raw.strip()]
    import fuzzgen

    if ns.hostile:
        lines += [("hostile", line) for line in fuzzgen.hostile_lines()]
    if ns.fuzz:
        lines += [("fuzz", line) for _, line in fuzzgen.fuzz_lines(ns.fuzz, 20261201, Path(ns.shared))]
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    analyze("true", ctx)
    worker = budget.Worker(lambda raw: _handle_line(raw, ctx), ns.seconds, ns.memory, peaks=True)
    times: list[float] = []
    peaks: list[int] = []
    worst: list[tuple[float, int, str, bytes]] = []
    kinds: dict[str, int] = {}
    for source, raw in lines:
        if worker.pid:
            _reset_peak(worker.pid)
        out = worker.ask(raw)
        kinds[out.kind] = kinds.get(out.kind, 0) + 1
        if out.kind != "ok":
            print(f"  {out.kind} ({out.detail}) after {out.seconds:.1f} s: {source}: {raw[:100]!r}")
        times.append(out.seconds)
        peaks.append(out.peak_kib)
        worst.append((out.seconds, out.peak_kib, source, raw[:100]))
    worker.stop()
    print(f"lines: {len(lines)}  outcomes: {kinds}")
    print(f"time per line (s): median {pct(times, 0.5):.4f}  p99 {pct(times, 0.99):.4f}  "
          f"p99.9 {pct(times, 0.999):.4f}  max {max(times):.3f}")
    print(f"worker peak RSS per line (MiB): median {pct(peaks, 0.5) / 1024:.0f}  p99 {pct(peaks, 0.99) / 1024:.0f}  "
          f"max {max(peaks) / 1024:.0f}")
    for secs, kib, source, head in sorted(worst, key=lambda w: -w[0])[:5]:
        print(f"  slowest: {secs:.3f} s {kib / 1024:.0f} MiB {source}: {head!r}")
    for secs, kib, source, head in sorted(worst, key=lambda w: -w[1])[:5]:
        print(f"  largest: {kib / 1024:.0f} MiB {secs:.3f} s {source}: {head!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
