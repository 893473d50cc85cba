"""How often a refusal names the tool that does what the agent wanted, and fills the arguments the
command names, on the labelled corpus refusals (fixtures/pointers/refusals.jsonl).

Prints the confusion table (intended tool × tool named) and the share of named arguments that
reach the call, for guard's code at a git revision (default main) and for this working tree, in
the same run:

    .venv/bin/python bench/pointer_accuracy.py [--before REV] [--only-here]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "fixtures" / "pointers" / "refusals.jsonl"
TREES = ("/workspace",)


def cases(path: Path = LABELS) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(x) for x in f if x.strip()]
    return [r for r in rows if "command" in r]


def named_values(case: dict) -> list[tuple[str, str]]:
    """(argument, text the call must show) for each value the command names."""
    out = []
    args = dict(case["args"])
    if "message" in args and "message_file" in args:  # two commits: the call can hold one of them
        args.pop("message_file")
    for k, v in args.items():
        if k == "files":
            out.extend(("files", f.rstrip("/").removeprefix("./")) for f in v if f not in (".", "./"))
        elif k == "message":
            out.append(("message", v.strip().split("\n", 1)[0][:60].strip()))
        elif k in ("message_file", "branch"):
            out.append((k, v))
    return out


def score(rows: list[dict], analyze) -> dict:  # noqa: ANN001 — guard.engine.analyze of the code scored
    from guard.context import Context

    table: Counter[tuple[str, str]] = Counter()
    named = filled = 0
    misses = []
    for case in rows:
        ctx = Context.from_environ(cwd=case["cwd"], trees=TREES, env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
        v = analyze(case["command"], ctx)
        got = v.tool if v.verdict == "refuse" else "(allowed)"
        want = case["tool"]
        table[(str(want), str(got))] += 1
        if want != got:
            misses.append((case["line"], want, got, case["command"][:100]))
        if want == got:
            for arg, text in named_values(case):
                named += 1
                if text and text in (v.message or ""):
                    filled += 1
                else:
                    misses.append((case["line"], f"{want}.{arg}", "unfilled", text[:60]))
    right = sum(n for (w, g), n in table.items() if w == g)
    return {"total": len(rows), "right": right, "named": named, "filled": filled,
            "table": {f"{w}\t{g}": n for (w, g), n in sorted(table.items())}, "misses": misses}


def _score_here() -> dict:
    sys.path.insert(0, str(REPO))
    from guard.engine import analyze

    return score(cases(), analyze)


def _score_at(rev: str) -> dict:
    """Score guard's code at ``rev`` (a git revision of this repository) on today's labels."""
    tmp = Path(tempfile.mkdtemp(prefix="guard-pointers-"))
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        for so in (REPO / "guard").glob("_spawn*.so"):  # the compiled helper is not in git
            shutil.copy(so, tmp / "guard" / so.name)
        env = {**os.environ, "PYTHONPATH": str(tmp), "XDG_CACHE_HOME": str(tmp / ".cache")}
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import pointer_accuracy as p; "
                "from guard.engine import analyze; print(json.dumps(p.score(p.cases(p.Path(sys.argv[2])), analyze)))")
        out = subprocess.run([sys.executable, "-c", code, str(REPO / "bench"), str(LABELS)], env=env, cwd=tmp,
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out.splitlines()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def show(name: str, result: dict) -> None:
    print(f"== {name}: tool right in {result['right']}/{result['total']} "
          f"({100 * result['right'] / max(1, result['total']):.1f} %); named arguments filled "
          f"{result['filled']}/{result['named']} ({100 * result['filled'] / max(1, result['named']):.1f} %)")
    print(f"  {'intended tool':<16}{'tool named':<16}count")
    for key, n in result["table"].items():
        want, got = key.split("\t")
        mark = "" if want == got else "  ✗"
        print(f"  {want:<16}{got:<16}{n:>5}{mark}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="git revision scored as 'before' (default main)")
    ap.add_argument("--only-here", action="store_true", help="score this working tree only")
    ap.add_argument("--misses", action="store_true", help="list the cases scored wrong")
    a = ap.parse_args()
    if not a.only_here:
        show(f"before ({a.before})", _score_at(a.before))
    here = _score_here()
    show("after (this tree)", here)
    if a.misses:
        for m in here["misses"]:
            print("  miss:", *m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
