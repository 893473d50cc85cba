"""Shared test helpers: where the repository and the shared data live."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Frozen records refuse assignment in the tests, and in the guards they start with this
# environment and those guards' analysis servers (guard/record.py): a record changed after it is
# built then fails a test instead of passing unseen. Set before any test module imports guard.
os.environ["GUARD_CHECK_RECORDS"] = "1"

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GUARD_SHARED") or REPO.parent / "shared")
BIN = Path(sys.executable).parent


def pytest_configure(config: pytest.Config) -> None:
    """Run the tests with SIGINT and SIGQUIT at their defaults, as a terminal gives them.

    A runner started as a background job of a non-interactive shell (a CI script's `cmd &`) has
    both ignored, and every process a test starts would inherit that: the Ctrl-C tests would
    then see guard keep an ignored SIGINT ignored, as bash does, instead of what they test.
    Also names the mark of tests that assign to frozen records on purpose (``assigns_records``)."""
    config.addinivalue_line("markers", "assigns_records: the test assigns to frozen records on purpose")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "corpus").is_dir():
        pytest.skip("shared corpus not available beside the checkout")
    return SHARED


def guard_bin(name: str = "guard") -> str:
    cand = BIN / name
    return str(cand) if cand.exists() else name


@pytest.fixture(scope="session", autouse=True)
def _stop_analysis_servers() -> Iterator[None]:
    """guard-shell runs start this checkout's analysis server (guard.serve); stop it when the
    session ends so no test leaves a process behind."""
    yield
    from guard.shell import client

    for env in (os.environ, {}):
        path = client.socket_path(env)
        if path:
            client.stop_server(path)


@pytest.fixture(autouse=True)
def _records_stay_frozen(request: pytest.FixtureRequest) -> Iterator[None]:
    """No frozen record was assigned to during the test, even where a handler that falls back on
    any error (the parse stage's, an inline analyser's) swallowed the refusal."""
    from guard import record

    assert record.CHECKED, "the tests run with GUARD_CHECK_RECORDS=1 (set above, before guard is imported)"
    del record.REFUSED[:]
    yield
    if request.node.get_closest_marker("assigns_records") is None:
        assert not record.REFUSED, f"frozen records assigned to: {record.REFUSED[:5]}"


@pytest.fixture
def isolated_rules(tmp_path, monkeypatch):
    """A private rule cache and no rule-related environment: each test compiles what it writes."""
    from guard.ruleset import load as loader

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("GUARD_RULES", "GUARD_CONFIG", "GUARD_TREE", "GUARD_ROLE", "GUARD_ROUTE"):
        monkeypatch.delenv(name, raising=False)
    loader._said.clear()
    monkeypatch.setattr(loader, "_memo", {})
    monkeypatch.setattr(loader, "_warned", False)
    monkeypatch.setattr(loader, "_loaded", {})
    monkeypatch.setattr(loader, "_stamped", {})
    monkeypatch.setattr(loader, "_reused", set())


# The test files that start many processes, servers or real tools, or compile rule sets again and
# again: most took 5 s or more of a full run on this project's 2-CPU machine, and the lane without
# them must stay under 2 minutes there (1 min 37 s when they were last added). `pytest -m 'not slow'` leaves them out, a lane for
# the edit-test loop; `pytest` alone (the README's command, which CI runs) runs everything.
SLOW_FILES = frozenset({
    "tests/act/test_annotate_fixtures.py",
    "tests/act/test_annotate_prefilter.py",
    "tests/act/test_annotate_relay.py",
    "tests/act/test_relay_bulk.py",
    "tests/audit/test_audit_concurrency.py",
    "tests/audit/test_audit_engines.py",
    "tests/audit/test_rules_diff.py",
    "tests/cli/test_check_stream.py",
    "tests/cli/test_explain.py",
    "tests/cli/test_fuzz.py",
    "tests/cli/test_rules_authoring.py",
    "tests/cli/test_rules_guide.py",
    "tests/clients/test_conformance.py",
    "tests/clients/test_doctor.py",
    "tests/clients/test_fail_closed.py",
    "tests/hosts/test_wrappers.py",
    "tests/integration/test_annotate_gitserver.py",
    "tests/integration/test_annotate_real_tools.py",
    "tests/integration/test_annotate_replay.py",
    "tests/integration/test_annotate_tools.py",
    "tests/parse/test_budgets.py",
    "tests/parse/test_plain.py",
    "tests/policy/test_actions.py",
    "tests/resolve/inline/test_dialects_real.py",
    "tests/resolve/inline/test_inline_python_gate.py",
    "tests/ruleset/test_authoring_lint.py",
    "tests/ruleset/test_catalogue.py",
    "tests/ruleset/test_catalogue_real.py",
    "tests/ruleset/test_loader.py",
    "tests/ruleset/test_loader_fleet.py",
    "tests/ruleset/test_programs.py",
    "tests/ruleset/test_runners_real.py",
    "tests/serve/test_load.py",
    "tests/serve/test_server.py",
    "tests/shell/test_fail_closed.py",
    "tests/shell/test_launchers.py",
    "tests/shell/test_shell_differential.py",
    "tests/shell/test_shell_interactive.py",
    "tests/shell/test_shell_run.py",
    "tests/shell/test_shell_signals.py",
    "tests/shell/test_special_paths.py",
    "tests/shell/test_stdin_stream.py",
    "tests/test_packaging.py",
    "tests/test_record.py",
    "tests/text/test_hostile_outputs.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent.parent
    for item in items:
        if Path(str(item.fspath)).resolve().relative_to(root).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
