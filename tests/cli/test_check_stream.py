"""``guard check --jsonl`` as a long-running stream: one answer per line, in order, the id echoed
whatever the line holds, and no line able to stall, kill or read the stream.

Also the budgeted worker itself (guard/system/budget.py) with handlers that loop, sleep, allocate and
crash: each costs only its own line.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from guard.cli.check import partial_answer, salvage_id
from guard.system import budget
from tests.cli import fuzzgen
from tests.conftest import guard_bin

CORPUS = ["corpus/agent-commands.jsonl", "corpus/syntax-probe.jsonl", "peers/codex-cases.jsonl",
          "peers/dcg-cases.jsonl", "peers/safety-net-cases.jsonl"]


@contextlib.contextmanager
def piped(argv: list[str], **kw: object):
    """A stream process with stdin and stdout on pipes, killed if the test leaves it running."""
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, **kw)  # type: ignore[call-overload]
    assert p.stdin is not None and p.stdout is not None
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def stream(lines: list[bytes], *args: str, timeout: float = 900, memory_mib: int | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    def limit() -> None:
        if memory_mib:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mib << 20, memory_mib << 20))

    e = dict(os.environ)
    e.pop("GUARD_FAIL", None)
    e.update(env or {})
    return subprocess.run([guard_bin(), "check", "--jsonl", "--tree", "/workspace", "--cwd", "/workspace/app", *args],
                          input=b"".join(x + b"\n" for x in lines), capture_output=True, timeout=timeout,
                          preexec_fn=limit, env=e)


def answers(p: subprocess.CompletedProcess[bytes], n: int) -> list[dict]:
    assert p.returncode == 0, p.stderr[-2000:]
    assert b"Traceback" not in p.stderr, p.stderr[-2000:]
    out = p.stdout.split(b"\n")
    assert out[-1] == b""
    assert len(out) - 1 == n, f"{len(out) - 1} answers for {n} lines"
    return [json.loads(x) for x in out[:-1]]


def expected_id(line: bytes) -> tuple[bool, object]:
    return salvage_id(line.rstrip(b"\r"))


# --------------------------------------------------------------------------- real input


def test_whole_shared_corpus_and_peers_as_one_stream(shared: Path) -> None:
    lines: list[bytes] = []
    for name in CORPUS:
        for i, raw in enumerate((shared / name).read_bytes().split(b"\n")):
            if raw.strip():
                obj = json.loads(raw)
                obj["id"] = f"{name}:{i}"
                lines.append(json.dumps(obj).encode())
    got = answers(stream(lines), len(lines))
    ids = [json.loads(x)["id"] for x in lines]
    assert [a.get("id") for a in got] == ids
    verdicts = {a["verdict"] for a in got}
    assert verdicts <= {"allow", "refuse"}, [a for a in got if a["verdict"] not in ("allow", "refuse")][:3]
    print(f"corpus stream: {len(lines)} lines, {sum(a['verdict'] == 'refuse' for a in got)} refused")


def test_ten_thousand_lines_with_every_hostile_line_spread_through(shared: Path) -> None:
    ordinary = [json.dumps({"id": f"o{i}", "command": c}).encode()
                for i, c in enumerate(fuzzgen.base_commands(shared, limit=10_000, seed=3))]
    hostile = fuzzgen.hostile_lines()
    lines = fuzzgen.spread(ordinary[: 10_000 - len(hostile)], hostile, seed=4)
    assert len(lines) == 10_000
    start = time.monotonic()
    p = stream(lines, "--time-budget", "3")
    got = answers(p, len(lines))
    for line, ans in zip(lines, got, strict=True):
        has, id_ = expected_id(line)
        assert ("id" in ans) == has and ans.get("id") == id_, (line[:200], ans)
        if line in ordinary:
            assert ans["verdict"] in ("allow", "refuse"), (line[:200], ans)
    by_id = {a.get("id"): a for a in got if isinstance(a.get("id"), str)}
    # a line naming the stream as a script is analysed as what feeds it, never read from the stream
    assert by_id["stdin-heredoc"]["verdict"] in ("allow", "refuse")
    assert by_id["raw-nul"]["verdict"] != "error" and by_id["escaped-nul"]["verdict"] != "error"
    assert by_id["not-json"]["verdict"] == "error"
    print(f"hostile stream: {len(lines)} lines in {time.monotonic() - start:.1f} s")


def test_answers_stay_in_order_when_lines_arrive_slowly() -> None:
    with piped([guard_bin(), "check", "--jsonl"]) as p:
        for i in range(3):
            p.stdin.write(json.dumps({"id": i, "command": "git push" if i == 1 else "ls"}).encode() + b"\n")
            p.stdin.flush()
            assert json.loads(p.stdout.readline())["id"] == i  # answered before the next line comes
        p.stdin.close()
        assert p.wait(30) == 0


def test_line_over_the_time_budget_gets_a_partial_answer_and_the_stream_goes_on(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    # a slow line: bash -c of a megabyte-long chain (whatever the analysis makes of it, the
    # answer comes within the budget); then ordinary lines
    lines = [b'{"id": 1, "command": "' + b"a=$a$a; " * 150_000 + b'"}', b'{"id": 2, "command": "ls"}']
    start = time.monotonic()
    got = answers(stream(lines, "--time-budget", "0.5"), 2)
    assert time.monotonic() - start < 30
    assert [a["id"] for a in got] == [1, 2]
    assert got[1]["verdict"] == "allow"
    if got[0]["unresolved"] and got[0]["unresolved"][0].startswith("analysis stopped"):
        assert got[0]["verdict"] == "allow" and got[0]["invocations"] == []


def test_memory_budget_costs_only_the_line(shared: Path) -> None:
    big = json.dumps({"id": "big", "command": " | ".join(["cat x"] * 30_000)}).encode()
    lines = [b'{"id": 0, "command": "ls"}', big, b'{"id": 2, "command": "git push"}']
    got = answers(stream(lines, "--memory-budget", "40"), 3)
    assert [a["id"] for a in got] == [0, "big", 2]
    assert got[2]["verdict"] == "refuse"
    if got[1]["verdict"] == "allow" and got[1]["unresolved"]:
        assert got[1]["unresolved"][0].startswith("analysis stopped")


def test_fail_closed_refuses_what_could_not_be_checked() -> None:
    lines = [b'{"id": 1, "command": "echo ' + b"w " * 300_000 + b'"}']
    got = answers(stream(lines, "--memory-budget", "1", env={"GUARD_FAIL": "closed"}), 1)
    assert got[0]["id"] == 1
    assert got[0]["verdict"] == "refuse"
    assert got[0]["message"].startswith("guard: refusing the command (GUARD_FAIL=closed): analysis stopped")


def test_single_check_has_the_same_budget() -> None:
    p = subprocess.run([guard_bin(), "check", "--memory-budget", "1", "--", "echo " + "w " * 60_000],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("allow (unresolved: analysis stopped")
    assert "Traceback" not in p.stderr


# --------------------------------------------------------------------------- the worker


def _loop(_: bytes) -> bytes:
    while True:
        pass


def _sleep(_: bytes) -> bytes:
    time.sleep(3600)
    return b""


def _hog(_: bytes) -> bytes:
    return b"x" * (4 << 30)


def _crash(_: bytes) -> bytes:
    import faulthandler

    faulthandler.disable()  # the worker is a fork of this process: no stack dump from it
    os.kill(os.getpid(), signal.SIGSEGV)
    return b""


def _read_stdin(_: bytes) -> bytes:
    with open("/dev/stdin", "rb") as fh:
        return fh.read() + os.read(0, 10)


def _echo(req: bytes) -> bytes:
    return req.upper()


@pytest.mark.parametrize(("handle", "kind"), [(_loop, "time"), (_sleep, "time"), (_hog, "memory"),
                                              (_crash, "crash")])
def test_worker_outcomes(handle, kind: str) -> None:
    w = budget.Worker(handle, seconds=0.3, memory_mib=256)
    try:
        start = time.monotonic()
        out = w.ask(b"x")
        assert out.kind == kind
        assert time.monotonic() - start < 10
        # the next request gets a fresh worker
        w.handle = _echo
        assert (w.ask(b"abc").kind, w.ask(b"abc").answer) == ("ok", b"ABC")
    finally:
        w.stop()


def test_worker_reads_nothing_of_the_callers_stdin() -> None:
    w = budget.Worker(_read_stdin)
    try:
        out = w.ask(b"")
        assert (out.kind, out.answer) == ("ok", b"")
    finally:
        w.stop()


def test_partial_answer_keeps_the_id_of_a_line_that_is_not_json() -> None:
    ans = json.loads(partial_answer(b'{"id": [1, "x"], "command": "ls" oops', budget.Outcome("time", detail="1 s"),
                                    closed=False))
    assert ans["id"] == [1, "x"]
    assert ans["unresolved"] == ["analysis stopped: the command took longer than 1 s to analyse"]


# --------------------------------------------------------------------------- several workers


def _by_request(req: bytes) -> bytes:
    if req == b"loop":
        _loop(req)
    if req == b"crash":
        _crash(req)
    if req.startswith(b"big"):
        return b"y" * 300_000
    if req.startswith(b"wait "):  # answers only once the file the other request makes is there
        want, make = req.split()[1:]
        Path(make.decode()).touch()
        deadline = time.monotonic() + 20
        while not Path(want.decode()).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return b"met" if Path(want.decode()).exists() else b"alone"
    return req.upper()


def _drain(pool: budget.Pool, keys: list[int], limit: float = 60) -> dict[int, budget.Outcome]:
    got: dict[int, budget.Outcome] = {}
    deadline = time.monotonic() + limit
    while len(got) < len(keys) and time.monotonic() < deadline:
        for key, outcome in pool.poll(None)[0]:
            assert key not in got
            got[key] = outcome  # type: ignore[index]
    return got


def test_pool_costs_a_broken_budget_only_its_own_request() -> None:
    # each worker holds two requests at once: the one queued behind a loop or a crash is answered
    # by the worker forked in its place
    pool = budget.Pool(_by_request, jobs=1, seconds=0.3, memory_mib=256, depth=2)
    reqs = [b"a", b"loop", b"b", b"crash", b"c", b"d"]
    got: dict[int, budget.Outcome] = {}
    try:
        for i, r in enumerate(reqs):
            while not pool.take(i, r):  # both of the worker's places are taken
                got.update(pool.poll(None)[0])  # type: ignore[arg-type]
        got.update(_drain(pool, [k for k in range(len(reqs)) if k not in got]))
    finally:
        pool.stop()
    kinds = [(got[i].kind, got[i].answer) for i in range(len(reqs))]
    assert kinds == [("ok", b"A"), ("time", None), ("ok", b"B"), ("crash", None), ("ok", b"C"), ("ok", b"D")]


def test_pool_runs_requests_at_once(tmp_path: Path) -> None:
    # two requests that each wait for the other: met only when two workers run them together
    a, b = tmp_path / "a", tmp_path / "b"
    for jobs, expected in ((2, [b"met", b"met"]), (1, [b"alone", b"alone"])):
        for f in (a, b):
            f.unlink(missing_ok=True)
        pool = budget.Pool(_by_request, jobs=jobs, seconds=30, depth=2)
        try:
            assert pool.take(0, f"wait {b} {a}".encode()) and pool.take(1, f"wait {a} {b}".encode())
            got = _drain(pool, [0, 1], limit=60)
        finally:
            pool.stop()
        if jobs == 1:  # the second starts after the first gave up, and finds the file it made
            expected = [b"alone", b"met"]
        assert [got[0].answer, got[1].answer] == expected


def test_pool_never_queues_a_large_request_behind_another() -> None:
    # large requests and answers both ways: a request queued in a pipe behind one whose answer
    # fills the other pipe would stop both processes for good
    pool = budget.Pool(_by_request, jobs=1, seconds=30, depth=4)
    try:
        assert pool.take(0, b"big" + b"x" * 100_000)
        assert not pool.take(1, b"big" + b"x" * 100_000)  # waits for an idle worker
        assert pool.take(2, b"small")  # a small one may wait in the pipe
        got = _drain(pool, [0, 2])
        assert pool.take(1, b"big" + b"x" * 100_000)
        got.update(_drain(pool, [1]))
    finally:
        pool.stop()
    assert [(got[k].kind, len(got[k].answer or b"")) for k in (0, 1, 2)] == [("ok", 300_000), ("ok", 300_000), ("ok", 5)]


def test_jobs_give_the_same_answers_in_the_same_order(shared: Path) -> None:
    ordinary = [json.dumps({"id": f"o{i}", "command": c}).encode()
                for i, c in enumerate(fuzzgen.base_commands(shared, limit=3_000, seed=5))]
    lines = fuzzgen.spread(ordinary, fuzzgen.hostile_lines(), seed=6)
    one = stream(lines, "--jobs", "1", "--time-budget", "5")
    four = stream(lines, "--jobs", "4", "--time-budget", "5")
    assert answers(four, len(lines)) == answers(one, len(lines))


@pytest.mark.parametrize("jobs", ["2", "4"])
def test_each_answer_comes_before_the_next_line_with_several_workers(jobs: str) -> None:
    with piped([guard_bin(), "check", "--jsonl", "--jobs", jobs]) as p:
        for i in range(5):
            p.stdin.write(json.dumps({"id": i, "command": "git push" if i % 2 else "ls"}).encode() + b"\n")
            p.stdin.flush()
            ans = json.loads(p.stdout.readline())
            assert (ans["id"], ans["verdict"]) == (i, "refuse" if i % 2 else "allow")
        p.stdin.close()
        assert p.wait(30) == 0


@pytest.mark.parametrize("value", ["0", "-1", "x", "1000"])
def test_jobs_out_of_range_is_a_usage_error(value: str) -> None:
    p = subprocess.run([guard_bin(), "check", "--jsonl", "--jobs", value], input=b"", capture_output=True, timeout=60)
    assert p.returncode == 2
    assert b"--jobs" in p.stderr and b"Traceback" not in p.stderr


def _zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"


def test_a_looping_request_ends_though_nobody_polls() -> None:
    # the parent may be blocked writing to a reader that stopped reading: the worker's own CPU
    # limit ends the request then, and the parent reports it as over the time budget
    pool = budget.Pool(_by_request, jobs=1, seconds=0.3)
    try:
        assert pool.take(0, b"loop")
        pid = pool._slots[0].worker.pid
        deadline = time.monotonic() + 20
        while not _zombie(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _zombie(pid)
        got = _drain(pool, [0])
    finally:
        pool.stop()
    assert got[0].kind == "time"


_SLOW_FIRST = """
import sys, time
from pathlib import Path
from guard.system import budget
from guard.cli import check as cli_check
flag = Path(sys.argv[1])
def handle(req):
    while req == b'{"command": "slow"}' and not flag.exists():
        time.sleep(0.01)
    return b'{"verdict": "allow"}'
