"""Stderr relay bench: throughput per destination, CPU, added latency per line and peak memory.

    python bench/relay_bench.py [--size 1G] [--runs 3] [--lines 2000] [--baseline DIR]

Throughput: a command writes SIZE bytes to stderr (``head -c SIZE /dev/zero >&2``, and a text
variant of 50-byte lines, which exercises the matcher) to three destinations: /dev/null, a
regular file, and a pipe read by ``cat >/dev/null`` (agent harnesses capture stderr into files
and pipes). For each: *direct* (the command's stderr is the destination), *floor* (one extra
``cat`` between the command and the destination) and *relay* (``guard annotate``), and with
``--baseline DIR`` the same relay of another install or checkout (its ``.venv/bin/guard`` when
it has one, else ``python -m guard.cli.main`` from it), run in turn each round; best wall time of
RUNS each; ratios are direct / other (1.0 = as fast as direct). CPU is the median user+system
seconds of the whole process tree (writer, relay, reader), and ``+cpu`` what the relay adds
over direct: on a shared machine, wall figures follow the load and CPU figures much less. The
load average is printed beside each row. The file lives on a tmpfs when there is one, so the
figure is the relay's cost, not the disk's.

The relay interposes on pipes only. A pipe destination pays one extra pipe hop (the relay
tee(2)s and splice(2)s the bytes on, copying only the duplicate it scans, and enlarges the
destination pipe to 1 MiB meanwhile so that a round leaves in one splice) plus the scan. A
regular file is written by the command itself while a second thread reads back what it appended
and scans it, so only the scan competes (for the second CPU). /dev/null is inherited: nothing
written there can be read, annotations included, so nothing is relayed. relay / floor is what
the guard's own work costs on top of a copying hop.

Startup: ``guard annotate -- true``. Latency: a child writes LINES timestamped lines 0.5 ms
apart; the reader notes arrival times (CLOCK_MONOTONIC is shared by processes) and prints median
and p99 of arrival minus write, direct pipe vs through the relay. Peak RSS: ru_maxrss of the
process tree (the guard is the largest). Nothing here is asserted; it prints numbers. On a
machine with two CPUs the figures depend on whether writer and reader share one: repeat them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
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
    if not (Path(PY).parent / "guard").exists():  # a checkout: the module from it
        e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def guard(*args: str, base: str | None = None) -> list[str]:
    """``guard annotate -- ARGS`` as a user runs it: the launcher beside this Python when there is
    one (an install), else the module (a checkout). With ``base`` (a folder), that install's or
    checkout's guard."""
    if base is not None:
        launcher = Path(base) / ".venv" / "bin" / "guard"
        if launcher.exists():
            return [str(launcher), "annotate", "--", *args]
        return ["env", f"PYTHONPATH={base}", PY, "-m", "guard.cli.main", "annotate", "--", *args]
    launcher = Path(PY).parent / "guard"
    if launcher.exists():
        return [str(launcher), "annotate", "--", *args]
    return [PY, "-m", "guard.cli.main", "annotate", "--", *args]  # the dispatcher: any version has it


def timed(cmd: str) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (KiB) and CPU seconds (user + system) of the process tree of shell
    command ``cmd``."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1], shell=True, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(time.perf_counter() - t, r.ru_maxrss, r.ru_utime + r.ru_stime)\n"
    )
    out = subprocess.run([PY, "-c", probe, cmd], env=env(), capture_output=True, text=True, check=True)
    secs, rss, cpu = out.stdout.split()
    return float(secs), int(rss), float(cpu)


def best(runs: int, cmd: str) -> tuple[float, int]:
    results = [timed(cmd) for _ in range(runs)]
    return min(r[0] for r in results), max(r[1] for r in results)


def best_of_rounds(runs: int, cmds: list[str]) -> tuple[list[tuple[float, int, float, float]], float]:
    """Best time, peak RSS, median CPU and median time of each command, running them in turn
    each round, so that drift (load, page-cache writeback of the previous run's file) falls on
    all of them alike; and the highest load average seen."""
    results: list[list[tuple[float, int, float]]] = [[] for _ in cmds]
    load = 0.0
    for _ in range(runs):
        for i, cmd in enumerate(cmds):
            results[i].append(timed(cmd))
            load = max(load, os.getloadavg()[0])
    return [(min(r[0] for r in rs), max(r[1] for r in rs), statistics.median(r[2] for r in rs),
             statistics.median(r[0] for r in rs)) for rs in results], load


