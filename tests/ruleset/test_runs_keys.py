"""The runs: keys that need a coherent value (cwd_operand, with_values) are checked when the rules
load: a mistake is one lint line, never a handler that reads the argv wrongly."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.cli import rules as cli

SPEC = """programs:
  - program: myroot
    description: runs a command at a new root
    subcommand: false
    runs:
      operands: 1
{keys}
      examples:
        - {{command: "myroot /srv git status", runs: "git status"}}
"""


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ("      cwd_operand: 2", "cwd_operand 2 is not one of its 1 operands"),
        ("      with_values: {--bind: 5}", "with_values takes options and counts from 2 to 4, not --bind: 5"),
        ("      with_values: {bind: 2}", "with_values takes options and counts from 2 to 4, not bind: 2"),
    ],
)
def test_an_incoherent_runs_key_is_a_lint_mistake(
    keys: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(SPEC.format(keys=keys))
    assert cli.main(["lint", str(f)]) == 1
    assert f"programs[0].runs: cannot be read: {said}" in capsys.readouterr().out


def test_coherent_keys_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(
        SPEC.format(keys="      cwd_operand: 1\n      keep_cwd: [--here]\n      with_values: {--bind: 2}")
    )
    assert cli.main(["lint", str(f)]) == 0, capsys.readouterr().out