sys.exit(cli_check._check_stream(budget.Pool(handle, jobs=2, seconds=60), False))
"""


def test_a_slow_line_stops_the_reading_not_the_memory(tmp_path: Path) -> None:
    # behind a line still being analysed, answers wait to be written in order: the stream stops
    # reading once a window of them waits, and goes on when the slow line is answered
    import sys
    import threading

    flag = tmp_path / "go"
    n = 50_000
    written = [0]
    got = bytearray()

    def feed() -> None:
        assert p.stdin is not None
        p.stdin.write(b'{"command": "slow"}\n')
        for _ in range(n // 1000):
            p.stdin.write(b'{"command": "ls"}\n' * 1000)
            p.stdin.flush()
            written[0] += 1000
        p.stdin.close()

    def drain() -> None:
        assert p.stdout is not None
        while chunk := p.stdout.read1(1 << 16):
            got.extend(chunk)

    with piped([sys.executable, "-c", _SLOW_FIRST, str(flag)], cwd=str(Path(__file__).resolve().parents[2])) as p:
        threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
        try:
            for t in threads:
                t.start()
            time.sleep(3)
            assert written[0] < n // 2  # the feeder is held back: the stream stopped reading
            assert got == b""  # and wrote nothing before the first answer
            flag.touch()
            assert p.wait(60) == 0
            for t in threads:
                t.join(60)
        finally:
            flag.touch()  # a failed check above must not leave the slow line waiting
    assert got.count(b"\n") == n + 1


_BUSY_EACH = """
import sys, time
from guard.system import budget
from guard.cli import check as cli_check
def handle(req):
    t = time.perf_counter() + 0.0001
    while time.perf_counter() < t:
        pass
    return b'{"verdict": "allow"}'
