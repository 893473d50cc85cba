"""guard-shell -c against bash -c, side by side in one run: median added ms and ratio.

    .venv/bin/python bench/shell_bench.py [--runs 30] [--shell PATH]

Cases: a trivial command (``true``), a git-heavy one (status, log, diff, rev-parse on a small
scratch repository outside any tree), a ``python -c`` one, and git writing to stderr (so the
relay's annotator pre-filter runs). Runs alternate bash and guard-shell
so drift hits both alike. Also prints the peak RSS of ``guard-shell -c true`` (the guard and the
real shell it runs, from wait4) next to bash's, and the modules the hot path imports. Asserts
nothing. ``--shell`` benchmarks another guard-shell (by default the one next to this Python).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REAL_SHELL = os.environ.get("GUARD_REAL_SHELL") or "/bin/bash"


def _guard_shell() -> str:
    cand = Path(sys.executable).parent / "guard-shell"
    return str(cand) if cand.exists() else (shutil.which("guard-shell") or "guard-shell")


def _once(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, int, int]:
    """Wall seconds, exit status and peak RSS (KiB) of one run."""
    t = time.perf_counter()
    pid = _spawn(argv, cwd, env)
    _, status, usage = os.wait4(pid, 0)
    return time.perf_counter() - t, os.waitstatus_to_exitcode(status), usage.ru_maxrss


def _spawn(argv: list[str], cwd: str, env: dict[str, str]) -> int:
    pid = os.fork()
    if pid == 0:  # child: quiet, in cwd
        try:
            os.chdir(cwd)
            fd = os.open(os.devnull, os.O_RDWR)
            for k in (0, 1, 2):
                os.dup2(fd, k)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid


def _git_repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    for i in range(20):
        (repo / f"f{i}.txt").write_text(f"line {i}\n" * 50)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "one"], check=True, env=env)
    (repo / "f1.txt").write_text("changed\n")
    return repo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--shell", default=_guard_shell())
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="shell-bench-"))
    tree = root / "tree"
    tree.mkdir()
    repo = _git_repo(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_TREE"] = str(tree)
    env["GUARD_AUDIT_LOG"] = str(root / "audit.jsonl")
    cases = {
        "true": "true",
        "git-heavy": "git status --short && git log --oneline -5 && git diff --stat && git rev-parse HEAD "
        "&& git branch --list",
        "python -c": f"{sys.executable} -c 'import json; print(json.dumps(sum(range(10000))))'",
        # stderr output wakes the annotator's pre-filter (and, on a rule's literal, the annotator)
        "git, stderr": "git status --short >&2 && git log --oneline -3 >&2 && git rev-parse HEAD",
    }
    print(f"guard-shell: {a.shell}\nreal shell:  {REAL_SHELL}\nruns: {a.runs} per side, alternating; "
          "'no server' is GUARD_SERVER=0 (every analysis in-process)\n")
    off = {**env, "GUARD_SERVER": "0"}
    # The first analysed command starts the resident server (guard.serve); let it come up.
    _once([a.shell, "-c", cases["git-heavy"]], str(repo), env)
    time.sleep(3)
    print(f"{'case':<14}{'bash ms':>10}{'guard ms':>10}{'added ms':>10}{'ratio':>8}{'no server':>12}{'added':>8}")
    try:
        for name, cmd in cases.items():
            b, g, o = [], [], []
            for _ in range(a.runs):
                b.append(_once([REAL_SHELL, "-c", cmd], str(repo), env)[0])
                g.append(_once([a.shell, "-c", cmd], str(repo), env)[0])
                o.append(_once([a.shell, "-c", cmd], str(repo), off)[0])
            mb, mg, mo = (statistics.median(x) * 1000 for x in (b, g, o))
            print(f"{name:<14}{mb:>10.1f}{mg:>10.1f}{mg - mb:>10.1f}{mg / mb:>8.1f}{mo:>12.1f}{mo - mb:>8.1f}")
        rss_b = max(_once([REAL_SHELL, "-c", "true"], str(root), env)[2] for _ in range(5))
        rss_g = max(_once([a.shell, "-c", "true"], str(root), env)[2] for _ in range(5))
        print(f"\npeak RSS, -c true: bash {rss_b / 1024:.1f} MiB, guard-shell {rss_g / 1024:.1f} MiB")
        p = subprocess.run([a.shell, "-c", "true"], env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
                           capture_output=True, text=True, cwd=root)
        mods = [ln.split("|")[-1].strip() for ln in p.stderr.splitlines() if "|" in ln and "imported package" not in ln]
        guard_mods = sorted({m.strip() for m in mods if m.strip().startswith("guard")})
        heavy = sorted({m.strip() for m in mods} & {"yaml", "bashlex", "tree_sitter", "pexpect", "re2", "subprocess"})
        print(f"hot path imports {len(mods)} modules; guard modules: {', '.join(guard_mods)}")
        print(f"heavy modules on the hot path: {', '.join(heavy) or 'none'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
