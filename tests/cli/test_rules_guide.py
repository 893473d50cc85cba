"""The guides (the rule author's rules/README.md, the user's README.md) are run as written, so
they cannot go stale.

A guide's blocks, in order:

- a ```yaml block whose first line is ``# file: PATH`` is a file the reader writes: it is written
  (whole, that line included, so line numbers in messages match the block) into the folder the
  guide runs in;
- a ```console block holds commands, each on a line starting with ``$ ``, each followed by what it
  prints (stdout and stderr together) and ``[exit N]``, its exit status.

Every command runs, in order, in one bash session in an empty temporary folder (so ``export``
and ``cd`` carry over), with the installed ``guard`` first on PATH and a fresh HOME and cache.
The only thing normalised is that folder's own path, shown as ``/tmp``.

When guard's wording changes on purpose, refresh the expected outputs from the real commands:

    GUARD_README_UPDATE=1 .venv/bin/python -m pytest tests/cli/test_rules_guide.py

then read ``git diff rules/README.md README.md`` before committing them.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GUIDES = {"rules/README.md": 10, "README.md": 2, "docs/rollout.md": 8}  # each guide, and the fewest commands it runs
BLOCK = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
FILE_MARK = re.compile(r"# file: (?P<path>[\w./-]+)\n")
EXIT = re.compile(r"\[exit (\d+)\]")
MARK = "@@guard-guide-exit"


@dataclass
class Command:
    line: str  # without the "$ "
    expected: str  # what it prints, without the [exit N] line
    status: int | None  # the [exit N] the guide shows


@dataclass
class Step:
    start: int  # span of the block in the guide
    end: int
    lang: str
    body: str
    path: str | None = None  # a file to write
    commands: tuple[Command, ...] = ()


def parse_console(body: str) -> tuple[Command, ...]:
    commands: list[Command] = []
    current: list[str] | None = None
    line = ""

    def close() -> None:
        if current is None:
            return
        lines = list(current)
        while lines and not lines[-1].strip():
            lines.pop()
        status = None
        if lines and EXIT.fullmatch(lines[-1].strip()):
            status = int(EXIT.fullmatch(lines.pop().strip()).group(1))  # type: ignore[union-attr]
        commands.append(Command(line, "\n".join(lines), status))

    for text in body.splitlines():
        if text.startswith("$ "):
            close()
            line, current = text[2:], []
        elif current is not None:
            current.append(text)
    close()
    return tuple(commands)


def parse_guide(text: str) -> list[Step]:
    steps = []
    for m in BLOCK.finditer(text):
        lang, body = m.group("lang"), m.group("body")
        if lang == "yaml":
            mark = FILE_MARK.match(body)
            if mark:
                steps.append(Step(m.start(), m.end(), lang, body, path=mark.group("path")))
        elif lang == "console":
            steps.append(Step(m.start(), m.end(), lang, body, commands=parse_console(body)))
    return steps


def script(steps: list[Step]) -> str:
    out = ["set +e"]
    for step in steps:
        if step.path is not None:
            folder = os.path.dirname(step.path)
            if folder:
                out.append(f"mkdir -p '{folder}'")
            out.append(f"cat > '{step.path}' <<'GUARD_GUIDE_EOF'\n{step.body}GUARD_GUIDE_EOF")
        for c in step.commands:
            out.append(f"{{ {c.line}\n}} 2>&1; printf '\\n{MARK} %s@@\\n' \"$?\"")
    return "\n".join(out) + "\n"


def run_guide(steps: list[Step], tmp_path: Path) -> list[tuple[str, int]]:
    work = tmp_path / "guide"
    home = tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "COLUMNS": "100",
        "TERM": "dumb",
    }
    for k in ("PYTHONPATH", "VIRTUAL_ENV"):
        if k in os.environ:
            env[k] = os.environ[k]
    path = tmp_path / "guide.sh"
    path.write_text(script(steps))
    p = subprocess.run(["bash", "--norc", "--noprofile", str(path)], stdin=subprocess.DEVNULL, cwd=work, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.stderr == "", p.stderr
    text = p.stdout.replace(str(tmp_path), "/tmp")
    parts = re.split(rf"\n{MARK} (\d+)@@\n", text)  # output, status, output, status, …, ""
    assert parts[-1] == "", parts[-1]
    return [(out.rstrip("\n"), int(status)) for out, status in zip(parts[0:-1:2], parts[1::2], strict=True)]


def shown(output: str, status: int) -> str:
    lines = [ln.rstrip() for ln in output.splitlines()]
    return "\n".join([*lines, f"[exit {status}]"])


def rewrite(text: str, steps: list[Step], results: list[tuple[str, int]]) -> str:
    it = iter(results)
    out, at = [], 0
    for step in steps:
        if step.lang != "console":
            continue
        parts = [f"$ {c.line}\n{shown(*next(it))}" for c in step.commands]
        out.append(text[at:step.start])
        out.append("```console\n" + "\n\n".join(parts) + "\n```")
        at = step.end
    out.append(text[at:])
    return "".join(out)


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_the_guide_runs_as_written(name: str, tmp_path: Path) -> None:
    if not (Path(sys.executable).parent / "guard").exists():
        pytest.skip("guard is not installed beside this Python")
    guide = REPO / name
    text = guide.read_text()
    steps = parse_guide(text)
    commands = [c for s in steps for c in s.commands]
    assert len(commands) >= GUIDES[name]
    results = run_guide(steps, tmp_path)
    assert len(results) == len(commands)
    if os.environ.get("GUARD_README_UPDATE") == "1":
        guide.write_text(rewrite(text, steps, results))
        return
    wrong = []
    for c, (output, status) in zip(commands, results, strict=True):
        want = "\n".join([*(ln.rstrip() for ln in c.expected.splitlines()), f"[exit {c.status}]"])
        got = shown(output, status)
        if want != got:
            diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "the guide", "the run",
                                                  lineterm=""))
            wrong.append(f"$ {c.line}\n{diff}")
    assert not wrong, (f"{name} is out of date (refresh: GUARD_README_UPDATE=1 pytest "
                       "tests/cli/test_rules_guide.py):\n\n" + "\n\n".join(wrong))


def test_the_rule_guide_writes_files() -> None:
    assert any(s.path for s in parse_guide((REPO / "rules/README.md").read_text()))


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_every_console_command_shows_its_exit_status(name: str) -> None:
    for step in parse_guide((REPO / name).read_text()):
        for c in step.commands:
            assert c.status is not None, f"{name}: $ {c.line}: no [exit N] line after its output"


def test_the_parser_reads_files_and_commands() -> None:
    text = ("x\n```yaml\n# file: a/b.yaml\nk: 1\n```\n```yaml\nnot: written\n```\n"
            "```console\n$ echo hi\nhi\n[exit 0]\n\n$ false\n[exit 1]\n```\n")
    steps = parse_guide(text)
    assert [s.path for s in steps] == ["a/b.yaml", None]
    assert steps[0].body == "# file: a/b.yaml\nk: 1\n"
    assert steps[1].commands == (Command("echo hi", "hi", 0), Command("false", "", 1))
