"""guard.system.fdio.Lines: the lines of a stream as they arrive, whatever the chunks they come in,
with a line over the limit cut to its head and the stream going on after it."""

from __future__ import annotations

import io
import os
import random
import threading

import pytest

from guard.system.fdio import Lines


def by_readline(data: bytes, limit: int) -> list[tuple[bytes, bool]]:
    """The same lines read with ``readline(limit + 1)``, as ``guard check --jsonl`` read them."""
    f, out = io.BytesIO(data), []
    while line := f.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            head = line[:4096]
            while (rest := f.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            out.append((head, True))
        else:
            out.append((line.rstrip(b"\r\n"), False))
    return out


def by_lines(data: bytes, limit: int, chunk: int) -> list[tuple[bytes, bool]]:
    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, data) if data else None, os.close(w)))
    writer.start()
    lines, out = Lines(r, limit, chunk=chunk), []
    try:
        while not lines.eof:
            lines.fill()
            while (item := lines.take()) is not None:
                out.append(item)
        while (item := lines.take()) is not None:
            out.append(item)
    finally:
        writer.join()
        os.close(r)
    return out


def random_stream(rng: random.Random, limit: int) -> bytes:
    parts = []
    for _ in range(rng.randrange(0, 30)):
        n = rng.choice([0, 1, 5, limit - 1, limit, limit + 1, limit + 2, 3 * limit, 5000])
        body = bytes(rng.choice(b"ab \r{}\"") for _ in range(n))
        parts.append(body + rng.choice([b"\n", b"\r\n", b"\n\n", b"\r\r\n"]))
    if rng.random() < 0.5:
        parts.append(bytes(rng.choice(b"xy\r") for _ in range(rng.choice([1, limit, limit + 3]))))
    return b"".join(parts)


@pytest.mark.parametrize("seed", range(60))
def test_lines_match_readline_whatever_the_chunks(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.choice([1, 8, 64, 5000])
    data = random_stream(rng, limit)
    assert by_lines(data, limit, chunk=rng.choice([1, 3, 7, 64, 4096, 1 << 16])) == by_readline(data, limit)


def test_a_line_over_the_limit_keeps_only_its_head() -> None:
    data = b"a\n" + b"x" * 100_000 + b"\nb\n"
    assert by_lines(data, 10_000, chunk=1 << 16) == [(b"a", False), (b"x" * 4096, True), (b"b", False)]


def test_empty_input_has_no_lines() -> None:
    assert by_lines(b"", 10, chunk=16) == []
