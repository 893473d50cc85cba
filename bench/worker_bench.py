"""The analysis server's per-request cost, in CPU time: what one forked worker spends between
taking a connection and having its answer, for the analysed commands of the shell bench (a 90 KB
shell snapshot's among them).

    .venv/bin/python bench/worker_bench.py [--runs 15] [--baseline DIR] [--rules FILE] [--commands FILE]
        [--instructions]

For each command, one forked worker first serves it and tells the server what it had to read
afresh (a rule layering, a sourced snapshot), which the server learns: the state of a server that
answered the command before. Then each run forks a worker from that server, lets the worker touch
its pages the way it does before a request arrives (the tree's own ``_pre_touch``), then times (in
CPU time of the worker, which a busy machine does not inflate) the steps of a request: the check
that the package is unchanged, emptying the caches (``forget``), and ``guard_command`` on the
command; and the worker's whole CPU time (fork, its parent-death signal and pre-touch included),
which is what every request costs the machine; and the request's page faults (nearly all
copy-on-write, 2-3 us of kernel time each here), which the machine's load does not move. The
median of the runs is printed. ``--rules FILE`` runs the requests
with ``GUARD_RULES=FILE`` (an operator's layering); ``--commands FILE`` (a JSON object of name:
command) measures those commands instead. ``--baseline DIR`` (an older checkout) is
measured the same way in the same run, one after the other. ``--instructions`` counts instead
(valgrind's callgrind, ``PYTHONHASHSEED=0``) the user-space instructions of one request per
command, which do not move with the machine's load and repeat from run to run. Asserts nothing.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shell_bench import _snapshot  # noqa: E402 - the snapshot the shell bench sources

COMMANDS = {
    "parse-heavy": 'x=$(echo hi); for i in 1 2; do sh -c "echo $x $i" | cat >/dev/null; done; eval "true"',
    "git status": "git status",
    "five git": "git status; git log --oneline -3; git diff --stat; git branch -a; git remote -v",
    "python -c": "python3 -c 'import os, subprocess; print(os.getcwd())'",
    "git push": "git push origin HEAD",
}
# Claude Code's wrapper around a command, sourcing a 90 KB shell snapshot (shell_bench's)
SNAPSHOT = "source %s && eval 'git status --short' < /dev/null && pwd -P >| %s/cwd-file"


def measure(repo: str, runs: int, rules: str | None, instructions: bool = False,
            only: str | None = None) -> dict[str, list[float]]:
    """In this process (a child of main): every figure for the guard in ``repo``; with
    ``instructions`` (run under callgrind), one worker per command whose request runs inside
    ``functools.reduce`` (the one function callgrind collects in), and its pid."""
    sys.path.insert(0, repo)
    import time

    from guard.serve import server
    from guard.shell import client
    from guard.shell import main as shell

    server.warm_up()
    files = server.code_files(client.package_dir())
    scratch = tempfile.mkdtemp(prefix="worker-bench-")
    log = os.path.join(scratch, "audit.jsonl")  # refusals are logged
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "GUARD_TREE": "/workspace",
           "GUARD_AUDIT_LOG": log}
    if rules:
        env["GUARD_RULES"] = rules
    commands = {**COMMANDS, "snapshot 90K": SNAPSHOT % (_snapshot(Path(scratch)), scratch)}
    if only:
        commands = json.loads(Path(only).read_text())
    stamp = server.code_stamp(files)
    watch = Watched(server, files, stamp)
    out: dict[str, list[float]] = {}
    for name, command in commands.items():
        _learn_once(server, shell, command, env)
        watch.renew()  # as the server does after learning a layering
        if instructions:
            out[name] = [_counted(server, shell, watch, command, env)]
            continue
        stamp_ms, forget_ms, decide_ms, whole_ms, faults = [], [], [], [], []
        for _ in range(runs):
            r, w = os.pipe()
            mine = watch.before_fork()
            parent = os.getpid()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(r)
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 2)
                    if hasattr(server, "_die_with"):
                        server._die_with(parent)  # as its workers do first: the parent-death signal
                    check = watch.check(mine)  # the package check this tree's workers run
                    quiet, _ = socket.socketpair()  # no caller waits: the whole pre-touch runs
                    server._pre_touch(quiet)  # the tree's own, as its workers run it
                    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    t0 = time.process_time()
                    check()
                    t1 = time.process_time()
                    server.forget()
                    t2 = time.process_time()
                    shell.guard_command(command, "/workspace/app", shell.parse_args(["-c", command]), env)
                    t3 = time.process_time()
                    f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    os.write(w, json.dumps([t1 - t0, t2 - t1, t3 - t2, f1 - f0]).encode())
                finally:
                    os._exit(0)
            os.close(w)
            watch.after_fork(mine)
            data = _read_all(r)
            os.close(r)
            _, _, usage = os.wait4(pid, 0)
            a, b, c, nf = json.loads(data)
            whole_ms.append((usage.ru_utime + usage.ru_stime) * 1e3)
            stamp_ms.append(a * 1e3)
            forget_ms.append(b * 1e3)
            decide_ms.append(c * 1e3)
            faults.append(nf)
        out[name] = [statistics.median(stamp_ms), statistics.median(forget_ms), statistics.median(decide_ms),
                     statistics.median(whole_ms), statistics.median(faults)]
    return out


class Watched:
    """The server's watch over the package and rule files, where the tree has one
    (``server._rewatch``): what it vouches for is handed to each forked worker as the server does."""

    def __init__(self, server, files: list[str], stamp: tuple) -> None:  # type: ignore[no-untyped-def]
        self.server, self.files, self.stamp = server, files, stamp
        self.rewatch = getattr(server, "_rewatch", None)
        self.vouched = self.rewatch(files, stamp) if self.rewatch else None

    def renew(self) -> None:
        if self.vouched is not None and self.rewatch is not None:
            self.vouched.watch.close()
            self.vouched = self.rewatch(self.files, self.stamp)

    def before_fork(self):  # type: ignore[no-untyped-def]
        return self.vouched.watch.for_worker() if self.vouched is not None else None

    def after_fork(self, mine) -> None:  # type: ignore[no-untyped-def]
        if mine is not None:
            os.close(mine[1])

    def check(self, mine):  # type: ignore[no-untyped-def]
        """In the child: the package check its worker would run."""
        if mine is None:
            return lambda: self.server.code_stamp(self.files) == self.stamp
        return self.server._package_check(self.files, self.stamp, self.vouched.for_worker(mine[0]))


def _counted(server, shell, watch: Watched, command: str, env: dict[str, str]) -> int:  # type: ignore[no-untyped-def]
    """A worker whose request (package check, forget, decision) runs inside functools.reduce;
    its pid, which names its callgrind file."""
    import functools

    mine = watch.before_fork()
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            check = watch.check(mine)
            quiet, _ = socket.socketpair()
            server._pre_touch(quiet)

            def request(_a: int, _b: int) -> int:
                check()
                server.forget()
                shell.guard_command(command, "/workspace/app", shell.parse_args(["-c", command]), env)
                return 0

            functools.reduce(request, [0, 0])
        finally:
            os._exit(0)
    watch.after_fork(mine)
    os.waitpid(pid, 0)
    return pid


def _callgrind_totals(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


def _learn_once(server, shell, command: str, env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """One request in a forked worker that tells the server what it read afresh (the rule
    layering, a sourced snapshot), and the server learning it, with the tree's own functions: so
    the timed workers hold what a server that served this command before holds. A tree without
    that learning gets the request only (its disk caches written)."""
    tell = getattr(server, "_tell_afresh", None) or getattr(server, "_tell_layerings", None)
    learn = getattr(server, "_learn_afresh", None) or getattr(server, "_take_layerings", None)
    has_channel = hasattr(server, "_learn") and tell is not None and learn is not None
    if has_channel:
        server._learn[:] = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for end in server._learn:
            end.setblocking(False)
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            server.forget()
            shell.guard_command(command, "/workspace/app", shell.parse_args(["-c", command]), env)
            if has_channel:
                try:
                    tell(command)  # the command served: a host snapshot it sourced is named too
                except TypeError:  # an older tree's, which takes none
                    tell()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    if has_channel:
        learn({})
        for end in server._learn:
            end.close()
        server._learn[:] = []


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--baseline", default=None, help="another guard checkout, measured the same way in this run")
    ap.add_argument("--rules", default=None, help="GUARD_RULES for the requests (an operator's rule file)")
    ap.add_argument("--commands", default=None, help="a JSON object of name: command to measure instead of the six")
    ap.add_argument("--instructions", action="store_true",
                    help="instead: instructions of one request per command, counted by valgrind's callgrind")
    ap.add_argument("--repo", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.json:
        print(json.dumps(measure(ns.repo, ns.runs, ns.rules, ns.instructions, ns.commands)))
        return
    if ns.instructions:
        _instructions(ns)
        return

    def child(repo: str) -> dict[str, list[float]]:
        compileall.compile_dir(str(Path(repo) / "guard"), quiet=1)  # a start-up is not a compile
        args = [sys.executable, __file__, "--json", "--repo", repo, "--runs", str(ns.runs)]
        args += ["--rules", ns.rules] if ns.rules else []
        args += ["--commands", ns.commands] if ns.commands else []
        done = subprocess.run(args, capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    print(f"worker CPU per request, median of {ns.runs} forked workers; load average {os.getloadavg()[0]:.1f}"
          + (f"; GUARD_RULES={ns.rules}" if ns.rules else ""))
    trees = [("this tree", str(REPO))] + ([("baseline", str(Path(ns.baseline).resolve()))] if ns.baseline else [])
    results = [(label, child(repo)) for label, repo in trees]
    print("request = package check + forget + decision; worker = all its CPU, fork and pre-touch included;\n"
          "faults = the request's page faults (copy-on-write, mostly), which do not move with the load")
    print(f"{'command':<14}" + "".join(f"{label + ' ms: request = check+forget+decide; worker; faults':>66}"
                                       for label, _ in results))
    names = list(results[0][1])
    for name in names:
        cells = []
        for _, r in results:
            s, f, d, whole, nf = r[name]
            cells.append(f"{s + f + d:6.2f} = {s:.2f} + {f:.2f} + {d:.2f}; {whole:6.2f}; {nf:5.0f}")
        print(f"{name:<14}" + "".join(f"{c:>66}" for c in cells))
    if len(results) == 2:
        mine, base = results[0][1], results[1][1]
        ratios = [sum(mine[n][:3]) / sum(base[n][:3]) for n in names]
        wratios = [mine[n][3] / base[n][3] for n in names]
        print(f"this tree / baseline: request {min(ratios):.2f}x to {max(ratios):.2f}x, "
              f"worker {min(wratios):.2f}x to {max(wratios):.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f} after")


def _instructions(ns: argparse.Namespace) -> None:
    """Each tree's ``measure`` under callgrind, collecting only inside functools.reduce (the
    request): instructions per request, user space only (the kernel's share is not counted)."""
    import shutil

    if not shutil.which("valgrind"):
        raise SystemExit("worker_bench: --instructions needs valgrind")
    trees = [("this tree", str(REPO))] + ([("baseline", str(Path(ns.baseline).resolve()))] if ns.baseline else [])
    results = []
    for label, repo in trees:
        compileall.compile_dir(str(Path(repo) / "guard"), quiet=1)
        out = Path(tempfile.mkdtemp(prefix="worker-bench-cg-"))
        args = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=functools_reduce",
                f"--callgrind-out-file={out}/cg.%p", sys.executable, __file__, "--json", "--instructions",
                "--repo", repo, "--runs", "1"] + (["--rules", ns.rules] if ns.rules else [])
        args += ["--commands", ns.commands] if ns.commands else []
        # one string hash seed for both trees: a count then repeats to the instruction, run to run
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
        pids = json.loads(done.stdout.strip().splitlines()[-1])
        results.append((label, {name: _callgrind_totals(out / f"cg.{p[0]}") for name, p in pids.items()}))
        shutil.rmtree(out, ignore_errors=True)
    print("instructions per request (package check + forget + decision, user space), one forked worker each"
          + (f"; GUARD_RULES={ns.rules}" if ns.rules else ""))
    print(f"{'command':<14}" + "".join(f"{label:>14}" for label, _ in results) + ("       ratio" if len(results) == 2 else ""))
    for name in results[0][1]:
        cells = [r[name] for _, r in results]
        ratio = f"{cells[0] / cells[1]:11.2f}x" if len(cells) == 2 and cells[1] else ""
        print(f"{name:<14}" + "".join(f"{c:>14,}" for c in cells) + ratio)


if __name__ == "__main__":
    main()
