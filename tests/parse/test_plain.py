"""The plain-command reader gives exactly the IR the tree-sitter lowering gives, or declines.

Compared over the shared corpus, the peers' cases, the labelled fixtures and generated commands
built from the pieces where tree-sitter-bash has quirks (``-``, ``==``, ``x=1``, glued descriptors,
keywords, newlines after pipelines, here-documents, escapes)."""

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


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "commands"


def test_corpus_peers_and_fixtures(shared: Path) -> None:
    cmds = []
    for f in [shared / "corpus" / "agent-commands.jsonl", shared / "corpus" / "syntax-probe.jsonl",
              *sorted((shared / "peers").glob("*.jsonl")), *sorted(FIXTURES.glob("*.jsonl"))]:
        with f.open() as fh:
            cmds += [json.loads(line).get("command", "") for line in fh if line.strip()]
    taken, bad = _mismatches(cmds)
    assert not bad, bad[:5]
    assert taken > 1.6 * len(cmds)  # two bases each: most agent commands are plain


ATOMS = ["ls", "-la", "a", "x=1", "X+=1", "2", "1", "0", "-", "--", "=", "==", ":", ".", "/", "%s", "a,b", "@x",
         "+", "a+:", "-20", "'q'", "''", '""', '"a b"', "'a\"b'", '"it\'s"', "a'b'c", 'a"b"', '"$x"', "'$x'",
         "if", "fi", "done", "in", "time", "declare", "export", "let", "eval", "exec", "select", "case",
         "{", "}", "coproc", "local", "a=", "~", "~/x", "a~", "x=~", "*.py", "a*b", "?", "**", "[ab]", "#c",
         "!", "\\x", "a\\;", "\\;", "'a\nb'", '"a\\"b"', '"a\\|b"', '"a\nb"', "X=", "X=''", 'X="a b"', "A=1",
         "X=~/b", "=~", "<<'EOF'", "<< \"EOF\"", "<<EOF", "EOF", "\nEOF", "\nEOF\n", "\\\n", "a\\\nb"]
SEPS = [" ", " ", "\t", " && ", "&&", " || ", "|", " | ", ";", "; ", " >", ">", " >>", " 2>", "2>&1",
        " 2>&1", " >&2", ">&2", " 1>&2", "0>", " 2>/dev/null", " > f", "\n", " & ", "<", " <<< ", " < f",
        "\n\n", " \\\n ", " | ", "\n", " <<'EOF' > f\nbody\nEOF\n", " <<EOF\n\nx\nEOF", " <<'EOF'\n  EOF\nEOF\n"]


def test_generated_commands() -> None:
    rng = random.Random(17)
    cmds = []
    for _ in range(20000):
        text = "".join(rng.choice(ATOMS) + rng.choice(SEPS) for _ in range(rng.randint(1, 6)))
        cmds.append(text.rstrip() if rng.random() < 0.5 else text)
    taken, bad = _mismatches(cmds)
    assert not bad, bad[:5]
    assert taken > 400  # the pieces are mostly the awkward ones: few generated commands are plain


READABLE = ["ls", "-la", "git", "x", "2", "1", "-", "'a b'", '"a\\"b"', '"a\\|b\\n"', "a\\ b", "\\;", "X=1", "X=",
            "X='a'b", "Y+=2", '"x\ny"', "'x\n\ny'", "==b", "b==", "=", "~/x", "*.py"]
JOINS = [" ", " ", " ", " && ", " || ", " | ", "|", ";", "\n", "\n\n", " \\\n  ", " & ", "&", " &\n",
         " # note\n", "#c ", "\n# line\n", " > f ", " 2>&1 ", " < in ",
         " >> log ", " 2>/dev/null ", " <<'EOF' > f\nline\n\nEOF\n", " <<EOF\n\n\nplain text\nEOF\n",
         ' <<"END"\n$x `y` \\z\nEND\n', " <<'EOF'\nEOF\n"]


def test_generated_readable_commands() -> None:
    """Mostly the shapes the reader takes, so that nearly every one is compared."""
    rng = random.Random(23)
    names = ["ls", "git", "X=1 make", "cat", "./run.sh", "~/bin/x", "g++"]
    cmds = ["".join(f"{rng.choice(names)} {rng.choice(READABLE)}{rng.choice(JOINS)}" for _ in range(rng.randint(1, 8)))
            .strip(" ") for _ in range(20000)]
    taken, bad = _mismatches(cmds)
    assert not bad, bad[:5]
    assert taken > 4000


