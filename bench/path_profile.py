"""Where an analysed command's time goes in guard-shell, step by step (medians of RUNS).

    python bench/path_profile.py [--runs 30] [--shell PATH]

Each step is timed on its own, the way guard-shell runs it, against the running analysis server
(started first): the interpreter start with guard-shell's own flags (the floor), importing the
launcher, the client and ``_socket``, connecting, checking the listener (``SO_PEERCRED`` and
three ``/proc`` stats), waiting for a worker to take the connection (``READY``), sending the
request and reading the reply (the worker's analysis). guard-shell imports ``guard.shell.decide``
(``run_served`` runs the command on the reply, without ``guard.shell.main``) and the relay while
the worker analyses, so only the longer of the two counts; then the relay:
running ``bash -c true`` under it (its start of the child included) against running it directly. The sum
along that critical path is printed beside the whole ``guard-shell -c`` against ``bash -c`` and the
floor, the three alternating, each guard-shell run GAP after the run before it (as an agent's
commands come, after its turn: back to back, each would meet the preparation of the worker that
replaces the last one's).
The parse-heavy command of the issue is the one asked.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = 'x=$(echo hi); for i in 1 2; do sh -c "echo $x $i" | cat >/dev/null; done; eval "true"'
GAP = 0.1  # seconds before each whole guard-shell run


def _guard_shell() -> str:
    return str(Path(sys.executable).parent / "guard-shell")


def _med(f, runs: int) -> float:  # type: ignore[no-untyped-def]
    xs = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        xs.append(time.perf_counter() - t)
    return statistics.median(xs) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--shell", default=_guard_shell())
    a = ap.parse_args()
    with open(a.shell, "rb") as fh:
        interp = fh.readline().decode().strip()[2:].split()
    root = Path(tempfile.mkdtemp(prefix="path-profile-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_TREE=str(root / "tree"), GUARD_AUDIT_LOG=str(root / "audit.jsonl"))
    os.environ.update(env)
    from guard.shell import client, wire
    sock = client.socket_path(env)
    assert sock
    subprocess.run([a.shell, "-c", COMMAND], env=env, capture_output=True)
    for _ in range(100):
        if client.server_pid(sock):
            break
        time.sleep(0.1)
    time.sleep(2)
    runs = a.runs
    rows: list[tuple[str, float]] = []

    def spawned(argv: list[str]) -> float:
        return _med(lambda: subprocess.run(argv, env=env, cwd=root, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL), runs)

    floor = spawned([*interp, "-c", "pass"])
    rows.append(("interpreter start (the floor)", floor))
    site = _site(interp[0])

    def importing(modules: str | None) -> list[str]:
        code = "pass" if modules is None else f"import sys; sys.path.insert(0, {site!r}); import {modules}"
        return [*interp, "-c", code]

    def added(more: list[str], than: list[str]) -> float:
        """The median of ``more``'s time less ``than``'s, the two run one right after the other
        (two medians taken apart drift apart by more than a small module costs)."""
        diffs = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(than, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t1 = time.perf_counter()
            subprocess.run(more, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            diffs.append(time.perf_counter() - t1 - (t1 - t0))
        return statistics.median(diffs) * 1000

    # guard-shell's order: the launcher sends the request first (posix, _socket, the client),
    # then imports guard.shell.main and the relay while the worker analyses
    first, second = "guard.shell.launch, guard.shell.client, _socket", "guard.shell.decide, guard.act.relay"
    launcher = added(importing("guard.shell.launch"), importing(None))
    rows.append(("import the launcher (the plain path's cost)", launcher))
    client_cost = added(importing(first), importing("guard.shell.launch"))
    rows.append(("import the client and _socket", client_cost))
    late = added(importing(f"{first}, {second}"), importing(first))
    import _socket

    argv = [os.fsencode(x) for x in (a.shell, "-c", COMMAND)]
    request = wire.encode_request(argv[1:], os.fsencode(str(root)), dict(os.environb))
    steps = {"connect": [], "peer check": [], "worker takes it (READY)": [], "analysis and reply": []}
    for _ in range(runs):
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        t0 = time.perf_counter()
        s.connect(sock)
        t1 = time.perf_counter()
        ok = client.trusted_peer(s)
        t2 = time.perf_counter()
        ready = s.recv(1)
        t3 = time.perf_counter()
        s.sendall(request)
        header = wire.recv_exact(s, 4)
        wire.recv_exact(s, wire.frame_length(header))
        t4 = time.perf_counter()
        s.close()
        assert ok and ready == wire.READY
        for k, v in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            steps[k].append(v * 1000)
        time.sleep(0.02)  # let the server fork the replacement (POOL workers: the next is ready)
    for k, v in steps.items():
        rows.append((k, statistics.median(v)))
    analysis = statistics.median(steps["analysis and reply"])
    rows.append(("import guard.shell.decide and the relay, meanwhile", late))
    rows.append(("  so the reply is waited for another", max(0.0, analysis - late)))
    from guard.act import relay

    under = _med(lambda: relay.run(["/bin/bash", "-c", "true"], dict(os.environ, GUARD_ANNOTATING="")), runs)
    plain = _med(lambda: subprocess.run(["/bin/bash", "-c", "true"]), runs)
    rows.append(("bash -c true spawned by Python, waited for", plain))
    rows.append(("the same under the relay (its spawn, pipes, threads)", under))
    rows.append(("  of which the relay's own start", under - plain))
    sent = launcher + client_cost + sum(statistics.median(steps[k]) for k in
                                                       ("connect", "peer check", "worker takes it (READY)"))
    rows.append(("the steps' critical path: send, the longer of analysis and imports, relay start",
                 sent + max(analysis, late) + under - plain))
    # the whole command, alternating with bash and the floor (medians taken apart drift apart by
    # more than the difference), each guard-shell run GAP after the last run: commands follow
    # an agent's turn, not each other, and a worker is prepared after the command it follows
    wf, wb, wg = [], [], []
    for _ in range(runs):
        for argv, out in (([*interp, "-c", "pass"], wf), (["/bin/bash", "-c", COMMAND], wb)):
            out.append(_med(lambda argv=argv: subprocess.run(argv, env=env, cwd=root, stdout=subprocess.DEVNULL,
                                                             stderr=subprocess.DEVNULL), 1))
        time.sleep(GAP)
        wg.append(_med(lambda: subprocess.run([a.shell, "-c", COMMAND], env=env, cwd=root, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL), 1))
    rows.append((f"guard-shell -c (whole, {GAP * 1000:.0f} ms after the last run)", statistics.median(wg)))
    rows.append(("bash -c (whole)", statistics.median(wb)))
    rows.append(("over bash plus the floor (median of each run's, the floor in the same runs)",
                 statistics.median(g - b - f for g, b, f in zip(wg, wb, wf, strict=True))))
    print(f"analysed-path profile, {runs} runs each, medians; load average {os.getloadavg()[0]:.1f}")
    for name, ms in rows:
        print(f"  {name:<80}{ms:>8.2f} ms")
    client.stop_server(sock)


def _site(python: str) -> str:
    prefix = python.rpartition("/")[0].rpartition("/")[0]
    return f"{prefix}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


if __name__ == "__main__":
    main()
