"""``guard rules draft``: a runs: entry drafted from a wrapper's own help text, checked against the
real program.

For each wrapper installed here, the draft is made from its real ``--help`` and manual, read by
the resolver's own reading of a ``runs:`` entry, and then the real wrapper runs a command line
with a stand-in ``git`` that logs its folder and argv: what the draft says runs must be what
ran. A wrapper not installed, or one that cannot run its command here, is skipped with the reason.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from guard.cli import rules as cli
from guard.resolve.wrappers import from_spec
from guard.ruleset import draft

# A command line per wrapper, using its options that take values, its operands and its folder
# option: {d} is a scratch folder, {pid} this process.
CASES = [
    ("timeout", "timeout -k 5 -s TERM 10 git log -1"),
    ("nice", "nice -n 5 git log"),
    ("stdbuf", "stdbuf -o L -e 0 git log"),
    ("setsid", "setsid -w git log --oneline"),
    ("flock", "flock -w 3 {d}/lock git log"),
    ("flock", "flock -E 3 {d}/lock -c 'git log -1'"),
    ("chroot", "chroot --userspec 0:0 / git log"),
    ("nsenter", "nsenter -t {pid} -S 0 git log"),
    ("faketime", "faketime -p 42 '2020-01-01 00:00:00' git log"),
    ("torsocks", "torsocks -a 127.0.0.1 -P 9050 git log"),
    ("proxychains4", "proxychains4 -q -f /etc/proxychains4.conf git log"),
    ("bwrap", "bwrap --bind / / --setenv A b --chdir {d}/x git log"),
    ("dbus-run-session", "dbus-run-session --dbus-daemon dbus-daemon -- git log"),
]


def _text(argv: list[str]) -> str:
    out, why = cli._read(argv)
    return "" if why or not draft.is_text(out) else out.decode()


def _draft_of(program: str) -> draft.Draft:
    manual = _text(["man", "-P", "cat", program]) if shutil.which("man") else ""
    return draft.draft(
        program, _text([program, "--help"]), manual, draft.version_line(_text([program, "--version"]))
    )


def _runs(d: draft.Draft) -> dict:
    """The draft's keys, as a program spec's runs: mapping."""
    return {
        "with_value": list(d.with_value),
        "with_values": dict(d.with_values),
        "operands": d.usage.operands if d.usage else 0,
        "cwd_option": list(d.cwd_option),
        "shell_option": list(d.shell_option),
    }


@pytest.fixture
def scratch() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="guard-draft-"))
    d.chmod(0o1777)  # reachable after chroot or a change of user
    (d / "x").mkdir()
    (d / "bin").mkdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize(("program", "command"), CASES, ids=[c[1][:40] for c in CASES])
def test_the_draft_runs_what_the_real_program_runs(program: str, command: str, scratch: Path) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here")
    d = _draft_of(program)
    line = command.format(d=scratch, pid=os.getpid())
    log = scratch / "log"
    stand_in = scratch / "bin" / "git"
    stand_in.write_text(f'#!/bin/sh\n{{ pwd; printf "%s\\n" "$@"; }} > {shlex.quote(str(log))}\n')
    stand_in.chmod(0o755)
    proc = subprocess.run(
        ["bash", "-c", line],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{scratch / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(scratch)},
    )
    if not log.exists():
        pytest.skip(f"{program} could not run its command here: {proc.stderr.strip()[:200]}")
    real_cwd, *real_argv = log.read_text().splitlines()

    inner = from_spec(program, _runs(d))(tuple(shlex.split(line)))
    assert inner is not None, render_failure(d)
    argv = shlex.split(inner.shell) if inner.shell is not None else list(inner.argv)
    assert argv == ["git", *real_argv], render_failure(d)
    if (inner.cwd or str(scratch)) != real_cwd:
        # the draft cannot know a flag's effect on the folder: it must have said so
        assert any("working directory" in u for u in d.unclassified), render_failure(d)


def render_failure(d: draft.Draft) -> str:
    return "the draft read:\n" + draft.render(d)


@pytest.mark.parametrize("program", sorted({p for p, _ in CASES}))
def test_the_rendered_draft_is_a_program_spec(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here")
    d = _draft_of(program)
    spec = yaml.safe_load(draft.render(d))[0]
    assert spec["program"] == program
    runs = spec["runs"]
    assert runs.get("with_value", []) == list(d.with_value)
    assert runs.get("with_values", {}) == d.with_values
    assert runs.get("operands", 0) == (d.usage.operands if d.usage else 0)
    assert runs["examples"][0]["runs"] == "git status"


def test_a_program_not_installed_is_one_line() -> None:
    text, why = cli.draft_one("guard-no-such-program-35")
    assert text is None and why == "guard-no-such-program-35: not found on PATH"


def test_a_help_that_hangs_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prog = tmp_path / "hangs"
    prog.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\n")
    prog.chmod(0o755)
    monkeypatch.setattr(cli, "HELP_TIMEOUT", 0.5)
    text, why = cli.draft_one(str(prog))
    assert text is None and why == f"{prog} --help did not finish in 0.5 s"


def test_a_help_of_binary_garbage_is_refused(tmp_path: Path) -> None:
    prog = tmp_path / "garbage"
    prog.write_text("#!/bin/sh\nhead -c 4000 /bin/sh\n")
    prog.chmod(0o755)
    text, why = cli.draft_one(str(prog))
    assert text is None and why == f"{prog} --help printed no text"


def test_the_command_line_exits_2_on_bad_input() -> None:
    guard = shutil.which("guard", path=os.path.dirname(sys.executable))
    if guard is None:
        pytest.skip("the guard entry point is not installed beside this python")
    p = subprocess.run(
        [guard, "rules", "draft", "guard-no-such-program-35"], capture_output=True, text=True, timeout=60
    )
    assert (p.returncode, p.stdout, p.stderr) == (
        2,
        "",
        "guard: rules draft: guard-no-such-program-35: not found on PATH\n",
    )
