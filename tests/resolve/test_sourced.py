"""Files a command sources (docs/behaviour.md §9 item 14): definitions become state, function bodies count
only where called, the command's own text is analysed whatever the file costs, and what a file
defines is computed once per content (memory, then disk)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.resolve import sourced
from tests.hosts import snapshots


def check(command: str, tmp_path: Path, cwd: str = "/workspace/app") -> object:
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    return analyze(command, Context.from_environ(cwd=cwd, env=env, trees=("/workspace",)))


def b64_block(definition: str) -> str:
    enc = base64.encodebytes(definition.encode()).decode()  # 76-column lines, as base64(1) writes
    return f"eval \"$(echo '{enc}' | base64 -d)\" > /dev/null 2>&1\n"


@pytest.fixture
def rc(tmp_path: Path) -> Path:
    f = tmp_path / "lib.sh"
    f.write_text("shopt -s expand_aliases\nset -o hashall\nalias gp='git push'\n"
                 "deploy() { git push origin main; }\n"
                 + b64_block("pushall () \n{ \n    git push --all\n}\n")
                 + "export EDITOR=vim\n")
    return f


def test_definitions_refuse_nothing(rc: Path, tmp_path: Path) -> None:
    v = check(f"source {rc} && ls", tmp_path)
    assert v.verdict == "allow"
    assert not [i for i in v.invocations if i.program == "git"]


@pytest.mark.parametrize("call, what", [("gp", "git push (via alias gp)"), ("deploy", "git push (via function deploy)"),
                                        ("pushall", "git push (via function pushall)")])
def test_a_definition_counts_where_it_is_called(rc: Path, tmp_path: Path, call: str, what: str) -> None:
    v = check(f". {rc}; {call}", tmp_path)
    assert v.verdict == "refuse" and v.message.startswith(f"Refused: {what}.")


def test_top_level_code_of_a_sourced_file_still_counts(tmp_path: Path) -> None:
    f = tmp_path / "bad.sh"
    f.write_text("helper() { git status; }\ngit push origin HEAD\n")
    v = check(f"source {f}; ls", tmp_path)
    assert v.verdict == "refuse" and v.category == "publish"


def test_a_huge_sourced_file_never_stops_the_own_text(tmp_path: Path) -> None:
    f = tmp_path / "huge.sh"
    body = "".join(f"x{i}=$(printf '%s' value{i}); eval \"y{i}=$x{i}\"\n" for i in range(6000))
    f.write_text(body)
    assert f.stat().st_size > 200_000
    for tail in ("git push", "eval 'git push'", "bash -c 'git push'"):
        v = check(f"source {f} && {tail}", tmp_path)
        assert v.verdict == "refuse", tail


@pytest.mark.skipif(not snapshots.available("large"), reason="bash-completion's git script is not installed")
def test_git_completion_defines_functions_that_refuse_nothing(tmp_path: Path) -> None:
    v = check(f"source {snapshots.GIT_COMPLETION}; ls; make test", tmp_path)
    assert v.verdict == "allow", v.message
    v = check(f"source {snapshots.GIT_COMPLETION}; __git_main push", tmp_path)
    assert v.verdict == "refuse"  # calling the completion's own function runs its git


def test_extraction_keeps_order_and_drops_option_lines(rc: Path) -> None:
    defs = sourced.extract(rc.read_text())
    kinds = [(i[0], i[1].split("\n")[0]) for i in defs.items]
    assert kinds == [("code", "alias gp='git push'"), ("function", "deploy"), ("function", "pushall"),
                     ("code", "export EDITOR=vim")]
    assert defs.functions["pushall"].startswith("pushall () \n{")


def test_a_block_that_decodes_to_commands_stays_code(tmp_path: Path) -> None:
    f = tmp_path / "s.sh"
    f.write_text(b64_block("git push origin main\n"))
    v = check(f"source {f}", tmp_path)
    assert v.verdict == "refuse"


def test_definitions_are_cached_by_content_on_disk(tmp_path: Path) -> None:
    snap = snapshots.make("medium", tmp_path / "snaps")
    sourced._memo.clear()
    v = check(f"source {snap} && gp", tmp_path)
    assert v.verdict == "refuse"
    cached = list((tmp_path / "cache" / "guard" / "sourced").iterdir())
    assert len(cached) == 1 and cached[0].name == sourced.digest(snap.read_text()) + ".json"
    assert oct(cached[0].stat().st_mode & 0o777) == "0o600"
    # a later process: nothing in memory, the disk copy answers without parsing the file again
    sourced._memo.clear()
    calls = []
    real = sourced.extract
    sourced.extract = lambda *a, **k: calls.append(a) or real(*a, **k)  # type: ignore[assignment]
    try:
        assert check(f"source {snap} && gp", tmp_path).verdict == "refuse"
    finally:
        sourced.extract = real  # type: ignore[assignment]
    assert calls == []
    # a changed file is a new digest; a cache file others can write is not trusted
    os.chmod(cached[0], 0o666)
    sourced._memo.clear()
    assert sourced._load(str(cached[0])) is None


def test_recursion_and_self_sourcing_are_bounded(tmp_path: Path) -> None:
    f = tmp_path / "loop.sh"
    f.write_text(f"source {f}\nalias gp='git push'\n")
    v = check(f"source {f}; gp", tmp_path)
    assert v.verdict == "refuse"