def scratch_dir() -> str:
    """Where the file destination lives: a tmpfs when there is one, so the figure is the relay's
    cost and not the disk's; else the temp folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


def destinations(tmp: str) -> list[tuple[str, str, str]]:
    """(name, shell suffix sending the command's stderr there, the same with one more pipe hop
    through ``cat``: the floor for a copying relay)."""
    out = shlex.quote(os.path.join(tmp, "stderr.out"))
    hop = "2>&1 >/dev/null | cat"
    return [
        ("/dev/null", "2>/dev/null", f"{hop} >/dev/null"),
        ("file", f"2>{out}", f"{hop} >{out}"),
        ("pipe | cat", f"{hop} >/dev/null", f"{hop} | cat >/dev/null"),
    ]


WRITER = r"""
import os, sys, time
n = int(sys.argv[1])
for i in range(n):
    os.write(2, b"%d %d\n" % (i, time.monotonic_ns()))
    t = time.monotonic() + 0.0005
    while time.monotonic() < t:
        pass
"""


def latency(lines: int, through_guard: bool, base: str | None = None) -> list[float]:
    cmd = [PY, "-c", WRITER, str(lines)]
    if through_guard:
        cmd = guard(*cmd, base=base)
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
    ap.add_argument("--baseline", default=None, help="another install or checkout, measured in the same rounds")
    args = ap.parse_args()
    size = parse_size(args.size)
    zeros = f"head -c {size} /dev/zero >&2"
    text = f"yes 'an ordinary build log line that matches no rule' | head -c {size} >&2"

    print(f"stderr relay bench: {size / (1 << 20):.0f} MiB per run, best of {args.runs}, "
          f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    if args.baseline:
        print(f"baseline: {shlex.join(guard(base=args.baseline))}")
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        print(f"file destination in {os.path.dirname(tmp)}; direct, floor and relay alternate each round; "
              "X/d: direct's best time / X's best, med: the same of the median times; "
              "cpu: median seconds of the process tree, +cpu: over direct")
        cols = ["relay"] + (["base"] if args.baseline else [])
        head = f"{'workload':<21}{'destination':<12}{'direct':>8}{'cpu':>7}{'floor/d':>8}"
        for c in cols:
            head += f"{c + '/d':>9}{'med':>5}{'+cpu':>7}{'rss':>7}"
        print(head + f"{'load':>6}")
        for name, script in (("zeros, no newline", zeros), ("text, 50-byte lines", text)):
            for dest_name, dest, hop in destinations(tmp):
                direct = shlex.join(["sh", "-c", script])
                cmds = [f"{direct} {dest}", f"{direct} {hop}", f"{shlex.join(guard('sh', '-c', script))} {dest}"]
                if args.baseline:
                    cmds.append(f"{shlex.join(guard('sh', '-c', script, base=args.baseline))} {dest}")
                results, load = best_of_rounds(args.runs, cmds)
                (d, _, dcpu, dmed), (f, _, _, _) = results[:2]
                row = f"{name:<21}{dest_name:<12}{d:>7.3f}s{dcpu:>6.2f}s{d / f:>8.2f}"
                for g, g_rss, gcpu, gmed in results[2:]:
                    row += f"{d / g:>9.2f}{dmed / gmed:>5.2f}{gcpu - dcpu:>+6.2f}s{g_rss / 1024:>5.1f}MB"
                print(row + f"{load:>6.1f}", flush=True)
    t, _ = best(args.runs, "true")
    for label, base in [("", None)] + ([("baseline ", args.baseline)] if args.baseline else []):
        tg, rss_true = best(args.runs, shlex.join(guard("true", base=base)))
        print(f"{label}startup: true {t * 1000:.1f} ms, guard annotate -- true {tg * 1000:.1f} ms "
              f"(+{(tg - t) * 1000:.1f} ms), peak RSS {rss_true / 1024:.1f} MB, load {os.getloadavg()[0]:.1f}")

    def pct(xs: list[float], q: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]

    direct = latency(args.lines, False)
    for label, base in [("", None)] + ([("baseline ", args.baseline)] if args.baseline else []):
        relayed = latency(args.lines, True, base)
        print(f"{label}latency per line (µs)  direct: median {statistics.median(direct):.0f} p99 {pct(direct, 0.99):.0f}"
              f"   relay: median {statistics.median(relayed):.0f} p99 {pct(relayed, 0.99):.0f}"
              f"   added: median {statistics.median(relayed) - statistics.median(direct):.0f}"
              f"   load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
