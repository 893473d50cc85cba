"""Every command of the shared corpus and the peers' test suites through the full analysis:
no exception, a verdict for each, and no refusal without a reason a person can see."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from guard.context import Context
from guard.engine import analyze

# A refusal must rest on something the command visibly does with git, GitHub, HTTP or secrets.
VISIBLE = re.compile(r"\b(git|gh)\b|git[a-z-]*|curl|wget|http|env|printenv|TOKEN|credential|netrc|\.git|ghp_|github_pat|"
                     r"environ|eval|base64|xxd|\$\(|`|\\|python|node|perl|ruby|php|awk|make|npm|alias|declare|set|compgen",
                     re.I)


def _lines(path):
    with path.open(encoding="utf-8") as f:  # not splitlines(): commands may hold U+2028
        return [json.loads(x)["command"] for x in f if x.strip()]


@pytest.mark.parametrize("name", ["corpus/agent-commands.jsonl", "corpus/syntax-probe.jsonl", "peers/codex-cases.jsonl",
                                  "peers/dcg-cases.jsonl", "peers/safety-net-cases.jsonl"])
def test_no_command_breaks_the_analysis(shared, name: str) -> None:
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    verdicts: Counter[str] = Counter()
    unexplained = []
    for cmd in _lines(shared / name):
        v = analyze(cmd, ctx)
        verdicts[v.verdict] += 1
        if v.verdict == "refuse":
            assert v.message and v.category and v.rule
            if not VISIBLE.search(cmd):
                unexplained.append(cmd[:120])
    assert set(verdicts) <= {"allow", "refuse"}
    assert not unexplained, unexplained[:10]
    if name.startswith("corpus/syntax-probe"):
        assert verdicts["refuse"] == 0  # written for the parser: none runs git
