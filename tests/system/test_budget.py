"""guard/system/budget.py's framing and its deep per-worker queues: frames survive any cut of the reads,
and a worker holding many requests still costs a broken budget only its own request, in order,
without either side blocking on the other's full pipe."""

from __future__ import annotations

import os
import random
import signal
import time

from guard.system import budget


def _frame(kind: bytes, body: bytes) -> bytes:
    return budget._HEADER.pack(kind, len(body)) + body


def test_frames_come_out_whole_however_the_reads_cut_them() -> None:
    rng = random.Random(7)
    bodies = [bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 5, 300, 5000)))) for _ in range(200)]
    wire = b"".join(_frame(b"O", b) for b in bodies)
    for _ in range(20):
        frames, got, at = budget.Frames(), [], 0
        while at < len(wire):
            step = rng.choice((1, 2, 3, 7, 64, 4096, 70_000))
            frames.feed(wire[at : at + step])
            at += step
            while (f := frames.take()) is not None:
                got.append(f)
            assert frames.need() >= 1  # once every whole frame is taken, more is needed
        assert got == [(b"O", b) for b in bodies]
        assert frames.take() is None and frames.need() == budget._HEADER.size


def test_frames_say_how_much_completes_a_large_frame() -> None:
    frames = budget.Frames()
    wire = _frame(b"O", b"x" * 1_000_000)
    frames.feed(wire[:10])
    assert frames.need() == len(wire) - 10
    frames.feed(wire[10:])
    assert frames.take() == (b"O", b"x" * 1_000_000)


def _handle(req: bytes) -> bytes:
    if req == b"loop":
        while True:
            pass
    if req == b"crash":
        import faulthandler

        faulthandler.disable()  # the worker is a fork of this process: no stack dump from it
        os.kill(os.getpid(), signal.SIGSEGV)
    if req.startswith(b"big"):
        return b"y" * 200_000
    return req.upper()


def _run(pool: budget.Pool, reqs: list[bytes], limit: float = 120) -> dict[int, budget.Outcome]:
    got: dict[int, budget.Outcome] = {}
    deadline = time.monotonic() + limit
    i = 0
    while len(got) < len(reqs) and time.monotonic() < deadline:
        while i < len(reqs) and pool.take(i, reqs[i]):
            i += 1
        for key, outcome in pool.poll(None)[0]:
            assert key not in got
            got[key] = outcome  # type: ignore[index]
    return got


def test_a_deep_queue_costs_a_broken_budget_only_its_own_request() -> None:
    # forty requests queued on one worker, a loop and a crash among them: the worker is replaced
    # twice, and every other request is answered by one worker or the next, its own answer
    reqs = [f"r{i}".encode() for i in range(40)]
    reqs[7], reqs[23] = b"loop", b"crash"
    pool = budget.Pool(_handle, jobs=1, seconds=0.3, memory_mib=256, depth=32)
    try:
        got = _run(pool, reqs)
    finally:
        pool.stop()
    assert [(got[i].kind, got[i].answer) for i in range(len(reqs))] == [
        ("time", None) if r == b"loop" else ("crash", None) if r == b"crash" else ("ok", r.upper()) for r in reqs]


def test_deep_queues_of_large_answers_block_neither_side() -> None:
    # every answer is larger than the answer pipe and every request small enough to be queued:
    # the parent must keep reading answers while it still has requests to hand over
    reqs = [b"big%d" % i for i in range(300)]
    pool = budget.Pool(_handle, jobs=2, seconds=30, depth=32)
    try:
        got = _run(pool, reqs, limit=60)
    finally:
        pool.stop()
    assert len(got) == len(reqs)
    assert {(o.kind, len(o.answer or b"")) for o in got.values()} == {("ok", 200_000)}


def test_a_worker_holds_no_more_requests_than_its_pipe_has_pages_for() -> None:
    pool = budget.Pool(_handle, jobs=1, seconds=30, depth=10_000)
    try:
        taken = 0
        while pool.take(taken, b"s" * 4000):  # each request a page of the pipe
            taken += 1
        pages = budget._pipe_pages(pool._slots[0].worker.req_w)
        assert 1 < taken <= pages - 1
        got: dict = {}
        deadline = time.monotonic() + 60
        while len(got) < taken and time.monotonic() < deadline:
            got.update(pool.poll(None)[0])
        assert sorted(got) == list(range(taken))
        assert {o.answer for o in got.values()} == {b"S" * 4000}
    finally:
        pool.stop()


def _large(_: bytes) -> bytes:
    return b"y" * (8 << 20)


def test_an_answer_partly_read_is_not_charged_as_over_the_budget() -> None:
    # the answer is 128 reads long and the parent, slow between polls, takes longer than three
    # times the 0.3 s budget to read it: the request was done when its answer began to arrive,
    # so it is the answer, not a time-out
    pool = budget.Pool(_large, jobs=1, seconds=0.3)
    got: list = []
    try:
        assert pool.take(0, b"x")
        deadline = time.monotonic() + 60
        while not got and time.monotonic() < deadline:
            got += pool.poll(None)[0]
            time.sleep(0.02)  # a parent busy elsewhere between polls
    finally:
        pool.stop()
    assert [(k, o.kind, len(o.answer or b"")) for k, o in got] == [(0, "ok", 8 << 20)]
