"""Signals sent to guard-shell and to the command it runs: the reported status and what is
left running must be what bash gives for the same signal.

Matrix: SIGINT, SIGTERM, SIGKILL × sent to the shell process we started (the guard, or bash), to
the command's child (``sleep``), and to the whole process group (as a terminal does). The command is ``echo ready; sleep N; echo after`` so the
shell stays the parent of ``sleep``.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time

import pytest
import shellkit

_counter = itertools.count(1)


def _processes() -> list[tuple[int, int, str]]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2:
            rows.append((int(parts[0]), int(parts[1]), parts[2] if len(parts) > 2 else ""))
    return rows


def _descendant(pid: int, prefix: str) -> int:
    rows = _processes()
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        for c, pp, args in rows:
            if pp == p:
                seen.append((c, args))
                todo.append(c)
    return next(c for c, args in seen if args.startswith(prefix))


def _left_running(marker: str) -> list[int]:
    """The shell and command processes still running for this case (not the relay's own
    stderr copier, which only outlives the guard while an orphan still holds stderr)."""
    return [
        pid
        for pid, _, args in _processes()
        if marker in args and (args.startswith("sleep") or args.startswith(shellkit.REAL_SHELL))
    ]


def _case(program: str, sig: int, target: str, env: dict) -> tuple[int, int]:
    marker = f"7.{os.getpid() % 1000:03d}{next(_counter):03d}"
    p = subprocess.Popen(
        [program, "-c", f"echo ready; sleep {marker}; echo after"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        assert p.stdout.readline() == b"ready\n"
        time.sleep(0.2)
        if target == "group":  # what a terminal's ^C or a job-control kill does
            os.killpg(p.pid, sig)
        else:
            os.kill(p.pid if target == "guard" else _descendant(p.pid, "sleep"), sig)
        status = p.wait(timeout=30)
        left = _left_running(marker)
        return status, len(left)
    finally:
        for pid in _left_running(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.stdout.close()
        p.wait(timeout=30)


MATRIX = [
    (s, t) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL) for t in ("guard", "child", "group")
]


@pytest.mark.parametrize(("sig", "target"), MATRIX, ids=[f"{s.name}-{t}" for s, t in MATRIX])
def test_signal_matrix(checked_shell: str, sandbox, sig: signal.Signals, target: str, request) -> None:
    if (sig, target) == (signal.SIGKILL, "guard") and checked_shell_uses_relay() and not _has_setpriv():
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="without guard._spawn or util-linux's setpriv the relay cannot set PR_SET_PDEATHSIG, so the "
                "real shell outlives a SIGKILLed guard",
            )
        )
    env = shellkit.base_env(sandbox["home"], sandbox["tree"])
    bash = _case(shellkit.REAL_SHELL, sig, target, env)
    guarded = _case(checked_shell, sig, target, env)
    assert guarded[0] == bash[0], "reported status differs from bash's"
    assert guarded[1] <= bash[1], "processes left running that bash would not leave"


def _has_setpriv() -> bool:
    """The relay can set PR_SET_PDEATHSIG: guard._spawn was built, or util-linux's setpriv is there."""
    import importlib.util
    import os

    if importlib.util.find_spec("guard._spawn") is not None:
        return True
    return any(os.access(p, os.X_OK) for p in ("/usr/bin/setpriv", "/bin/setpriv"))


def checked_shell_uses_relay() -> bool:
    """The relay imports: the checked shell (stderr a pipe here) runs analysed commands under it."""
    try:
        from guard.act import relay
    except Exception:  # noqa: BLE001
        return False
    return hasattr(relay, "run")