@pytest.mark.parametrize("cmd", [
    "echo $HOME", "ls [ab].py", "cd {a,b}", "x=1", "export A=1", "if true; then :; fi", "a && ", "| a",
    "a;;b", "a >", "cat <(f)", "echo hi &>f", "a 12>f", "a x>f", "echo $(x)", "git log --author='a b' $x",
    "- 2>&1", "echo == x", "a > f b", "", " ", "a\\\nb", "cat <<EOF\n$x\nEOF",
    "cat <<'EOF'\nno end", "cat <<A <<B\na\nA\nb\nB", "cat <<'EOF' | sh\nx\nEOF", "python3 - <<'EOF'\nx\nEOF",
    "cat <<-EOF\n\tx\nEOF", "a | b | c\nd && e",
    # around ``&``: operators and redirections it is part of, and places bash or tree-sitter reject it
    "&", "& a", "a &;", "a & & b", "a &&& b", "a ;& b", "a |& b", "a >&f", "a >& b", "a 2>& 1", "a &>>f",
    "a \\\n& b", "cat <<EOF &\nx\nEOF", "cat <<EOF\nx\nEOF\n&", "A=1 &", "cat <<'EOF' > f &\nx\nEOF",
    # a word after a redirection that is not the descriptor of the next one
    "a > f 2", "a > f 2 >x", "a > f 3>x", "a > f 2>", "a > 2>&1", "a > f 2>&1 x", "a > f 2<&1", "a > f 2>|x",
    "a > f 2<<EOF\nx\nEOF",
    # expansions stay with the full parser, whatever their shape
    "echo $", "echo ${", "echo ${x}", "echo $1", "echo $@", "echo $?", 'echo "$"', 'echo "$x"', "echo a$x'b'",
    # command names tree-sitter-bash reads its own way
    "+x a", "a+: b", "-", ":",
    # a ``#`` that is no comment, or a comment where the reader does not look for one
    "a#b", 'a "x"#b', "a 2# x", "a > # x", "#", "# only", "a \\\n# x\nb", "a | b | c # x\nd && e", "x=1 # c",
    "a # x <<EOF",
])
def test_declines_what_is_not_plain(cmd: str) -> None:
    assert plain.lower(cmd) is None
    assert parse.parse(cmd).source == cmd  # and the full parser still answers


@pytest.mark.parametrize("cmd", [
    "echo hi &", "a & b", "a&b", "echo x&", "a && b & c", "a | b &", "a &\nb", "a &\n", "a & ", "a  &  b",
    "a &\n\nb &", "a 2>&1 &", "a >f &", "a & \\\n b", "a || b &\n c | d", "a | b | c &\nd && e",
    "a | b | c & d > f", "a | b | c & d && e",
    "nohup python3 api.py > api.log 2>&1 & sleep 3 && curl -s localhost:8000/health",
    "~/bin/tool --list", "~ x", "~root/x a", "g++ -o a a.c", "c++filt x | ~/x && g++ y", "~/x 2>&1 | a+b",
    "a > f 2>&1", "a > f 2>/dev/null", "a >f 1>&2 2>x", "a < in 2>err >out", "a > f 2>>x", "a >f 2>&1 | b",
    "a > f\t2>&1", "cat <<'EOF' > f 2>&1\nx\nEOF",
    "echo a # note", "# x\nls", "a && # x\n b", "a | # x\n b", "a > f # x", "a 2>&1 # x", "a;#x", "a #x\\\nb",
    "cat <<EOF # x\nbody\nEOF", "a\n  # x\nb", "a #", "a & # x", "a # x & y", "# $x\nls", "a # $(rm -rf /)",
    "cat <<'EOF' > f # x $y\nbody\nEOF", "a # c\n# d\n\nb", "a\t#\tc", "git status  # what changed?\ngit diff",
])
def test_takes_background_lists_names_descriptors_and_comments(cmd: str) -> None:
    """``&`` ends a statement run in the background; ``~`` and ``+`` are word text in a name; a
    ``1`` or ``2`` after a redirection is the descriptor of the redirection operator it touches; a
    comment reads as blanks."""
    for base in (0, 11):
        quick = plain.lower(cmd, base)
        assert quick is not None
        assert quick == treesitter.lower(cmd, base)


def test_shapes() -> None:
    script = plain.lower("cd src && pytest -q 2>&1 | tail -5; echo \"done it\"", 3)
    assert script is not None and script == treesitter.lower("cd src && pytest -q 2>&1 | tail -5; echo \"done it\"", 3)
    assert script.body.items[0].items[1].commands[0].redirects[0].fd == 2
