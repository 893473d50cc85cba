"""The loader's side of the analysis server's watch: a layering the server vouches for
(``load.trust``) is taken on its stamp without looking at its files only while the watch is
quiet, and ``settle`` tells a set in effect from an older good one kept for comparison."""

from __future__ import annotations

import os
import posix
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import rule_examples
from guard.ruleset import load
from guard.shell import precheck
from guard.system import planfile

RULE = ("rules:\n  - id: no-%s\n    category: publish\n"
        "    message: \"Refused: {what}. It publishes; use the tools.\"\n"
        "    match: {program: %s}\n")


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    load.forget()
    yield
    load.forget()


def _ids(f: Path) -> set[str]:
    rs = load.load_for(Context(cwd="/", rule_paths=(str(f),), config_path=None), rule_examples)
    return {r.id for r in rs.rules}


def _settled(tmp_path: Path, name: str) -> Path:
    f = tmp_path / "mine.yaml"
    f.write_text(RULE % (name, name))
    old = f.stat().st_mtime_ns - 3600 * 10**9
    os.utime(f, ns=(old, old))
    return f


def test_a_trusted_layering_is_taken_on_its_stamp_only_while_the_watch_is_quiet(tmp_path: Path) -> None:
    f = _settled(tmp_path, "frob")
    key = ((str(f),), None)
    assert load.settle(*key, rule_examples)
    quiet = [True]
    load.trust({key}, lambda: quiet[0])
    f.write_text(RULE % ("frobnicate", "frobnicate"))  # a new stamp: only a look at the file sees it
    load.forget(keep_unchanged=True)
    assert "no-frob" in _ids(f)  # the watch says nothing changed: the files are not looked at
    quiet[0] = False
    load.forget(keep_unchanged=True)
    assert "no-frobnicate" in _ids(f) and "no-frob" not in _ids(f)


def test_trust_ends_with_a_full_forget_and_covers_only_the_layerings_named(tmp_path: Path) -> None:
    f = _settled(tmp_path, "frob")
    key = ((str(f),), None)
    assert load.settle(*key, rule_examples)
    load.trust({((), None)}, lambda: True)  # another layering
    f.write_text(RULE % ("frobnicate", "frobnicate"))
    load.forget(keep_unchanged=True)
    assert "no-frobnicate" in _ids(f)
    load.trust({key}, lambda: True)
    load.forget()
    f.write_text(RULE % ("frabjous", "frabjous"))
    assert "no-frabjous" in _ids(f)


def test_a_trusted_layerings_precheck_plan_comes_from_memory_only_while_the_watch_is_quiet(tmp_path: Path) -> None:
    """A server worker's pre-check takes the plan of a layering the watch vouches for from memory,
    reading neither the plan file nor the rule files' stamp; once the watch has fired, the cached
    plan is checked as in guard-shell."""
    f = _settled(tmp_path, "frob")
    key = ((str(f),), None)
    env = {"GUARD_RULES": str(f)}
    assert load.settle(*key, rule_examples)
    os.unlink(planfile.plan_file(*key))  # only a plan held in memory is found now
    assert planfile.current_plan(env) is None
    quiet = [True]
    load.trust({key}, lambda: quiet[0])
    plan = planfile.current_plan(env)
    assert plan is not None and "ls" in plan.programs and "frob" not in plan.programs
    assert precheck.trivially_allowed("ls -la", env=env) and not precheck.trivially_allowed("frob x", env=env)
    assert planfile.current_plan({"GUARD_RULES": str(f), "GUARD_CONFIG": str(f)}) is None  # another layering
    quiet[0] = False
    assert planfile.current_plan(env) is None and not precheck.trivially_allowed("ls -la", env=env)
    load.trust({key}, lambda: True)
    load.forget()  # a full forget ends the trust
    assert planfile.current_plan(env) is None


def test_a_trusted_layering_is_loaded_without_opening_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the watch is quiet a worker neither stamps the rule files nor reads the plan file back
    (the server left it for that stamp); once the watch has fired, both are looked at again."""
    f = _settled(tmp_path, "frob")
    key = ((str(f),), None)
    assert load.settle(*key, rule_examples)
    quiet = [True]
    load.trust({key}, lambda: quiet[0])
    load.forget(keep_unchanged=True)
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    monkeypatch.setattr(posix, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    monkeypatch.setattr("builtins.open", None)  # nothing may open a file the buffered way either
    assert "no-frob" in _ids(f) and opened == []
    monkeypatch.undo()
    quiet[0] = False
    load.forget(keep_unchanged=True)
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    monkeypatch.setattr(posix, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    # the plan file is opened by its name in its (checked) folder
    assert "no-frob" in _ids(f) and os.path.basename(planfile.plan_file(*key)) in opened


def test_settle_is_false_for_broken_files_and_afresh_reads_an_edit_that_kept_the_stamp(tmp_path: Path) -> None:
    f = _settled(tmp_path, "frob")
    key = ((str(f),), None)
    assert load.settle(*key, rule_examples)
    old = f.stat().st_mtime_ns
    f.write_text(RULE % ("frab", "frab"))  # the same size, the mtime put back: the stamp holds
    os.utime(f, ns=(old, old))
    load.forget(keep_unchanged=True)
    assert "no-frob" in _ids(f)  # on its stamp
    load.forget(keep_unchanged=True)
    assert load.settle(*key, rule_examples, afresh=True)
    assert "no-frab" in _ids(f)
    f.write_text("rules: [ {id: x, match: {program: 3}\n")
    load.forget(keep_unchanged=True)
    assert not load.settle(*key, rule_examples)
