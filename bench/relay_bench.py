"""Stderr relay bench: throughput, added latency per line and peak memory, side by side.

    python bench/relay_bench.py [--size 1G] [--runs 3] [--lines 2000]

Throughput: a command writes SIZE bytes to stderr (``head -c SIZE /dev/zero >&2``, and a text
variant with short lines, which exercises the matcher), once with stderr redirected straight to
/dev/null, once through ``guard annotate`` (stderr also /dev/null), once through a plain pipe to
``cat`` (the floor for any relay that copies bytes). Best wall time of RUNS each; ratio is
direct time / other time (1.0 = as fast as direct). Startup: ``guard annotate -- true``.
Latency: a child writes LINES timestamped lines 0.5 ms apart; the reader notes arrival times
(CLOCK_MONOTONIC is shared by processes) and prints median and p99 of arrival minus write, direct
pipe vs through the relay. Peak RSS: ru_maxrss of the process tree (the guard is the largest).
Nothing here is asserted; it prints numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("GUARD_ANNOTATING", None)
    e["GIT_TERMINAL_PROMPT"] = "0"  # the credential rules are live, as in a sandbox
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def guard(*args: str) -> list[str]:
    return [PY, "-m", "guard.act.annotate", "--", *args]


def timed(cmd: list[str] | str, shell: bool = False) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of the process tree; stderr/stdout to /dev/null."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "cmd = json.loads(sys.argv[1]); shell = sys.argv[2] == '1'\n"
        "t = time.perf_counter()\n"
        "subprocess.run(cmd, shell=shell, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    import json

    out = subprocess.run([PY, "-c", probe, json.dumps(cmd), "1" if shell else "0"], env=env(),
                         capture_output=True, text=True, check=True)
    secs, rss = out.stdout.split()
    return float(secs), int(rss)


def best(runs: int, cmd: list[str] | str, shell: bool = False) -> tuple[float, int]:
    results = [timed(cmd, shell) for _ in range(runs)]
    return min(r[0] for r in results), max(r[1] for r in results)


WRITER = r"""
import os, sys, time
n = int(sys.argv[1])
for i in range(n):
    os.write(2, b"%d %d\n" % (i, time.monotonic_ns()))
    t = time.monotonic() + 0.0005
    while time.monotonic() < t:
        pass
"""


def latency(lines: int, through_guard: bool) -> list[float]:
    cmd = [PY, "-c", WRITER, str(lines)]
    if through_guard:
        cmd = guard(*cmd)
    p = subprocess.Popen(cmd, env=env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, bufsize=0)
    delays: list[float] = []
    assert p.stderr is not None
    buf = b""
    while True:
        chunk = os.read(p.stderr.fileno(), 65536)
        now = time.monotonic_ns()
        if not chunk:
            break
        buf += chunk
        *complete, buf = buf.split(b"\n")
        for line in complete:
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():
                delays.append((now - int(parts[1])) / 1000.0)
    p.wait()
    return delays[50:]  # skip warm-up


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lines", type=int, default=2000)
    args = ap.parse_args()
    size = parse_size(args.size)
    zeros = f"head -c {size} /dev/zero >&2"
    text = f"yes 'an ordinary build log line that matches no rule' | head -c {size} >&2"

    print(f"stderr relay bench: {size / (1 << 20):.0f} MiB per run, best of {args.runs}, python {sys.version.split()[0]}")
    print(f"{'workload':<34}{'direct':>10}{'relay':>10}{'ratio':>8}{'| cat':>10}{'ratio':>8}"
          f"{'rss direct':>12}{'rss relay':>11}")
    for name, script in (("zeros, no newline (1 line)", zeros), ("text, 50-byte lines (matched)", text)):
        d, d_rss = best(args.runs, ["sh", "-c", script])
        g, g_rss = best(args.runs, guard("sh", "-c", script))
        c, _ = best(args.runs, f"sh -c \"{script}\" 2>&1 | cat >/dev/null", shell=True)
        print(f"{name:<34}{d:>9.3f}s{g:>9.3f}s{d / g:>8.2f}{c:>9.3f}s{d / c:>8.2f}"
              f"{d_rss / 1024:>10.1f}MB{g_rss / 1024:>9.1f}MB")
        print(f"{'':<34}{size / d / 1e9:>8.2f}GB/s{size / g / 1e9:>6.2f}GB/s  (relay vs | cat: {c / g:.2f})")
    t, _ = best(args.runs, ["true"])
    tg, rss_true = best(args.runs, guard("true"))
    print(f"startup: true {t * 1000:.1f} ms, guard annotate -- true {tg * 1000:.1f} ms "
          f"(+{(tg - t) * 1000:.1f} ms), peak RSS {rss_true / 1024:.1f} MB")
    direct = latency(args.lines, False)
    relayed = latency(args.lines, True)

    def pct(xs: list[float], q: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]

    print(f"latency per line (µs)  direct: median {statistics.median(direct):.0f} p99 {pct(direct, 0.99):.0f}"
          f"   relay: median {statistics.median(relayed):.0f} p99 {pct(relayed, 0.99):.0f}"
          f"   added: median {statistics.median(relayed) - statistics.median(direct):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
