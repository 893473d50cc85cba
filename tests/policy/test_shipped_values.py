"""Shipped rules name only git subcommands that exist: a misspelt one (``request-pull-x``) can never
match, and lint cannot know git's command list. Checked against the installed git's own lists."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
# git subcommands that other projects install as git-NAME programs
THIRD_PARTY = {"lfs", "annex"}
LISTS = ("main", "others", "nohelpers", "list-mainporcelain", "list-ancillarymanipulators",
         "list-ancillaryinterrogators", "list-foreignscminterface", "list-plumbingmanipulators",
         "list-plumbinginterrogators", "list-synchingrepositories", "list-synchelpers", "list-purehelpers")


def git_commands() -> set[str]:
    out = subprocess.run(["git", f"--list-cmds={','.join(LISTS)}"], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def shipped_git_subcommands() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "rules" / "commands").glob("*.yaml")):
        for rule in yaml.safe_load(path.read_text()).get("rules") or []:
            match = rule.get("match") or {}
            programs = match.get("program")
            if "git" not in (programs if isinstance(programs, list) else [programs]):
                continue
            subs = match.get("subcommand")
            for sub in subs if isinstance(subs, list) else [subs]:
                if sub is not None:
                    found.setdefault(sub, set()).add(rule["id"])
    return found


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_every_git_subcommand_a_shipped_rule_names_exists() -> None:
    known = git_commands() | THIRD_PARTY
    assert {"push", "commit", "send-email"} <= known  # the lists were read
    unknown = {sub: sorted(ids) for sub, ids in shipped_git_subcommands().items() if sub not in known}
    assert unknown == {}
