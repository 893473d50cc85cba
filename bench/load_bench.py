"""Under load: many agents' shells at once against one analysis server.

    python bench/load_bench.py [--shells 64] [--commands 10000] [--shell PATH]

SHELLS threads each play one agent's shell: a stream of mixed commands (plain ones the pre-check
passes, analysed ones, a refused one), each run once with ``bash -c`` and once with
``guard-shell -c`` (in alternating order), so the added latency of each command is measured
against bash under the same load. Prints p50/p90/p99 of the added milliseconds and p99/p50;
commands whose exit status differed from the expected one (bash's, or 126 for a refusal);
fallbacks, that is analysed commands the server did not answer (the count the server keeps
beside its socket, against the number of analysed commands sent); and the memory (PSS, server
and its workers together) at the start, its largest, and at the end. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from guard.shell import client

try:
    from guard.shell.launch import plain_command
except ImportError:  # an older guard: the pre-check's own list decides (the first four kinds pass it)
    plain_command = None

REAL_SHELL = "/bin/bash"

# (command, refused?) — cheap commands, so the figure is the guard's, not the commands'
MIX = (
    ("true", False),
    ("ls", False),
    ("cat f.txt", False),
    ("wc -l f.txt", False),
    ('x=$(echo hi); for i in 1 2; do sh -c "echo $x $i" | cat >/dev/null; done; eval "true"', False),
    ("git -C repo status --short && git -C repo log --oneline -3 >/dev/null", False),
    ("ls | head -3 && echo $HOME | cat >/dev/null", False),
    ("git push origin main", True),
    ("cd repo && git diff --stat && git rev-parse HEAD >/dev/null", False),
    ("find . -maxdepth 1 -name '*.txt' | xargs cat >/dev/null", False),
)


def _guard_shell() -> str:
    cand = Path(sys.executable).parent / "guard-shell"
    return str(cand) if cand.exists() else (shutil.which("guard-shell") or "guard-shell")


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _answered(sock: str) -> int | None:
    """The server's count of answered requests; -1 for a guard whose server keeps none."""
    count = getattr(client, "answered", None)
    return -1 if count is None else count(sock)


