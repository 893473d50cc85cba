"""Parser selection: tree-sitter's known misparses go to bashlex, then to the token scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guard.parse import bashlex_fallback, parse, scan, treesitter
from tests.parse.conftest import argvs

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "src",
    [
        "ls | grep x | head -30\ngit push --force && echo done",  # tree-sitter-bash #347
        "ps aux | grep node | head\ngit push || true",  # #347
    ],
)
def test_347_falls_back_and_finds_git(src: str) -> None:
    with pytest.raises(treesitter.Unparsed):
        treesitter.lower(src)
    script = parse(src)
    assert script.parser == "bashlex"
    assert "#347" in (script.error or "")
    assert ["git", "push", "--force"] in argvs(script) or ["git", "push"] in argvs(script)
    assert ["head", "-30"] in argvs(script) or ["head"] in argvs(script)


@pytest.mark.parametrize(
    ("src", "commands"),
    [
        ("cat <<'EOF' > out.txt; git add out.txt\nbody\nEOF", [["cat"], ["git", "add", "out.txt"]]),
        ("cat <<'EOF' 2>&1 | tail -5\ngit push\nEOF", [["cat"], ["tail", "-5"]]),
        ("cat <<'EOF'; git push\nhello\nEOF", [["cat"], ["git", "push"]]),
    ],
)
def test_346_heredoc_then_operator_uses_bashlex(src: str, commands: list) -> None:  # #346
    script = parse(src)
    assert script.parser == "bashlex"
    assert argvs(script) == commands
    heredoc = [r for r in script.body.items[0].redirects if r.op == "<<"] if hasattr(script.body, "items") \
        else [r for c in script.body.commands[:1] for r in c.redirects if r.op == "<<"]
    assert heredoc and heredoc[0].quoted


def test_bashlex_lowering_matches_tree_sitter() -> None:
    src = 'VAR=$(cd "$(dirname "$0")" && pwd); "gi"\'t\' push $\'\\x67it\' ${X:-y} >f 2>&1; time git status'
    a, b = treesitter.lower(src), bashlex_fallback.lower(src)
    assert argvs(a) == argvs(b)
    assert argvs(b)[-1] == ["git", "status"]
    assert ["gi" + "t", "push", "git", None] in argvs(b)


def test_bashlex_heredoc_body_excludes_terminator() -> None:
    script = bashlex_fallback.lower("cat <<'EOF'\ngit push\nEOF")
    (r,) = script.body.redirects
    assert r.body.literal == "git push\n" and r.quoted


def test_bashlex_refuses_heredoc_in_group() -> None:
    # bashlex reads such heredoc bodies as commands; the scan must be used instead.
    src = "{\ncat > cmds.txt <<EOF\ngit push --force\nEOF\n}"
    with pytest.raises(ValueError):
        bashlex_fallback.lower(src)
    script = scan.scan(src)
    assert ["git", "push", "--force"] not in argvs(script)


def test_scan_when_both_fail() -> None:
    script = parse("rm -rf !(keep.txt) && g'i't push | bash")
    assert script.parser == "scan"
    assert "tree-sitter" in script.error and "bashlex" in script.error
    assert ["git", "push"] in argvs(script)
    assert argvs(script)[0] == ["rm", "-rf", "!(keep.txt)"]


def test_scan_reads_heredoc_bodies() -> None:
    script = scan.scan("cat <<'EOF' > f\ngit push\nEOF\nls")
    assert argvs(script) == [["cat"], ["ls"]]


def test_bashlex_cache_is_used_and_written(tmp_path: Path) -> None:
    code = (
        "import time,sys; t=time.perf_counter(); from guard.parse import bashlex_fallback as b; b._load();"
        "print(round((time.perf_counter()-t)*1000,1)); print(b.cache_dir())"
    )
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO)
    assert first.returncode == 0, first.stderr
    files = list((tmp_path / "guard").glob("bashlex-lr-*.json"))
    assert len(files) == 1
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO)
    assert second.returncode == 0, second.stderr
    # An unwritable cache directory must still work (plain table build).
    (tmp_path / "ro").write_text("not a directory")
    env["XDG_CACHE_HOME"] = str(tmp_path / "ro")
    third = subprocess.run(
        [sys.executable, "-c", "from guard.parse import bashlex_fallback as b; print(b.lower('a | b').parser)"],
        env=env, capture_output=True, text=True, cwd=REPO,
    )
    assert third.returncode == 0 and third.stdout.strip() == "bashlex", third.stderr


def test_bashlex_caches_of_two_installs_do_not_evict_each_other(tmp_path: Path) -> None:
    """Another install's tables (another venv of the same user) stay where they are: each key
    has its own file, so two installs used in turn do not rebuild the tables on every switch."""
    from guard.parse import bashlex_fallback as b

    other = tmp_path / "guard" / b.cache_name(("another", "install"))
    other.parent.mkdir()
    other.write_bytes(b"tables of another install")
    code = "from guard.parse import bashlex_fallback as b; b._load()"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert other.read_bytes() == b"tables of another install"
    assert len(list((tmp_path / "guard").glob("bashlex-lr-*.json"))) == 2
    assert b.cache_name(("a",)) != b.cache_name(("b",))


def test_import_is_light() -> None:
    code = "import sys, guard.parse; print(json.dumps(sorted(sys.modules)))".replace("print(", "import json; print(")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    mods = json.loads(out.stdout)
    assert not any(m.startswith(("bashlex", "tree_sitter", "yaml")) for m in mods)
    code = "import sys, json; from guard.parse import parse; parse('git status'); print(json.dumps(sorted(sys.modules)))"
    mods = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout)
    assert not any(m.startswith(("bashlex", "tree_sitter")) for m in mods)  # a plain command needs no parser
    code = code.replace("'git status'", "'git status \"$x\"'")
    mods = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout)
    assert not any(m.startswith("bashlex") for m in mods)
    assert "tree_sitter._binding" in mods