sys.exit(cli_check._check_stream(budget.Pool(handle, jobs=2, seconds=60), False))
"""


def test_answers_flow_out_while_a_burst_is_still_being_answered() -> None:
    # 20,000 lines of 0.1 ms each keep both workers busy for a second or more, answers always
    # ready: they must reach the caller in small batches (each at most FLUSH_AFTER old), not
    # once 64 KiB of them (3,121 answers) have gathered, and all without the caller closing its end
    import sys
    import threading

    n = 20_000
    answer = b'{"verdict": "allow"}\n'
    with piped([sys.executable, "-c", _BUSY_EACH], cwd=str(Path(__file__).resolve().parents[2])) as p:
        feeder = threading.Thread(target=lambda: (p.stdin.write(b'{"command": "ls"}\n' * n), p.stdin.flush()))
        feeder.start()
        fd = p.stdout.fileno()
        first = os.read(fd, 1 << 20)  # what the stream wrote first (the pipe holds 64 KiB)
        got = bytearray(first)
        while got.count(b"\n") < n:
            chunk = os.read(fd, 1 << 20)
            assert chunk, "the stream ended early"
            got += chunk
        feeder.join(30)
        assert bytes(got) == answer * n
        assert first.count(b"\n") < 2_500
        p.stdin.close()
        assert p.wait(30) == 0


_TWO_SLOW = """
import json, sys, time
from guard.system import budget
from guard.cli import check as cli_check
def handle(req):
    obj = json.loads(req)
    if obj["command"].startswith("sleep:"):
        time.sleep(float(obj["command"][6:]))
    return json.dumps({"id": obj["id"]}).encode()
sys.exit(cli_check._check_stream(budget.Pool(handle, jobs=3, seconds=5), False))
"""


def test_the_end_of_input_waits_for_lines_still_queued_behind_the_window() -> None:
    # two slow lines hold the window (1,024 lines) open while the rest of the input, its end
    # included, has been read: the stream may end only once those queued lines are answered too
    import sys

    n = 1101
    lines = [json.dumps({"id": i, "command": "sleep:1" if i == 0 else "sleep:2" if i == 40 else f"c{i}"})
             for i in range(n)]
    p = subprocess.run([sys.executable, "-c", _TWO_SLOW], input="".join(x + "\n" for x in lines).encode(),
                       capture_output=True, timeout=120, cwd=str(Path(__file__).resolve().parents[2]))
    assert p.returncode == 0
    assert [json.loads(x)["id"] for x in p.stdout.splitlines()] == list(range(n))
