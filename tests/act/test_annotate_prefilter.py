"""The deferred sink in front of the annotator: the same annotations as the annotator fed from
the first byte, on real recorded stderr and every rule example at every chunking, while ordinary
stderr never builds the annotator (nor imports re, json or RE2)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from guard.act import prefilter
from guard.act.annotate import Annotator, load_rules
from guard.act.matcher import WINDOW
from guard.ruleset import needles as rulefiles
from guard.ruleset import paths as rulepaths
from tests.act.stderr_fixtures import Sample, samples

REPO = Path(__file__).resolve().parents[2]


def _annotator(env: dict[str, str], in_tree: bool, programs: tuple[str, ...] = ("git",),
               command: str = "git clone x") -> Annotator:
    import shlex

    return Annotator(load_rules(), env=env, in_tree=in_tree, programs=programs, command=command,
                     argvs=[shlex.split(command)], audit=False)


def _both(body: bytes, env: dict[str, str], in_tree: bool, chunks: list[int],
          programs: tuple[str, ...] = ("git",), command: str = "git clone x") -> tuple[bytes, bytes, bool]:
    """(annotator fed directly, through the deferred sink, whether the sink built it)."""
    direct = _annotator(env, in_tree, programs, command)
    needles, eager = prefilter.rule_set_needles({})
    assert not eager
    deferred = prefilter.DeferredSink(lambda: _annotator(env, in_tree, programs, command), needles)
    i = 0
    for size in chunks:
        if i >= len(body):
            break
        piece = bytearray(body[i : i + size]) + b"JUNK"  # the relay reuses a longer buffer
        direct.feed(piece, min(size, len(body) - i))
        deferred.feed(piece, min(size, len(body) - i))
        i += size
    if i < len(body):
        direct.feed(body[i:])
        deferred.feed(body[i:])
    return direct.finish(1), deferred.finish(1), deferred.real is not None


def _chunkings(n: int, seed: int) -> list[list[int]]:
    rnd = random.Random(seed)
    return [[1 << 20], [1] * n, [7] * (n // 7 + 1), [rnd.randint(1, 200) for _ in range(n)]]


def _example_env() -> dict[str, str]:
    return {"GIT_TERMINAL_PROMPT": "0"}


POSITIVE = [s for s in samples() if s.expect]


@pytest.mark.parametrize("sample", POSITIVE, ids=[s.name for s in POSITIVE])
def test_recorded_stderr_gets_the_same_annotations_at_every_chunking(sample: Sample) -> None:
    body = sample.stderr()
    for k, chunks in enumerate(_chunkings(len(body), seed=len(body))):
        direct, deferred, built = _both(body, sample.env, sample.in_tree, chunks, (sample.program,), sample.command)
        assert deferred == direct, (sample.name, k)
        assert direct and built


def test_every_rule_example_gets_the_same_annotation_through_the_deferred_sink() -> None:
    examples = 0
    for rule in load_rules():
        for ex in (*rule.must, *rule.must_not):
            env = {**_example_env(), **(ex.env or {})}
            in_tree = ex.cwd_in_tree if ex.cwd_in_tree is not None else bool(rule.cwd_in_tree)
            body = ex.stderr.encode()
            for chunks in _chunkings(len(body), seed=examples):
                direct, deferred, _ = _both(body, env, in_tree, chunks)
                assert deferred == direct, (rule.id, ex.stderr[:80])
            examples += 1
    assert examples >= 40


def test_a_match_behind_a_long_unfinished_line_is_found_as_the_annotator_finds_it() -> None:
    line = b" " * (3 * WINDOW) + b"fatal: could not read Username for 'https://github.com': terminal prompts disabled\n"
    body = b"ordinary output\n" * 50 + line + b"more\n"
    env = _example_env()
    for chunks in ([4096] * 200, [1] * len(body), [WINDOW - 1] * 50, [len(body)]):
        direct, deferred, built = _both(body, env, False, chunks)
        assert deferred == direct and b"git_clone" in direct and built


def test_ordinary_stderr_never_builds_the_annotator() -> None:
    needles, _ = prefilter.rule_set_needles({})
    built = []
    sink = prefilter.DeferredSink(lambda: built.append(1), needles)
    for _ in range(100):
        sink.feed(b"warning: unused variable `x`\n   Compiling foo v0.1.0\n")
    assert sink.finish(0) == b"" and built == []


def test_past_the_switch_size_the_annotator_takes_over_and_still_fires() -> None:
    needles, _ = prefilter.rule_set_needles({})
    env = _example_env()
    sink = prefilter.DeferredSink(lambda: _annotator(env, False), needles)
    block = b"an ordinary build log line\n" * 1000
    fed = 0
    while fed <= prefilter.SWITCH_BYTES:
        sink.feed(block)
        fed += len(block)
    assert sink.real is not None
    sink.feed(b"fatal: could not read Username for 'https://github.com': terminal prompts disabled\n")
    assert b"[guard] " in sink.finish(128)


def test_the_digest_is_written_once_found_again_and_follows_rule_edits(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "GUARD_RULES": str(tmp_path / "mine.yaml")}
    mine = tmp_path / "mine.yaml"
    mine.write_text("annotations:\n  - id: acme-token\n    pattern: 'ACME-TOKEN-EXPIRED'\n"
                    "    message: 'the acme token expired'\n")
    sink = prefilter.sink_for_run(["sh"], env, cwd="/", command="sh")
    assert isinstance(sink, prefilter.DeferredSink)
    key = rulefiles.digest_key(rulepaths.expand(rulepaths.stderr_paths(env)))
    needles, eager = rulefiles.read_digest(env, key) or ((), True)
    assert b"ACME-TOKEN-EXPIRED" in needles and not eager
    sink.feed(b"build step 3\nerror: ACME-TOKEN-EXPIRED\n")
    assert sink.finish(1) == b"[guard] the acme token expired\n"
    mine.write_text(mine.read_text().replace("ACME-TOKEN-EXPIRED", "ACME-KEY-REVOKED"))
    key2 = rulefiles.digest_key(rulepaths.expand(rulepaths.stderr_paths(env)))
    assert key2 != key and rulefiles.read_digest(env, key2) is None
    sink = prefilter.sink_for_run(["sh"], env, cwd="/", command="sh")
    sink.feed(b"error: ACME-KEY-REVOKED\n")
    assert sink.finish(1) == b"[guard] the acme token expired\n"


def test_rule_files_with_problems_build_the_annotator_at_once_and_warn_as_before(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("annotations:\n  - id: Bad Id\n    pattern: x\n    message: m\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "GUARD_RULES": str(broken)}
    code = ("import os, sys\nfrom guard.act import prefilter\n"
            "env = {k: os.environ[k] for k in ('XDG_CACHE_HOME', 'GUARD_RULES')}\n"
            "for _ in range(2):\n"
            "    s = prefilter.sink_for_run(['sh'], env, cwd='/', command='sh')\n"
            "    print(type(s).__name__)\n")
    p = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, cwd=REPO, capture_output=True, text=True)
    assert p.stdout.split() == ["Annotator", "Annotator"]
    assert p.stderr.count("guard: warning: ") == 2 and "broken.yaml" in p.stderr


def test_a_run_with_ordinary_stderr_loads_no_rules_and_no_matcher(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "GUARD_AUDIT_LOG": str(tmp_path / "a.jsonl")}
    env.pop("GUARD_ANNOTATING", None)
    code = ("import sys\nfrom guard.act import relay\n"
            "status = relay.run(['sh', '-c', 'echo compiling >&2; echo warning: x >&2; exit 2'])\n"
            "heavy = [m for m in ('re2', 'json', 'yaml', 'guard.act.annotate', 'guard.ruleset.annotations')"
            " if m in sys.modules]\n"
            "print(status, *heavy)\n")
    first = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    assert first.stderr == "compiling\nwarning: x\n"  # the first run writes the digest
    again = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    assert again.stderr == "compiling\nwarning: x\n"
    assert again.stdout.split() == ["2"]
