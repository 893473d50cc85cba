"""guard-shell is indistinguishable from bash for allowed commands.

Every case of fixtures/shell/differential.txt runs under the real shell and under guard-shell
with the same argv, stdin, environment and (emptied) scratch directory, outside any tree; stdout,
stderr and the exit status must be identical byte for byte. The runs happen in parallel once per
session; each case is its own test.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import shellkit

CASES = shellkit.load_differential()
DEFAULT_STDIN = b"alpha\nbeta\ngamma\n"


def _run(program: str, case: dict, base: Path) -> tuple[bytes, bytes, int]:
    scratch, home, tree = base / "scratch", base / "home", base / "tree"
    for d in (scratch, home):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    tree.mkdir(exist_ok=True)
    if "script" in case:
        (scratch / "script.sh").write_text(case["script"])
    stdin = case["stdin"].encode() if "stdin" in case else DEFAULT_STDIN
    env = shellkit.base_env(home, tree)
    try:
        p = subprocess.run(
            [program, *case["argv"]],
            executable=program,
            input=stdin,
            capture_output=True,
            cwd=scratch,
            env=env,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        return b"", b"TIMEOUT", -999
    return p.stdout, p.stderr, p.returncode


@pytest.fixture(scope="module")
def results(checked_shell: str, tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple]:
    root = tmp_path_factory.mktemp("differential")

    def both(case: dict) -> tuple[int, tuple]:
        base = root / str(case["line"])
        expected = _run(shellkit.REAL_SHELL, case, base)
        got = _run(checked_shell, case, base)
        return case["line"], (expected, got)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(both, CASES))


def test_enough_cases() -> None:
    assert len(CASES) >= 300


@pytest.mark.parametrize("case", CASES, ids=[f"line{c['line']}" for c in CASES])
def test_same_as_bash(case: dict, results: dict[int, tuple]) -> None:
    expected, got = results[case["line"]]
    assert got[2] == expected[2], f"exit status differs for {case['argv']}: stderr={got[1]!r}"
    assert got[0] == expected[0], f"stdout differs for {case['argv']}"
    assert got[1] == expected[1], f"stderr differs for {case['argv']}: {got[1][:300]!r}"
