"""The line matcher: linear RE2, bounded window, once per pattern, never across lines."""

from __future__ import annotations

import pytest

from guard.act.matcher import StreamMatcher, compile_pattern

PAT = compile_pattern(r"could not read Username for '(?P<url>[^']+)': terminal prompts disabled")
LINE = b"fatal: could not read Username for 'https://h': terminal prompts disabled"


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
