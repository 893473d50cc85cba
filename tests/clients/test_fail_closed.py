"""Fail-closed that holds, in each real client: installed with ``guard install HOST
--fail-closed`` (OpenCode: ``GUARD_FAIL=closed``), a guard that is missing, crashes, or hangs
past the limit refuses the agent's ``git push``: git never starts and the model is told why.
No host setting is trusted for this; the installed command itself answers."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.clients import harness
from tests.clients.harness import CLIENTS, Run, run_client

BROKEN = {
    "missing": None,
    "crashing": "#!/bin/sh\necho 'Traceback (most recent call last): boom' >&2\nexit 70\n",
    "slow": "#!/bin/sh\nsleep 60\n",
}


def _break_guard(how: str):
    """Replace the guard the hooks run (``harness`` installs them through ``HOME/bin/guard``)."""
    def setup(env: dict[str, str], home: Path, tree: Path) -> None:
        link = home / "bin" / "guard"
        link.unlink()
        if BROKEN[how] is not None:
            link.write_text(BROKEN[how])
            link.chmod(0o755)
    return setup


@pytest.fixture(scope="module")
def runs(shared_cache: Path):
    """Every selected case started at once on a pool (GUARD_CLIENTS_JOBS), each test waits for its own."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.clients.conftest import jobs

    pool = ThreadPoolExecutor(max_workers=jobs())
    futures: dict[tuple[str, str], Future[Run]] = {}
    for name in CLIENTS:
        if harness.installed(name)[0] is None:
            continue
        for how in BROKEN:
            futures[(name, how)] = pool.submit(run_client, CLIENTS[name], "hook-closed", "git push origin feature",
                                               shared_cache=shared_cache, setup=_break_guard(how))
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("how", sorted(BROKEN))
@pytest.mark.parametrize("name", sorted(CLIENTS))
def test_a_broken_guard_refuses(name: str, how: str, runs: dict[tuple[str, str], Future[Run]]) -> None:
    launcher, why = harness.installed(name)
    if launcher is None:
        pytest.skip(why)
    run = runs[(name, how)].result()
    assert run.script.called, run.explain()
    pushed = [argv for argv in run.git_commands() if argv[1:2] == ["push"]]
    assert not pushed, f"git push ran with guard {how}\n{run.explain()}"
    said = (run.result or "") + run.seen
    assert "guard could not check this command" in said or "guard could not check the command" in said, run.explain()
