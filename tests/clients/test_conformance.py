"""guard in front of the published agent clients, proven by driving them.

Each client (pinned in versions.json, installed by .ci/install-clients) talks to a scripted model
on 127.0.0.1 in its own wire protocol: turn 1 calls the client's shell tool with the command
under test, turn 2 records the tool result the client sends back. For every client and every
placement guard documents for it (``harness.placements``):

- refused commands (a publish, a mutation through an indirection, a token hunt) never start git
  (GIT_TRACE2, set where no shell start-up file reaches), the refusal reaches the model, and the
  audit has one line naming the client, its session and the command the agent wrote;
- allowed commands (an ordinary one, git work in temp space) give the model the same tool result
  as the client without guard (per-run ids normalised);
- a credential failure against a loopback git server that demands credentials reaches the model
  with guard's explanation.

A client that is not installed skips with the reason; an installed one never skips.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.clients import harness
from tests.clients.harness import CLIENTS, Client, Run, normalised, run_client

# temp space as $TMPDIR (outside the tree); no $(…), which Gemini CLI refuses to run at all
TEMP = 'mkdir -p "$TMPDIR/work" && cd "$TMPDIR/work" && '
TEMP_GIT = TEMP + 'git init -q && git commit -q --allow-empty -m first && git log --format=%s && git rev-list --count HEAD'

# name -> (command, refused tool or None)
CASES: dict[str, tuple[str, str | None]] = {
    "publish": ("git push origin feature", "git_push"),
    "mutate": ("G=git; $G commit -qam wip", "git_commit"),
    "token": ("grep -rn ghp_ ~ 2>/dev/null | head -3", None),
    "ordinary": ("ls && wc -l < README.md", ""),
    "temp-git": (TEMP_GIT, ""),
    "credential": (TEMP + "git clone -q {private}", ""),
}
REFUSED = ("publish", "mutate", "token")


def _params() -> list[object]:
    out = []
    for name, client in CLIENTS.items():
        for placement in harness.placements(client):
            for case in CASES:
                out.append(pytest.param(name, placement, case, id=f"{name}-{placement}-{case}"))
    return out


def _client(name: str) -> Client:
    launcher, why = harness.installed(name)
    if launcher is None:
        pytest.skip(why)
    return CLIENTS[name]


def _command(case: str, git_server: object) -> str:
    command = CASES[case][0]
    if "{private}" in command:
        command = command.format(private=git_server.url("private.git"))  # type: ignore[attr-defined]
    return command


class Runs:
    """Every selected conversation, started on a pool of GUARD_CLIENTS_JOBS at once."""

    def __init__(self, git_server: object, shared_cache: Path) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from tests.clients.conftest import SELECTED, jobs

        self.pool = ThreadPoolExecutor(max_workers=jobs())
        self.futures: dict[tuple[str, str, str], Future[Run]] = {}
        self.shared_cache = shared_cache
        # the clients unpack and cache themselves on their first start (OpenCode also installs its
        # plugin's dependencies when it has one): one run of each first, alone, with the hooks
        for name in dict.fromkeys(n for n, _, _ in SELECTED):
            if harness.installed(name)[0] is not None:
                placement = "hook" if (name, "hook", "ordinary") in SELECTED else "none"
                self.get(name, placement, "ordinary", _command("ordinary", git_server)).result()
        for name, placement, case in SELECTED:
            if harness.installed(name)[0] is None:
                continue
            command = _command(case, git_server)
            self.get(name, placement, case, command)
            if case not in REFUSED:
                self.get(name, "none", case, command)

    def get(self, name: str, placement: str, case: str, command: str) -> Future[Run]:
        key = (name, placement, case)
        if key not in self.futures:
            self.futures[key] = self.pool.submit(run_client, CLIENTS[name], placement, command,
                                                 shared_cache=self.shared_cache)
        return self.futures[key]


@pytest.fixture(scope="session")
def runs(git_server: object, shared_cache: Path):
    r = Runs(git_server, shared_cache)
    yield r
    r.pool.shutdown(wait=True, cancel_futures=True)


def _audit_refusals(run: Run) -> list[dict[str, object]]:
    return [r for r in run.audit if r.get("kind") == "refusal"]


@pytest.mark.parametrize(("name", "placement", "case"), _params())
def test_client(name: str, placement: str, case: str, git_server: object, runs: Runs) -> None:
    client = _client(name)
    command = _command(case, git_server)
    run = runs.get(name, placement, case, command).result()
    assert run.script.called, f"the client never called its shell tool\n{run.explain()}"
    assert run.result is not None, f"the tool result never reached the model\n{run.explain()}"
    tool = CASES[case][1]
    if case in REFUSED:
        # refused: git never started, the model was told why, one audit line names it all
        started = [argv for argv in run.git_commands() if argv[1:2] in (["push"], ["commit"])]
        assert not started, f"git ran: {started}\n{run.explain()}"
        assert "Refused:" in run.result, run.explain()
        assert "(via eval)" not in run.result, run.explain()
        if tool:
            assert f"{tool}(" in run.result, run.explain()
        refusals = _audit_refusals(run)
        assert len(refusals) == 1, run.explain()
        rec = refusals[0]
        assert rec["command"] == command, run.explain()
        assert rec["client"] == client.audit_name, run.explain()
        if placement == "hook" or client.session_in_shell:
            assert rec["session"], run.explain()
        return
    assert not _audit_refusals(run), run.explain()
    base = runs.get(name, "none", case, command).result()
    assert base.result is not None, f"without guard: {base.explain()}"
    if case == "credential":
        assert "terminal prompts disabled" in run.result, run.explain()
        # the explanation reaches the model: in the result (shell placement, OpenCode, Copilot) or
        # beside it, where the host puts a post-tool hook's context
        assert "[guard] git could not authenticate" in run.seen, run.explain() + "\n" + run.seen[-3000:]
        assert "git_clone(" in run.seen
        assert "[guard]" not in base.result
        return
    if case == "temp-git":  # git really ran: the trace that proves refusals did not is live
        assert any(argv[1:2] == ["init"] for argv in run.git_commands()), run.explain()
    assert normalised(client, run) == normalised(client, base), run.explain()


@pytest.fixture(scope="session")
def git_server(tmp_path_factory: pytest.TempPathFactory):
    from tests.integration.test_annotate_gitserver import GitServer, git_backend, populate

    if git_backend() is None:
        pytest.skip("git http-backend not available")
    root = tmp_path_factory.mktemp("gitsrv")
    populate(root)
    with GitServer(root) as srv:
        yield srv


def test_the_pins_are_what_is_installed() -> None:
    """An installed client is the pinned version, unless the run asked for the newest."""
    if os.environ.get("GUARD_CLIENTS_LATEST") == "1":
        pytest.skip("GUARD_CLIENTS_LATEST=1: the newest versions are installed on purpose")
    for name, pin in harness.PINS.items():
        launcher, version = harness.installed(name)
        if launcher is not None:
            assert version == pin["version"], f"{name}: {version} installed, {pin['version']} pinned"
