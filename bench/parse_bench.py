"""Parse-stage figures: per-command parse time over the agent corpus, parser share, import time.

Usage: python bench/parse_bench.py [CORPUS.jsonl]  (default: ../shared/corpus/agent-commands.jsonl
or $GUARD_SHARED/corpus/agent-commands.jsonl). Prints; asserts nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def corpus_path() -> Path:
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    shared = Path(os.environ.get("GUARD_SHARED") or REPO.parent / "shared")
    return shared / "corpus" / "agent-commands.jsonl"


def import_ms(code: str, runs: int = 7) -> float:
    """Median in-process time of ``code`` in a fresh interpreter, in ms."""
    prog = f"import time; t=time.perf_counter(); {code}; print((time.perf_counter()-t)*1000)"
    out = []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as pip installs: .pyc
    for _ in range(runs + 2):
        res = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, cwd=REPO, env=env)
        out.append(float(res.stdout.strip()))
    return statistics.median(out[2:])


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    sys.path.insert(0, str(REPO))
    from guard.parse import parse

    path = corpus_path()
    commands = [json.loads(line)["command"] for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    parse("git status")  # warm: loads tree-sitter
    parse("rm !(x)")  # warm: loads bashlex
    share: Counter[str] = Counter()
    per: dict[str, list[float]] = {}
    times: list[float] = []
    for cmd in commands:
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            script = parse(cmd)
            best = min(best, time.perf_counter() - t)
        us = best * 1e6
        times.append(us)
        share[script.parser] += 1
        per.setdefault(script.parser, []).append(us)
    n = len(commands)
    print(f"corpus: {path.name}, {n} commands")
    print(f"parse per command: median {statistics.median(times):.1f} µs, p90 {pct(times, 0.9):.1f} µs, "
          f"p99 {pct(times, 0.99):.1f} µs, max {max(times):.0f} µs, total {sum(times) / 1000:.0f} ms")
    for name, count in share.most_common():
        t = per[name]
        print(f"  {name:12s} {count:6d} ({100 * count / n:6.2f} %)  median {statistics.median(t):8.1f} µs  "
              f"p99 {pct(t, 0.99):9.1f} µs")
    ts = import_ms("from guard.parse import parse; parse('git status')")
    base = import_ms("import guard.ir")
    bl = import_ms("from guard.parse import bashlex_fallback as b; b._load()")
    print(f"import guard.parse + first parse: {ts:.1f} ms ({ts - base:.1f} ms over guard.ir); "
          f"bashlex fallback load (cached tables): {bl:.1f} ms")


if __name__ == "__main__":
    main()
