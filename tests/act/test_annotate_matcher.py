"""The line matcher: linear RE2, bounded window, once per pattern, never across lines."""

from __future__ import annotations

import os

import pytest

from guard.act import matcher
from guard.act.matcher import StreamMatcher, compile_pattern

PAT = compile_pattern(r"could not read Username for '(?P<url>[^']+)': terminal prompts disabled")
LINE = b"fatal: could not read Username for 'https://h': terminal prompts disabled"


@pytest.fixture(autouse=True, params=["literals", "re2"])
def gate(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with both gates: the SIMD literal search and, where it is not installed,
    the RE2 pass over the literals."""
    if request.param == "re2":
        monkeypatch.setattr(matcher, "literal_gate", lambda literals: None)
    else:
        pytest.importorskip("ahocorasick_rs")
    return str(request.param)


def feed_all(m: StreamMatcher, data: bytes, chunk: int) -> None:
    for i in range(0, len(data), chunk):
        m.feed(data[i : i + chunk])
    m.close()


@pytest.mark.parametrize("chunk", [1, 3, 17, 4096, 1 << 20])
def test_found_whatever_the_chunking(chunk: int) -> None:
    m = StreamMatcher([("k", PAT)])
    feed_all(m, b"noise\n" * 100 + LINE + b"\nmore\n", chunk)
    assert m.hits == {"k": {"url": b"https://h"}}


def test_found_in_a_last_line_without_newline() -> None:
    m = StreamMatcher([("k", PAT)])
    feed_all(m, b"x\n" + LINE, 5)
    assert "k" in m.hits


def test_a_match_never_spans_lines() -> None:
    pat = compile_pattern(r"read Username for '[^']*': terminal")
    m = StreamMatcher([("k", pat)])
    feed_all(m, b"read Username for 'a\nb': terminal\n", 1 << 20)
    assert m.hits == {}


def test_a_huge_line_keeps_only_a_bounded_tail_and_still_sees_its_end() -> None:
    m = StreamMatcher([("k", PAT)], window=8192)
    junk = b"\xff\x00" * (5 << 20)  # a 10 MB line, binary
    for i in range(0, len(junk), 65536):
        m.feed(junk[i : i + 65536])
        assert len(m._tail) <= 8192
    m.feed(b" " + LINE[:20])
    m.feed(LINE[20:] + b"\n")
    assert "k" in m.hits


def test_relay_buffer_reuse_is_safe() -> None:
    m = StreamMatcher([("k", PAT)])
    buf = bytearray(64)
    data = LINE + b"\n"
    for i in range(0, len(data), 64):
        piece = data[i : i + 64]
        buf[: len(piece)] = piece
        m.feed(buf, len(piece))
        buf[:] = b"\0" * 64  # the relay overwrites its buffer on the next read
    assert m.hits["k"]["url"] == b"https://h"


def test_each_pattern_reports_its_first_match_once_then_leaves_the_set() -> None:
    m = StreamMatcher([("k", PAT)])
    m.feed(LINE + b"\n")
    assert not m.idle or m.hits
    m.feed(LINE.replace(b"https://h", b"https://other") + b"\n")
    assert m.hits["k"]["url"] == b"https://h"
    assert m.idle  # nothing left to look for: later output costs nothing


def test_hostile_near_misses_stay_linear() -> None:
    # A line crafted against the pattern: endless almost-matches. RE2 has no backtracking, so
    # this is one pass; with a backtracking engine and a pattern like (a+)+$ it would not end.
    evil = compile_pattern(r"(a+)+b")
    m = StreamMatcher([("k", evil)])
    m.feed(b"a" * 2_000_000 + b"\n")
    m.feed((b"fatal: could not read Username for '" + b"'" * 1000 + b"\n") * 1000)
    m.close()
    assert m.hits == {}


def test_rejects_patterns_re2_cannot_run_in_linear_time() -> None:
    for bad in (r"(a)\1", r"(?=x)y", r"(?<!x)y"):
        with pytest.raises(ValueError):
            compile_pattern(bad)


def test_watch_collects_prefixed_lines() -> None:
    watch = compile_pattern(r"^\[guard\] .*")
    m = StreamMatcher([], watch=watch)
    m.feed(b"a\n[guard] one\r\nb [guard] not at start\n[guard] two")
    m.close()
    assert m.seen == [b"[guard] one", b"[guard] two"]


# --------------------------------------------------------------------------- large chunks


BIG = b"an ordinary build log line that matches no rule\n" * 40_000  # ~2 MB: gated in two halves


@pytest.mark.parametrize("where", [0.0, 0.25, 0.75, 1.0])
def test_a_large_chunk_is_scanned_whole_wherever_the_match_lies(where: float) -> None:
    assert len(BIG) > 2 * matcher.SPLIT
    cut = BIG.rfind(b"\n", 0, int(len(BIG) * where)) + 1
    m = StreamMatcher([("k", PAT)])
    m.feed(b"a carried tail, ")  # the first line continues it
    m.feed(BIG[:cut] + LINE + b"\n" + BIG[cut:])
    assert m.hits == {"k": {"url": b"https://h"}}


def test_a_large_chunk_reports_the_first_match_in_stream_order(gate: str) -> None:
    half = len(BIG) // 2
    early = BIG[:half] + LINE.replace(b"https://h", b"https://first") + b"\n"
    late = BIG[half:] + LINE.replace(b"https://h", b"https://second") + b"\n"
    m = StreamMatcher([("k", PAT)])
    buf = bytearray(early + late)
    m.feed(buf, len(buf))
    assert m.hits["k"]["url"] == b"https://first"
    if gate == "re2" and len(os.sched_getaffinity(0)) > 1:
        assert isinstance(m._helper, matcher._Helper)  # the halves were gated on two threads
    assert isinstance(m.hits["k"]["url"], bytes)  # not a view of the caller's buffer


def test_a_large_chunk_on_a_single_cpu_stays_on_one_thread(monkeypatch: pytest.MonkeyPatch, gate: str) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    m = StreamMatcher([("k", PAT)])
    m.feed(BIG + LINE + b"\n" + BIG)
    # the literal search needs no second thread: it never starts one
    assert m._helper is (False if gate == "re2" else None) and m.hits == {"k": {"url": b"https://h"}}


def test_a_large_chunk_with_one_huge_line_and_no_midpoint_newline() -> None:
    m = StreamMatcher([("k", PAT)])
    m.feed(b"x\n" + b"y" * (3 * matcher.SPLIT) + b" " + LINE + b"\nrest")
    assert "k" in m.hits


def test_watch_stops_at_its_cap_and_then_costs_nothing() -> None:
    watch = compile_pattern(r"^\[guard\] .*")
    m = StreamMatcher([], watch=watch)
    m.feed(b"[guard] x\n" * 100)
    assert len(m.seen) == 64 and m.idle


def test_a_posix_class_gets_no_needles_so_its_matches_are_still_found() -> None:
    from guard.act.matcher import StreamMatcher, compile_pattern, needles

    pattern = "[[:alpha:]]: permission denied"
    assert needles(pattern) is None
    m = StreamMatcher([("k", compile_pattern(pattern))])
    m.feed(b"log line\nx: permission denied\n")
    assert "k" in m.hits


class _EveryRegion(StreamMatcher):
    """The reference: no gate, every region gets the closer look."""

    def _build_gate(self) -> None:
        super()._build_gate()
        self._gate = None


_PATTERNS = [
    ("auth", PAT),
    ("repo", compile_pattern(r"^fatal: repository '(?P<url>[^']+)' not found")),
    ("go", compile_pattern(r"go: (?P<mod>\S+): reading .*: 410 Gone")),
    ("cap", compile_pattern(r"Updating git repository `(?P<url>[^`]+)`")),
]
_WATCH = compile_pattern(r"^\[guard\] .*")
_PIECES = [
    b"an ordinary build log line that matches no rule\n",
    b"fatal: could not read Username for 'https://h%d': terminal prompts disabled\n",
    b"fatal: could not read Username for 'https://h': terminal prompts\n",  # a near miss
    b"fatal: repository 'https://x/r%d' not found\n",
    b"  fatal: repository 'https://indented' not found\n",  # anchored: no match
    b"go: example.com/m%d: reading https://proxy/x: 410 Gone\n",
    b"go: downloading example.com/m v1.0.0\n",
    b"    Updating git repository `https://g/%d`\n",
    b"[guard] an earlier note %d\n",
    b"\x00\xff" * 3000,
    b"y" * 9000 + b"\n",
    b"no newline at all, ",
]


def _stream(seed: int) -> bytes:
    import random

    rnd = random.Random(seed)
    out = bytearray()
    while len(out) < 300_000:
        piece = rnd.choice(_PIECES)
        if b"%d" in piece:
            piece = piece % rnd.randrange(1000)
        if rnd.random() < 0.2:  # put the next piece across a slice or chunk boundary
            edge = (len(out) // matcher.LITERAL_SLICE + 1) * matcher.LITERAL_SLICE - rnd.randrange(len(piece))
            out += b"z" * max(0, edge - len(out) - 1) + b"\n"
        out += piece
    return bytes(out)


@pytest.mark.parametrize("seed", range(12))
def test_the_gate_finds_what_a_look_at_every_region_finds(seed: int) -> None:
    import random

    data = _stream(seed)
    rnd = random.Random(seed)
    got = StreamMatcher(_PATTERNS, watch=_WATCH, keep={"cap"})
    ref = _EveryRegion(_PATTERNS, watch=_WATCH, keep={"cap"})
    buf = bytearray(1 << 20)  # reused as the relay reuses its buffer
    i = 0
    while i < len(data):
        k = rnd.choice([1, 5, 100, 4096, 65536, 65537, 200_000, 1 << 20])
        piece = data[i : i + k]
        buf[: len(piece)] = piece
        got.feed(buf, len(piece))
        ref.feed(piece)
        i += k
    got.close()
    ref.close()
    assert got.hits == ref.hits and got.seen == ref.seen
    assert got.hits  # the stream holds matches: the comparison is not between two empty sets


def test_literal_lines_cover_every_occurrence_even_overlapping_ones() -> None:
    import random

    ac = pytest.importorskip("ahocorasick_rs")
    lits = [b"Failed to ", b"iled to authenticate", b"go: ", b"o: x", b"module "] + [b"lit%02d " % i for i in range(40)]
    gate = matcher.Literals(lits, ac)
    rnd = random.Random(7)
    words = [*lits, b"\n", b" ", b"xx", b"Faile", b"d to "]
    for _ in range(30):
        data = b"".join(rnd.choice(words) for _ in range(rnd.randrange(1, 40000)))
        lo = rnd.randrange(0, 10)
        spans = gate.lines(data, lo, len(data))
        assert spans == sorted(spans)
        for lit in lits:
            at = data.find(lit, lo)
            while at >= 0:
                end = at + len(lit)
                assert any(a <= at and end <= b for a, b in spans), (lit, at)
                at = data.find(lit, at + 1)
        for a, b in spans:  # whole lines: from a line start to a line end
            assert a == lo or data[a - 1 : a] == b"\n"
            assert b == len(data) or data[b : b + 1] == b"\n"
