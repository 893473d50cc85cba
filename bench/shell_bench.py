"""guard-shell -c against bash -c and the interpreter's floor, side by side in one run.

    .venv/bin/python bench/shell_bench.py [--runs 30] [--shell PATH] [--baseline PATH|DIR]

The floor is ``python -I -S -c pass`` of guard-shell's own interpreter: what any launcher
written in Python pays. Plain commands (``true``, ``ls``, ``cat f``, ``pytest -q``, a stub program on
PATH: they pass the pre-check) are measured *over the floor*: guard-shell's time less the floor and less what
the command itself costs under bash beyond ``bash -c true`` (target: at most 1 ms). Commands
that need the analysis (the parse-heavy one of the issue, five git commands on a scratch
repository, ``python -c``, git writing to stderr, a command in the form Claude Code sends,
sourcing a 90 KB shell snapshot, and one git command of literal words, which runs without bash)
are measured *over bash plus the floor* (target: at most 4 ms), with the analysis server (the default) and without it (GUARD_SERVER=0). Runs alternate
floor, bash and guard-shell so drift hits all alike; medians. For the analysed commands a second
table gives CPU time, which moves far less with the machine's load: guard-shell's process tree
(the real shell included, from wait4), plus the analysis server's share (its own CPU and its
reaped workers', from /proc, in clock ticks: read it over many runs), over bash's and the floor's. Also prints the peak RSS of ``guard-shell -c true`` (the guard and the
real shell it runs, from wait4) next to bash's, and the modules the hot path imports. Asserts
nothing. ``--shell`` benchmarks another guard-shell (by default the one next to this Python);
``--baseline`` measures a second one in the same alternating runs.
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


def _once(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, int, int, float]:
    """Wall seconds, exit status, peak RSS (KiB) and CPU seconds (user and system, of the
    process and the children it waited for) of one run."""
    t = time.perf_counter()
    pid = _spawn(argv, cwd, env)
    _, status, usage = os.wait4(pid, 0)
    return (time.perf_counter() - t, os.waitstatus_to_exitcode(status), usage.ru_maxrss,
            usage.ru_utime + usage.ru_stime)


def _server_cpu(shell: str) -> float:
    """CPU seconds so far of the analysis servers ``shell``'s interpreter runs: each server's own
    and that of the workers it has reaped (a worker serves one request and exits)."""
    interp = _interpreter(shell).encode()
    ticks = os.sysconf("SC_CLK_TCK")
    procs: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if argv[0] == interp and b"guard.serve.server" in argv:
            procs[int(name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / ticks)
    return sum(cpu for ppid, cpu in procs.values() if ppid not in procs)  # the servers, not their workers


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


def _snapshot(root: Path, size: int = 90 * 1024) -> Path:
    """A shell snapshot of the kind Claude Code sources before each command: functions, shell
    options, aliases and PATH, about ``size`` bytes."""
    parts = ["# Snapshot file", "# Unset all aliases to avoid conflicts with functions",
             "unalias -a 2>/dev/null || true", "# Functions"]
    i = 0
    while sum(len(p) + 1 for p in parts) < size - 600:
        parts.append(
            f"_helper_{i} () \n{{ \n    local cur prev words cword;\n    _init_completion -n = || return;\n"
            f"    case $prev in \n        --file | -f)\n            _filedir;\n            return\n        ;;\n"
            f"        --dir)\n            _filedir -d;\n            return\n        ;;\n    esac;\n"
            f"    if [[ $cur == -* ]]; then\n        COMPREPLY=($(compgen -W '--file --dir --help' -- \"$cur\"));\n"
            f"    fi\n}}")
        i += 1
    parts += ["# Shell Options", "shopt -u autocd", "shopt -s checkwinsize", "shopt -s expand_aliases",
              "set -o braceexpand", "set -o hashall", "# Aliases", "alias -- ll='ls -alF'",
              "alias -- la='ls -A'", "# Check for rg availability",
              "if ! command -v rg >/dev/null 2>&1; then\n  alias rg='grep -r'\nfi",
              f"export PATH={os.environ.get('PATH', '/usr/bin:/bin')}"]
    path = root / "snapshot-bash-1764590000000-abcdef.sh"
    path.write_text("\n".join(parts) + "\n")
    return path


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
    ap.add_argument("--baseline", default=None,
                    help="another guard-shell (or a checkout whose .venv holds a regular install), measured "
                         "in the same alternating runs")
    a = ap.parse_args()
    base = _baseline_shell(a.baseline)
    root = Path(tempfile.mkdtemp(prefix="shell-bench-"))
    tree = root / "tree"
    tree.mkdir()
    repo = _git_repo(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_TREE"] = str(tree)
    env["GUARD_AUDIT_LOG"] = str(root / "audit.jsonl")
    snap = _snapshot(root)
    (repo / "f.txt").write_text("one\ntwo\n")
    # `pytest -q` as a command line; the program is a stub, so its own run time does not drown
    # the guard's: what is measured is the command passing the pre-check
    stub = root / "stub-bin"
    stub.mkdir()
    (stub / "pytest").write_text("#!/bin/sh\nexit 0\n")
    (stub / "pytest").chmod(0o755)
    env["PATH"] = f"{stub}:{env.get('PATH', '/usr/bin:/bin')}"
    plain = {"true": "true", "ls": "ls", "cat f": "cat f.txt", "pytest -q": "pytest -q"}
    analysed = {
        "parse-heavy": 'x=$(echo hi); for i in 1 2; do sh -c "echo $x $i" | cat >/dev/null; done; eval "true"',
        "five git": "git status --short && git log --oneline -5 && git diff --stat && git rev-parse HEAD "
        "&& git branch --list",
        "python -c": f"{sys.executable} -c 'import json; print(json.dumps(sum(range(10000))))'",
        "git, stderr": "git status --short >&2 && git log --oneline -3 >&2 && git rev-parse HEAD",
        "one git": "git status --short",
        # Claude Code's own form (tests/hosts/snapshots.py): `\<` reaches eval as a word; it also
        # passes -l, left out here as both shells would read the same login files
        "snapshot 90K": f"source {snap} && eval 'git status --short' \\< /dev/null && pwd -P >| {root}/cwd-file",
    }
    floor_argv = [_interpreter(a.shell), "-I", "-S", "-c", "pass"]
    print(f"guard-shell: {a.shell}\nreal shell:  {REAL_SHELL}\nfloor:       {' '.join(floor_argv)}\n"
          f"runs: {a.runs} per side, alternating; 'no server' is GUARD_SERVER=0 (every analysis in-process); "
          f"load average {os.getloadavg()[0]:.1f}\n")
    off = {**env, "GUARD_SERVER": "0"}
    # The first analysed command starts the resident server (guard.serve); let it come up.
    for sh in (a.shell, *base):
        _once([sh, "-c", analysed["five git"]], str(repo), env)
    time.sleep(3)
    for sh in (a.shell, *base):
        _once([sh, "-c", "true"], str(repo), env)  # a first run may rewrite the launcher's #! line
    if base:
        print(f"baseline:    {base[0]} (its figures in the last columns, same runs)\n")
    try:
        floors, bash_true = [], []
        print(f"{'plain command':<14}{'bash ms':>9}{'guard ms':>10}{'over floor':>12}"
              + (f"{'baseline':>10}{'over floor':>12}" if base else "") + "   (target <= 1 ms)")
        for name, cmd in plain.items():
            b, g, gb = [], [], []
            for _ in range(a.runs):
                floors.append(_once(floor_argv, str(repo), env)[0])
                bash_true.append(_once([REAL_SHELL, "-c", "true"], str(repo), env)[0])
                b.append(_once([REAL_SHELL, "-c", cmd], str(repo), env)[0])
                g.append(_once([a.shell, "-c", cmd], str(repo), env)[0])
                for sh in base:
                    gb.append(_once([sh, "-c", cmd], str(repo), env)[0])
            mf, mt, mb, mg = (statistics.median(x) * 1000 for x in (floors, bash_true, b, g))
            line = f"{name:<14}{mb:>9.1f}{mg:>10.1f}{mg - mf - (mb - mt):>+12.1f}"
            if gb:
                mgb = statistics.median(gb) * 1000
                line += f"{mgb:>10.1f}{mgb - mf - (mb - mt):>+12.1f}"
            print(line)
        print(f"floor (python -I -S -c pass) {statistics.median(floors) * 1000:.1f} ms, "
              f"bash -c true {statistics.median(bash_true) * 1000:.1f} ms\n")
        print(f"{'analysed':<14}{'bash ms':>9}{'guard ms':>10}{'over b+floor':>14}{'no server':>11}"
              f"{'over b+floor':>14}" + (f"{'baseline':>10}{'over b+floor':>14}" if base else "")
              + "   (target <= 4 ms)")
        cpu_rows = []
        for name, cmd in analysed.items():
            b, g, o, fl, gb = [], [], [], [], []
            cpu: dict[str, list[float]] = {"floor": [], "bash": [], "guard": [], "base": []}
            served = {"guard": 0.0, "base": 0.0}
            for _ in range(a.runs):
                for side, argv, out in (("floor", floor_argv, fl), ("bash", [REAL_SHELL, "-c", cmd], b)):
                    r = _once(argv, str(repo), env)
                    out.append(r[0])
                    cpu[side].append(r[3])
                for side, sh, out in (("guard", a.shell, g), *(("base", sh, gb) for sh in base)):
                    before = _server_cpu(sh)
                    r = _once([sh, "-c", cmd], str(repo), env)
                    served[side] += _server_cpu(sh) - before
                    out.append(r[0])
                    cpu[side].append(r[3])
                o.append(_once([a.shell, "-c", cmd], str(repo), off)[0])
            mf, mb, mg, mo = (statistics.median(x) * 1000 for x in (fl, b, g, o))
            line = f"{name:<14}{mb:>9.1f}{mg:>10.1f}{mg - mb - mf:>+14.1f}{mo:>11.1f}{mo - mb - mf:>+14.1f}"
            if gb:
                mgb = statistics.median(gb) * 1000
                line += f"{mgb:>10.1f}{mgb - mb - mf:>+14.1f}"
            print(line)
            cf, cb = (statistics.median(cpu[k]) * 1000 for k in ("floor", "bash"))
            row = [name, cb]
            for side in ("guard", "base")[: 1 + bool(base)]:
                own, server = statistics.median(cpu[side]) * 1000, served[side] / a.runs * 1000
                row += [own, server, own + server - cb - cf]
            cpu_rows.append(row)
        # CPU moves far less with the machine's load than wall time: the guard's whole cost in
        # CPU, its own process tree (with the real shell) plus the server's share, over bash's
        # and the floor's
        print(f"\n{'CPU, analysed':<14}{'bash ms':>9}{'guard-shell':>12}{'+ server':>10}{'over b+floor':>14}"
              + (f"{'baseline':>10}{'+ server':>10}{'over b+floor':>14}" if base else ""))
        for row in cpu_rows:
            print(f"{row[0]:<14}{row[1]:>9.1f}" + "".join(f"{row[i]:>{w}.1f}{row[i + 1]:>10.1f}{row[i + 2]:>+14.1f}"
                                                       for i, w in ((2, 12), (5, 10))[: (len(row) - 2) // 3]))
        rss_b = max(_once([REAL_SHELL, "-c", "true"], str(root), env)[2] for _ in range(5))
        rss_g = max(_once([a.shell, "-c", "true"], str(root), env)[2] for _ in range(5))
        print(f"\npeak RSS, -c true: bash {rss_b / 1024:.1f} MiB, guard-shell {rss_g / 1024:.1f} MiB")
        interp = _interpreter(a.shell)
        p = subprocess.run([interp, *_flags(a.shell), "-X", "importtime", a.shell, "-c", "true"], env=env,
                           capture_output=True, text=True, cwd=root)
        mods = [ln.split("|")[-1].strip() for ln in p.stderr.splitlines() if "|" in ln and "imported package" not in ln]
        guard_mods = sorted({m.strip() for m in mods if m.strip().startswith("guard")})
        heavy = sorted({m.strip() for m in mods} & {"os", "site", "yaml", "bashlex", "tree_sitter", "re2", "subprocess"})
        print(f"plain path imports {len(mods)} modules; guard modules: {', '.join(guard_mods)}")
        print(f"os, site or heavy modules on the plain path: {', '.join(heavy) or 'none'}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _baseline_shell(given: str | None) -> list[str]:
    """The baseline guard-shell: the path given, or ``DIR/.venv/bin/guard-shell`` of a checkout."""
    if not given:
        return []
    path = Path(given)
    if path.is_dir():
        path = path / ".venv" / "bin" / "guard-shell"
    if not path.exists():
        raise SystemExit(f"shell_bench: no guard-shell at {path}")
    return [str(path)]


def _shebang(shell: str) -> list[str]:
    with open(shell, "rb") as fh:
        line = fh.readline().decode("utf-8", "replace").strip()
    return line[2:].split() if line.startswith("#!") else [sys.executable]


def _interpreter(shell: str) -> str:
    """The interpreter guard-shell's #! line names (the floor is measured with it)."""
    return _shebang(shell)[0]


def _flags(shell: str) -> list[str]:
    return _shebang(shell)[1:]


if __name__ == "__main__":
    main()
