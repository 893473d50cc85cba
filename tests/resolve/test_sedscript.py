"""What ``sed … e`` and ``s///e`` run, checked against real GNU sed: the pattern space guard
computes for each substitution is the one ``sed -n 's///p'`` prints (``e`` runs exactly the lines
a ``p`` would print, before printing)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from guard.ir import UNKNOWN
from guard.resolve.sedscript import sed_commands

SED = shutil.which("sed")
GNU = SED is not None and "GNU" in subprocess.run([SED, "--version"], capture_output=True, text=True).stdout

SUBSTS = [
    ("s/x/git push/", "x\n"),
    ("s/.*/git &/", "push\n"),
    ("s/^/git /", "push origin\nlog\n"),
    ("s/\\(p.*\\)/git \\1 origin/", "push\n"),
    ("s/o/0/g", "foo boo\n"),
    ("s/o/0/2", "foo boo\n"),
    ("s/O/git push/I", "o\n"),
    ("s/a\\+/git /", "aaapush\n"),
    ("s/[[:digit:]]\\{2\\}/git push/", "x12\n"),
    ("2s/.*/git push/", "a\nb\nc\n"),
    ("s/nomatch/git push/", "x\n"),
    ("s/(x)/git push/", "(x)\n"),
    ("s/[[:punct:]][^a]/git push/", "[x\n"),
    ("s|/tmp|git push|", "/tmp\n"),
]
ERE = [
    ("s/(.*)/git \\1/", "push\n"),
    ("s/a+|b/git /", "aab\n"),
]


def _real(script: str, text: str, ere: bool) -> list[str]:
    argv = [SED, "-n", *(["-E"] if ere else []), script + "p"]
    return subprocess.run(argv, input=text, capture_output=True, text=True, check=True).stdout.splitlines()


@pytest.mark.skipif(not GNU, reason="GNU sed is not installed")
@pytest.mark.parametrize(("script", "text"), SUBSTS + [(s, t) for s, t in ERE], ids=[s for s, _ in SUBSTS + ERE])
def test_pattern_space_matches_gnu_sed(script: str, text: str) -> None:
    ere = (script, text) in ERE
    argv = ("sed", *(["-E"] if ere else []), script + "e")
    got = [cmd for _, cmd in sed_commands(argv, text)]
    assert got == _real(script, text, ere)


@pytest.mark.skipif(not GNU, reason="GNU sed is not installed")
@pytest.mark.parametrize(("script", "text"), [("1e", "ls\ngit push\n"), ("2e", "ls\ngit push\n"), ("$!e", "a\nb\nc\n"),
                                              ("e", "git push\n")])
def test_e_runs_the_addressed_lines(script: str, text: str, tmp_path) -> None:
    log = tmp_path / "log"
    lines = text.splitlines()
    # each line becomes a command that logs itself: the lines sed really executes
    fed = "".join(f"echo {x.replace(' ', '_')} >> {log}\n" for x in lines)
    subprocess.run([SED, "-n", script], input=fed, capture_output=True, text=True, check=True)
    ran = log.read_text().split() if log.exists() else []
    got = [cmd for _, cmd in sed_commands(("sed", "-n", script), text)]
    assert [g.replace(" ", "_") for g in got] == ran


def test_unknown_input() -> None:
    assert sed_commands(("sed", "s/^.*$/git push/e", "f"), None) == [("sed s///e", "git push")]
    assert sed_commands(("sed", "s/^/git push /e", "f"), None) == [("sed s///e", "git push " + UNKNOWN)]
    assert sed_commands(("sed", "s/a/b/e", "f"), None) == [("sed s///e", None)]
    assert sed_commands(("sed", "1e git push", "f"), None) == [("sed e", "git push")]
    assert sed_commands(("sed", "s/a/git push/", "f"), None) == []
    assert sed_commands(("sed", "s/x/git push/e", "f"), "x\n") == [("sed s///e", None)], "reads f, not stdin"


@pytest.mark.skipif(not GNU, reason="GNU sed not installed")
def test_e_needs_no_blank_before_its_command(tmp_path) -> None:
    """``1e./q.sh`` runs ./q.sh in GNU sed (it skips blanks after e but needs none)."""

    q = tmp_path / "q.sh"
    q.write_text("#!/bin/sh\necho RAN\n")
    q.chmod(0o755)
    (tmp_path / "data.txt").write_text("x\n")
    out = subprocess.run([SED, "-n", "1e./q.sh", "data.txt"], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout == "RAN\n"
    assert sed_commands(("sed", "-n", "1e./q.sh", "data.txt"), None) == [("sed e", "./q.sh")]
    assert sed_commands(("sed", "-n", "1e ./q.sh", "data.txt"), None) == [("sed e", "./q.sh")]


def test_the_flag_precheck_changes_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_may_flag_e`` only skips s commands whose flags hold no e: every generated s command
    (delimiters, escaped delimiters, e among the flags or in the text) gets the same answer with
    the full parse of every line."""
    import itertools

    import guard.resolve.sedscript as sedscript

    scripts = []
    for d, regex, repl, flags in itertools.product("/|e#", ["a", "x\\/y", "e", "\\e", "a\\|b"],
                                                   ["b", "echo hi", "\\n", "e"], ["", "g", "e", "ge", "2e", "w"]):
        scripts.append(f"s{d}{regex}{d}{repl}{d}{flags}")
        scripts.append(f"1s{d}{regex}{d}{repl}{d}{flags};p")
    stdins = [None, "echo one\nline two\n"]
    fast = [sed_commands(("sed", "-e", s), i) for s in scripts for i in stdins]
    monkeypatch.setattr(sedscript, "_may_flag_e", lambda line: True)
    full = [sed_commands(("sed", "-e", s), i) for s in scripts for i in stdins]
    assert fast == full
    assert sum(bool(x) for x in full) > 50  # some of them run something
