"""The pre-check's plan file (``derived.remember_plan``): written as the same bytes by every
process for the same plan, left alone when in place, rewritten when missing or different."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from guard.ruleset import derived
from guard.system import planfile


@pytest.fixture(autouse=True)
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _plan_path() -> Path:
    return Path(planfile.plan_file((), None))


def test_the_plan_is_written_once_and_left_alone_while_in_place(tmp_path: Path) -> None:
    at = ((str(tmp_path / "rules.yaml"), 10, 10**18),)
    plan = planfile.Plan(frozenset({"ls", "cat"}), ("git",))
    derived.remember_plan((), None, at, plan)
    path = _plan_path()
    first = path.stat()
    data = path.read_bytes()
    name = at[0][0]
    assert data.decode() == f"guard-precheck {planfile.PLAN_FORMAT}\n10 {10**18} {name}\nprograms cat ls\nwatched git\n"
    derived.remember_plan((), None, at, plan)
    again = path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    path.unlink()
    derived.remember_plan((), None, at, plan)
    assert path.read_bytes() == data


def test_the_same_plan_is_the_same_bytes_whatever_objects_it_was_built_from(tmp_path: Path) -> None:
    """Another process's file for the same plan must look the same, or each side would rewrite
    it in turn."""
    name = str(tmp_path / "rules.yaml")
    at = ((name, 10, 10**18), (name, 11, 10**18))  # the same string twice: a reference
    plan = planfile.Plan(frozenset({sys.intern("git"), "ls"}), ("git",))
    derived.remember_plan((), None, at, plan)
    held = _plan_path().read_bytes()
    copy = tuple((str(tmp_path) + "/rules.yaml", size, mtime) for _, size, mtime in at)
    assert held == planfile.plan_text(copy, planfile.Plan(frozenset({"ls", "git"}), ("git",)))
    os.utime(_plan_path(), ns=(1, 1))
    derived._plan_bytes.clear()
    derived.remember_plan((), None, copy, planfile.Plan(frozenset({"git", "ls"}), ("git",)))
    assert _plan_path().stat().st_mtime_ns == 1  # in place: not rewritten
