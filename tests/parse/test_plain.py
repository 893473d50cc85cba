"""The plain-command reader gives exactly the IR the tree-sitter lowering gives, or declines.

Compared over the shared corpus, the peers' cases and generated commands built from the pieces
where tree-sitter-bash has quirks (``-``, ``==``, ``x=1``, glued descriptors, keywords)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from guard import parse
from guard.parse import plain, treesitter


def _tree_sitter(cmd: str, base: int) -> object:
    try:
        return treesitter.lower(cmd, base)
    except Exception as exc:  # noqa: BLE001 - a rejection is a result to compare too
        return exc


def _mismatches(cmds: list[str]) -> tuple[int, list[str]]:
    taken, bad = 0, []
    for cmd in cmds:
        for base in (0, 11):
            quick = plain.lower(cmd, base)
            if quick is None:
                continue
            taken += 1
            full = _tree_sitter(cmd, base)
            if not (hasattr(full, "body") and (full.body, full.source, full.parser, full.error)
                    == (quick.body, quick.source, quick.parser, quick.error)):
                bad.append(cmd)
    return taken, bad


def test_corpus_and_peers(shared: Path) -> None:
    cmds = []
    for f in [shared / "corpus" / "agent-commands.jsonl", shared / "corpus" / "syntax-probe.jsonl",
              *sorted((shared / "peers").glob("*.jsonl"))]:
        with f.open() as fh:
            cmds += [json.loads(line).get("command", "") for line in fh if line.strip()]
    taken, bad = _mismatches(cmds)
    assert not bad, bad[:5]
    assert taken > len(cmds)  # two bases each: most agent commands are plain


ATOMS = ["ls", "-la", "a", "x=1", "X+=1", "2", "1", "0", "-", "--", "=", "==", ":", ".", "/", "%s", "a,b", "@x",
         "+", "a+:", "-20", "'q'", "''", '""', '"a b"', "'a\"b'", '"it\'s"', "a'b'c", 'a"b"', '"$x"', "'$x'",
         "if", "fi", "done", "in", "time", "declare", "export", "let", "eval", "exec", "select", "case",
         "{", "}", "coproc", "local", "a=", "~", "~/x", "a~", "x=~", "*.py", "a*b", "?", "**", "[ab]", "#c",
         "!", "\\x"]
SEPS = [" ", " ", "\t", " && ", "&&", " || ", "|", " | ", ";", "; ", " >", ">", " >>", " 2>", "2>&1",
        " 2>&1", " >&2", ">&2", " 1>&2", "0>", " 2>/dev/null", " > f", "\n", " & ", "<", " <<< "]


def test_generated_commands() -> None:
    rng = random.Random(17)
    cmds = []
    for _ in range(20000):
        text = "".join(rng.choice(ATOMS) + rng.choice(SEPS) for _ in range(rng.randint(1, 6)))
        cmds.append(text.rstrip() if rng.random() < 0.5 else text)
    taken, bad = _mismatches(cmds)
    assert not bad, bad[:5]
    assert taken > 300  # the pieces are mostly the awkward ones: few generated commands are plain


@pytest.mark.parametrize("cmd", [
    "echo $HOME", "ls [ab].py", "cd {a,b}", "echo a\nb", "x=1 git push", "export A=1", "if true; then :; fi",
    "a && ", "| a", "a;;b", "a >", "cat < f", "echo hi &", "a 12>f", "a x>f", "echo \\$x", "git log --author='a b' $x",
    "- 2>&1", "echo == x", "a > f b", "", " ",
])
def test_declines_what_is_not_plain(cmd: str) -> None:
    assert plain.lower(cmd) is None
    assert parse.parse(cmd).source == cmd  # and the full parser still answers


def test_shapes() -> None:
    script = plain.lower("cd src && pytest -q 2>&1 | tail -5; echo \"done it\"", 3)
    assert script is not None and script == treesitter.lower("cd src && pytest -q 2>&1 | tail -5; echo \"done it\"", 3)
    assert script.body.items[0].items[1].commands[0].redirects[0].fd == 2
