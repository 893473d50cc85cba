"""Worst cases of pattern removal and substitution in the expander (issue 37, finding 6).

Times the whole analysis of each case, in this process, with the source tree given (default:
this checkout), so the same script measures an older checkout's code:

    .venv/bin/python bench/expansion_bench.py [--repo DIR] [--limit SECONDS]

A case still running after ``--limit`` seconds is stopped (SIGALRM) and reported as ``>LIMIT``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

CASES = [
    *((f"a=$(printf %0{n}d 0); b=${{a//0/00}}; git push", f"${{a//0/00}}, N={n:,}") for n in (3_000, 10_000, 30_000)),
    *((f"a=$(printf %0{n}d 0); b=${{a##*1}}; git push", f"${{a##*1}}, N={n:,}") for n in (10_000, 100_000)),
    *((f"a=$(printf %0{n}d 0); b=${{a%%1*}}; git push", f"${{a%%1*}}, N={n:,}") for n in (10_000, 100_000)),
    *((f"a=$(printf %0{n}d 0); b=${{a//0*1/x}}; git push", f"${{a//0*1/x}}, N={n:,}") for n in (3_000, 30_000)),
]


class _Late(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Late


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--limit", type=float, default=60.0)
    ns = ap.parse_args()
    sys.path.insert(0, ns.repo)
    from guard.context import Context
    from guard.engine import analyze

    ctx = Context.from_environ(cwd="/workspace/app", env={"GUARD_TREE": "/workspace"})
    analyze("true", ctx)
    signal.signal(signal.SIGALRM, _alarm)
    print(f"{'case':<24} {'seconds':>9}  verdict  unresolved")
    for command, label in CASES:
        signal.setitimer(signal.ITIMER_REAL, ns.limit)
        t = time.perf_counter()
        try:
            v = analyze(command, ctx)
            took = f"{time.perf_counter() - t:9.3f}"
            verdict, notes = v.verdict, "; ".join(v.unresolved)[:70]
        except _Late:
            took, verdict, notes = f">{ns.limit:g}".rjust(9), "-", "stopped"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        print(f"{label:<24} {took}  {verdict:<7}  {notes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
