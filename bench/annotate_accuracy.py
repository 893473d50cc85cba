"""Recall and precision of the shipped stderr rules on the recorded samples (fixtures/stderr/).

Every sample is run through the annotator with the facts classify gives it (program, argv,
tree); an expected annotation that appears word for word is a hit, an expected one missing is
a miss, any other is extra. Also the quoted forms of every rule example (tests/act/
test_annotate_fixtures.py), each of which must stay quiet. Prints one line per rule with the
tools and versions its positive samples came from, then the totals.

    .venv/bin/python bench/annotate_accuracy.py
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from guard.act.annotate import Annotator, load_rules  # noqa: E402
from tests.act.stderr_fixtures import annotate, samples  # noqa: E402
from tests.act.test_annotate_fixtures import QUOTED  # noqa: E402


def main() -> int:
    rules = load_rules(None, env={})
    per_rule: dict[str, dict[str, int]] = defaultdict(lambda: {"pos": 0, "hit": 0, "extra": 0})
    tools: dict[str, set[str]] = defaultdict(set)
    pos = neg = hits = misses = extra = wrong_words = 0
    for s in samples():
        fired, lines = annotate(s, rules)
        want = s.expected_lines
        if s.expect:
            pos += 1
        else:
            neg += 1
        for rid, line in zip(s.expect, want, strict=True):
            per_rule[rid]["pos"] += 1
            tools[rid].add(s.meta.get("tool", "?") + ("" if s.meta.get("produced by", "").startswith("real") else " (hand-written)"))
            if rid in fired and line in lines:
                per_rule[rid]["hit"] += 1
                hits += 1
            else:
                misses += 1
                if rid in fired:
                    wrong_words += 1
        for rid in fired:
            if rid not in s.expect:
                per_rule[rid]["extra"] += 1
                extra += 1
    quoted_extra = 0
    for _name, text, program, _rid in QUOTED:
        ann = Annotator(rules, env={"GIT_TERMINAL_PROMPT": "0"}, in_tree=True, programs=(program or "sh",),
                        argvs=(), command="", audit=False)
        ann.feed(text.encode())
        quoted_extra += bool(ann.finish(1))
    for r in rules:
        c = per_rule[r.id]
        used = ", ".join(sorted(tools[r.id])) or "rule examples only"
        print(f"{r.id:32s} positives {c['pos']:3d}  hits {c['hit']:3d}  extra {c['extra']:2d}  tested: {used}")
    total = hits + extra
    print(f"\nsamples: {pos} positive, {neg} negative (files); quoted negatives: {len(QUOTED)}")
    print(f"expected annotations: {hits + misses}, produced word for word: {hits}, missing: {misses}"
          f" (fired with other words: {wrong_words}), extra: {extra}, extra on quoted text: {quoted_extra}")
    recall = hits / (hits + misses) if hits + misses else 1.0
    precision = hits / (total + quoted_extra) if total + quoted_extra else 1.0
    print(f"recall {recall:.3f}  precision {precision:.3f}")
    return 0 if not misses and not extra and not quoted_extra else 1


if __name__ == "__main__":
    sys.exit(main())