def _pss_kib(pid: int) -> int:
    """PSS of a process and its children (the server's workers), KiB."""
    total = 0
    pids = [pid]
    try:
        pids += [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def _cpu_s(pid: int) -> float:
    """CPU seconds of a process and of its reaped children (the server's finished workers)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _setup(root: Path) -> dict[str, str]:
    tree = root / "tree"
    tree.mkdir()
    (root / "f.txt").write_text("one\ntwo\nthree\n")
    genv = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@x"}
    subprocess.run(["git", "init", "-q", str(root / "repo")], check=True, env=genv)
    (root / "repo" / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(root / "repo"), "add", "."], check=True, env=genv)
    subprocess.run(["git", "-C", str(root / "repo"), "commit", "-qm", "one"], check=True, env=genv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_TREE=str(tree), GUARD_AUDIT_LOG=str(root / "audit.jsonl"))
    return env


def run_load(shell: str, shells: int, commands: int, root: Path, env: dict[str, str]) -> dict[str, object]:
    """Run the load; returns the figures (also used by the bounded test)."""
    sock = client.socket_path(env)
    assert sock is not None, "no private runtime folder for the server socket"
    client.stop_server(sock)
    # the first analysed command starts the server; wait until it answers
    for _ in range(200):
        subprocess.run([shell, "-c", MIX[4][0]], env=env, cwd=root, capture_output=True)
        if client.server_pid(sock) and _answered(sock) is not None:
            before = _answered(sock) or 0
            subprocess.run([shell, "-c", MIX[4][0]], env=env, cwd=root, capture_output=True)
            if (_answered(sock) or 0) > before or _answered(sock) == -1:
                break
        time.sleep(0.1)
    server = client.server_pid(sock) or 0
    start_answered = _answered(sock) or 0
    start_cpu = _cpu_s(server)
    per_shell = max(1, commands // shells)
    added: list[float] = []
    bash_ms: list[float] = []
    failures: list[str] = []
    analysed = [0]
    lock = threading.Lock()
    mem = [_pss_kib(server)]
    done = [0]

    def agent(k: int) -> None:
        mine: list[float] = []
        base: list[float] = []
        bad: list[str] = []
        sent = 0
        for j in range(per_shell):
            cmd, refused = MIX[(k + j) % len(MIX)]
            order = ((REAL_SHELL, False), (shell, True)) if j % 2 else ((shell, True), (REAL_SHELL, False))
            took: dict[bool, float] = {}
            codes: dict[bool, int] = {}
            for prog, is_guard in order:
                t = time.perf_counter()
                p = subprocess.run([prog, "-c", cmd], env=env, cwd=root, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                took[is_guard] = time.perf_counter() - t
                codes[is_guard] = p.returncode
            want = 126 if refused else codes[False]
            if codes[True] != want:
                bad.append(f"{cmd!r}: guard-shell exited {codes[True]}, expected {want}")
            if plain_command is not None:
                plain = plain_command(["-c", cmd], {k.encode(): v.encode() for k, v in env.items()})
            else:
                plain = MIX.index((cmd, refused)) < 4
            if not plain:
                sent += 1
            mine.append((took[True] - took[False]) * 1000)
            base.append(took[False] * 1000)
            with lock:
                done[0] += 1
                if done[0] % 1000 == 0:
                    mem.append(_pss_kib(server))
        with lock:
            added.extend(mine)
            bash_ms.extend(base)
            failures.extend(bad)
            analysed[0] += sent

    t0 = time.perf_counter()
    threads = [threading.Thread(target=agent, args=(k,)) for k in range(shells)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    mem.append(_pss_kib(server))
    time.sleep(1.0)  # the last workers are reaped
    answered = (_answered(sock) or 0) - start_answered if _answered(sock) != -1 else -1
    cpu = _cpu_s(server) - start_cpu
    still = client.server_pid(sock) == server
    client.stop_server(sock)
    return {"added": added, "bash": bash_ms, "failures": failures, "analysed": analysed[0], "answered": answered,
            "mem": mem, "wall": wall, "server_cpu": cpu, "same_server": still, "server": server}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shells", type=int, default=64)
    ap.add_argument("--commands", type=int, default=10000)
    ap.add_argument("--shell", default=_guard_shell())
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="load-bench-"))
    try:
        env = _setup(root)
        print(f"guard-shell: {a.shell}\n{a.shells} shells x {a.commands // a.shells} commands, "
              f"{len(MIX)} kinds; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        r = run_load(a.shell, a.shells, a.commands, root, env)
        added: list[float] = r["added"]  # type: ignore[assignment]
        mem: list[int] = r["mem"]  # type: ignore[assignment]
        p50, p90, p99 = (_pct(added, q) for q in (0.5, 0.9, 0.99))
        print(f"commands: {len(added)} in {r['wall']:.0f} s ({len(added) * 2 / r['wall']:.0f} shell runs/s)")
        print(f"added latency per command (guard-shell - bash), ms: p50 {p50:.1f}  p90 {p90:.1f}  p99 {p99:.1f}"
              f"  (p99/p50 {p99 / p50 if p50 > 0 else float('inf'):.1f}; target <= 3)   mean "
              f"{statistics.mean(added):.1f}")
        print(f"bash -c alone, ms: p50 {_pct(r['bash'], 0.5):.1f}  p99 {_pct(r['bash'], 0.99):.1f}")  # type: ignore[arg-type]
        fallbacks = ("not counted by this guard's server" if r["answered"] == -1
                     else max(0, int(r["analysed"]) - int(r["answered"])))  # type: ignore[call-overload]
        print(f"failed commands: {len(r['failures'])}; analysed commands sent {r['analysed']}, answered by the "
              f"server {r['answered']} (fallbacks: {fallbacks}); one server throughout: {r['same_server']}")
        print(f"server CPU per answered request (server and workers): "
              f"{float(r['server_cpu']) * 1000 / max(1, int(r['answered'])):.1f} ms")  # type: ignore[arg-type]
        for f in r["failures"][:5]:  # type: ignore[index]
            print("  ", f)
        print(f"server memory (PSS, with workers): start {mem[0] / 1024:.1f} MiB, max {max(mem) / 1024:.1f} MiB, "
              f"end {mem[-1] / 1024:.1f} MiB; samples every 1000 commands: "
              + " ".join(f"{m / 1024:.0f}" for m in mem))
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
