"""Pattern removal and substitution cost linear time, or stop at a step budget and say so
(issue 37, finding 6): ``${a//0/00}`` on 30,000 characters took over a minute, past guard-shell's
10 s analysis timeout (which then ran the command unchecked); ``${a##*1}`` on 100 KB took 4 s.
The values are still bash's, checked against real bash on the patterns the new code treats
differently (one width, greedy, lazy, reversed)."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.parse import parse
from guard.resolve import resolve

CTX = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})


def _printed(command: str) -> tuple[list[str], tuple[str, ...], float]:
    """The arguments guard finds for the last ``printf '<%s>'`` of ``command``, its notes, and
    how long the analysis took."""
    start = time.monotonic()
    res = resolve(parse(command), CTX)
    took = time.monotonic() - start
    hits = [i for i in res.invocations if i.program == "printf" and i.argv[1:2] == ("<%s>",)]
    return list(hits[-1].argv[2:]), tuple(res.unresolved), took


@pytest.mark.parametrize("n", [3_000, 10_000, 30_000])
def test_global_substitution_is_linear(n: int) -> None:
    got, notes, took = _printed(f"a=$(printf %0{n}d 0); b=${{a//0/00}}; printf '<%s>' ${{#b}}")
    assert got == [str(2 * n)] and not notes
    assert took < 2.0, f"{took:.2f} s for N={n}"


@pytest.mark.parametrize("word,want", [("${a##*1}", "0"), ("${a%%1*}", "99999"), ("${a#*0}", "99999"),
                                       ("${a%0*}", "99998"), ("${a/%0*1/x}", "1"), ("${a/#*0/x}", "2")])
def test_removal_on_100_kb_is_linear(word: str, want: str) -> None:
    got, notes, took = _printed(f"a=$(printf %0100000d 1); b={word}; printf '<%s>' ${{#b}}")
    assert got == [want] and not notes, (got, notes)
    assert took < 2.0, f"{took:.2f} s"


def test_a_substitution_past_the_step_budget_stops_and_says_so() -> None:
    start = time.monotonic()
    v = analyze("a=$(printf %030000d 0); b=${a//0*1/x}; git push origin main", CTX)
    assert time.monotonic() - start < 2.0
    assert v.verdict == "refuse"  # what follows is still analysed
    assert any("step budget" in n for n in v.unresolved), v.unresolved


VALUES = ["", "a", "ab.cd.ef", "a/b/c", "aaaa", "xaybza", "..", "a.b/a.b"]
WORDS = ["${v#*.}", "${v##*.}", "${v%.*}", "${v%%.*}", "${v#a}", "${v%a}", "${v##a*}", "${v%%*b}",
         "${v/a/Z}", "${v//a/Z}", "${v//?/Z}", "${v//a*b/Z}", "${v//[ab]/Z}", "${v/#a*/Z}", "${v/%*a/Z}",
         "${v/%a/Z}", "${v/#?/Z}", "${v//\"a\"/Z}", "${v%\"b\"*}", "${v##*[./]}", "${v%%[./]*}", "${v//*/Z}"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("value", VALUES)
def test_the_values_are_bashs(value: str) -> None:
    words = " ".join(f"x{w}" for w in WORDS)  # unquoted (x keeps an empty field)
    script = f"v='{value}'; printf '<%s>' {words}"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    want = out[1:-1].split("><")
    got, notes, _ = _printed(script)
    assert got == want and not notes, [(w, g, b) for w, g, b in zip(WORDS, got, want, strict=True) if g != b]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("value", VALUES)
def test_a_pattern_inside_double_quotes_is_a_pattern(value: str) -> None:
    """``"${c#?}"``: bash reads the pattern as unquoted text even inside double quotes (its
    wildcards match, its own quotes and backslashes quote); guard read it as literal text, so
    ``c=xgit; "${c#?}" push`` ran git push unrefused."""
    words = " ".join(f'"{w}"' for w in [*WORDS, "${v#\\?}", "${v#\'a\'}", '${v/#"a"/Z}'])
    script = f"v='{value}'; printf '<%s>' {words}"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    got, notes, _ = _printed(script)
    assert got == out[1:-1].split("><") and not notes


def test_a_quoted_pattern_does_not_hide_git_push() -> None:
    assert analyze('c=xgit; "${c#?}" push origin main', CTX).verdict == "refuse"
