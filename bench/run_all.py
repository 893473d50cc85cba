"""Every benchmark, one after the other, each printing its figures beside its baseline.

    .venv/bin/python bench/run_all.py [--quick] [--baseline DIR]

Each prints its figures beside the baseline measured in the same run, and the target:

- analysis_bench: in-process checks per second, median / p99 / max per command (shared corpus,
  peers), the 1 MB and 500-deep cases (target: >= 20,000 checks/s, p99 < 0.5 ms); with
  ``--baseline DIR`` (an older checkout, e.g. ``git worktree add /tmp/base REV``) the same figures
  for that code, measured in the same run;
- shell_bench: guard-shell -c against bash -c and the floor (``python -I -S -c pass`` of the same
  interpreter): plain commands over the floor (target <= 1 ms), analysed ones over bash plus the
  floor (target <= 4 ms), with the analysis server and without it; peak RSS;
- path_profile: the analysed path step by step (imports, connect, peer check, worker hand-off,
  analysis and reply, the relay's start);
- worker_bench: a server worker's CPU time per request (package check, emptying caches, the
  decision), beside ``--baseline DIR``'s;
- load_bench: 64 shells at once against one server: p50/p99 added latency (target p99 <= 3x
  p50), failures, fallbacks (target none), the server's memory over 10,000 commands (flat);
- relay_bench: stderr relay throughput on 1 GiB to /dev/null, a file and a pipe, each against a
  direct redirect and a one-hop `| cat` floor (target >= 0.9x direct for a pipe); latency per
  line; peak RSS;
- audit_bench: append cost, one writer and eight.

Python files are byte-compiled first and the children run without PYTHONDONTWRITEBYTECODE, so a
start-up figure measures guard, not the compiler. Measure a regular install (``pip install .``):
an editable one adds its import hook (~10 ms) to every guard-shell start. ``--quick`` shrinks the
1 GiB and the run counts for a smoke run.
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--relay-size", default=None, help="bytes per relay run (default 1G; --quick 64M)")
    ap.add_argument("--load-commands", type=int, default=None, help="commands of the load bench (default 10000)")
    ap.add_argument("--runs", type=int, default=None, help="runs per case of the shell benches (default 30)")
    ap.add_argument("--baseline", default=None, help="an older guard checkout for the analysis bench's baseline")
    ns = ap.parse_args()
    runs_n = str(ns.runs or (10 if ns.quick else 30))
    relay_size = ns.relay_size or ("64M" if ns.quick else "1G")
    load = ["--commands", str(ns.load_commands)] if ns.load_commands else []
    if ns.quick:
        load = ["--shells", "16", "--commands", str(ns.load_commands or 640)]
    import guard

    pkg = Path(guard.__file__).resolve().parent
    compileall.compile_dir(str(pkg), quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    editable = not str(pkg).startswith(sys.prefix)
    print(f"guard from {pkg} ({'editable: start-up figures include the import hook' if editable else 'installed'})")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    runs = [
        ("analysis", [str(HERE / "analysis_bench.py")] + (["--limit", "3000"] if ns.quick else [])
                     + (["--baseline", ns.baseline] if ns.baseline else [])),
        ("guard-shell vs bash and the floor", [str(HERE / "shell_bench.py"), "--runs", runs_n]
                                               + (["--baseline", ns.baseline] if ns.baseline else [])),
        ("agent host wrappers", [str(HERE / "wrapper_bench.py"), "--runs", "5" if ns.quick else "20"]),
        ("analysed path, step by step", [str(HERE / "path_profile.py"), "--runs", runs_n]),
        ("a server worker's CPU per request", [str(HERE / "worker_bench.py"), "--runs", "5" if ns.quick else "15"]
                                              + (["--baseline", ns.baseline] if ns.baseline else [])),
        ("under load", [str(HERE / "load_bench.py"), *load]),
        ("stderr relay", [str(HERE / "relay_bench.py"), "--size", relay_size,
                          "--runs", "1" if ns.quick else "3"]
                         + (["--baseline", ns.baseline] if ns.baseline else [])),
        ("audit log", [str(HERE / "audit_bench.py")] + (["--records", "1000"] if ns.quick else [])),
    ]
    for title, args in runs:
        print(f"== {title} " + "=" * max(0, 70 - len(title)), flush=True)
        subprocess.run([sys.executable, *args], env=env, check=False)
        print(flush=True)


if __name__ == "__main__":
    main()
