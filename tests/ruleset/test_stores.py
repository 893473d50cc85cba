"""Credential stores as data (config credential_stores): the reading of each entry, the cheap
hint in front of it, and the samples a find pattern is tried against."""

from __future__ import annotations

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.ruleset.stores import Stores

SHIPPED = Stores([".git-credentials", ".config/git/credentials", ".config/gh/", ".config/gh/hosts.yml",
                  ".config/glab-cli/", ".config/glab-cli/config.yml", ".netrc", "_netrc", "/proc/*/environ"])


@pytest.mark.parametrize(("path", "store"), [
    ("/root/.git-credentials", True), ("/home/u/.config/git/credentials", True), ("/root/.config/gh", True),
    ("/root/.config/gh/hosts.yml", True), ("/root/.config/glab-cli/config.yml", True), ("/root/_netrc", True),
    ("/proc/1/environ", True), ("/proc/self/environ", True), ("/x/proc/1/environ", False),
    ("/root/.config/ghost", False), ("/root/hosts.yml", False), ("/root/.netrc.bak", False),
    ("/workspace/app/src/credentials.py", False),
])
def test_an_entry_names_its_path_and_nothing_beside_it(path: str, store: bool) -> None:
    assert SHIPPED.names(path) is store


@pytest.mark.parametrize("size", [0, 1, 255, 256, 4000])
def test_the_hint_finds_every_hint_wherever_it_stands(size: int) -> None:
    filler = "x" * size
    assert not SHIPPED.hint(filler)
    for hint in SHIPPED.hints:
        for text in (hint + filler, filler + hint, filler[: size // 2] + hint + filler[size // 2:]):
            assert SHIPPED.hint(text), (hint, len(text))
    for text in ("-la", "src/main.py", "status", "--oneline", "/workspace/app"):
        assert not SHIPPED.hint(text + filler)


def test_samples_stand_for_globbed_entries() -> None:
    samples = SHIPPED.samples("/root")
    assert "/proc/1/environ" in samples and "/proc/self/environ" in samples
    assert "/root/.config/gh/hosts.yml" in samples


@pytest.mark.parametrize("command", [
    "cat ~/.config/glab-cli/config.yml", "cat ~/.git-credentials", "cd ~/.config/gh && cat hosts.yml",
    "cat /pr*/1/environ", "find ~ -name hosts.yml", "cat ~/.n?trc",
])
def test_the_shipped_catalogue_refuses_reading_a_store(command: str) -> None:
    v = analyze(command, Context(cwd="/workspace/app", env={"HOME": "/root"}))
    assert (v.verdict, v.category) == ("refuse", "token-search"), command


def test_a_store_added_in_a_config_layer_is_refused(tmp_path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("config:\n  credential_stores+: [.config/hub]\n")
    ctx = Context(cwd="/workspace/app", env={"HOME": "/root"}, config_path=str(cfg))
    assert analyze("cat ~/.config/hub", ctx).category == "token-search"
    assert analyze("cat ~/.config/hub", Context(cwd="/workspace/app", env={"HOME": "/root"})).verdict == "allow"
