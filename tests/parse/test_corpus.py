"""Every syntax probe parses; the whole agent corpus and the peers' cases parse without exceptions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from guard.parse import parse


def _commands(path: Path) -> list[str]:
    return [json.loads(line)["command"] for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def test_syntax_probe_all_parse(shared: Path) -> None:
    share: Counter[str] = Counter()
    for cmd in _commands(shared / "corpus" / "syntax-probe.jsonl"):
        script = parse(cmd)
        share[script.parser] += 1
        assert script.parser != "none", (cmd, script.error)
        comment_only = all(not ln.strip() or ln.strip().startswith("#") for ln in cmd.split("\n"))
        assert (script.body is None) == comment_only, cmd
    print("syntax-probe parser share:", dict(share))
    assert share["tree-sitter"] > 0.9 * sum(share.values())


def test_corpus_crash_free(shared: Path) -> None:
    files = [shared / "corpus" / "agent-commands.jsonl", *sorted((shared / "peers").glob("*.jsonl"))]
    for path in files:
        share: Counter[str] = Counter()
        commands = _commands(path)
        for cmd in commands:
            share[parse(cmd).parser] += 1  # must not raise
        total = len(commands)
        print(f"{path.name}: {total} commands,",
              ", ".join(f"{k} {v} ({100 * v / total:.2f} %)" for k, v in share.most_common()))
        assert sum(share.values()) == total
