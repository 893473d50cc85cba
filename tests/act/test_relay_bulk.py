"""The relay's bulk mode, stderr a pipe: after a large read the bytes are spliced on to stderr
(tee(2) keeps a copy for the annotator). Every byte arrives once, in order, unchanged, whatever
the sizes, the pauses, a non-blocking or vanishing reader; the annotator sees the same lines."""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from guard.act import relay
from tests.act import test_annotate_relay

GIT_LINE = b"fatal: could not read Username for 'https://github.com': terminal prompts disabled\n"
PY = sys.executable

WRITER = r"""
import os, random, sys, time
rnd = random.Random(int(sys.argv[1]))
total = int(sys.argv[2])
out = bytearray()
while len(out) < total:
    k = rnd.choice([1, 7, 4096, 65536, 300000, 1 << 20, 3 << 20])
    chunk = rnd.randbytes(k) if rnd.random() < 0.5 else (b"line %d of the log\n" % len(out)) * (k // 20 + 1)
    chunk = chunk[: total - len(out)]
    view = memoryview(chunk)
    while view:
        view = view[os.write(2, view):]
    out += chunk
    if rnd.random() < 0.05:
        time.sleep(0.01)
tail = sys.argv[3].encode() if len(sys.argv) > 3 else b""
os.write(2, tail)
sys.stdout.write(str(len(out) + len(tail)))
"""


env = test_annotate_relay.env  # the relay tests' environment: credential rules live, a private cache


def _expected(seed: int, total: int, tail: bytes = b"") -> bytes:
    """What WRITER writes for (seed, total), computed here the same way."""
    rnd = random.Random(seed)
    out = bytearray()
    while len(out) < total:
        k = rnd.choice([1, 7, 4096, 65536, 300000, 1 << 20, 3 << 20])
        chunk = rnd.randbytes(k) if rnd.random() < 0.5 else (b"line %d of the log\n" % len(out)) * (k // 20 + 1)
        out += chunk[: total - len(out)]
        rnd.random()
    return bytes(out) + tail


def _relayed(args: list[str], env: dict[str, str], reader=None) -> tuple[bytes, int]:
    """Run ``guard annotate -- ARGS`` with stderr a pipe we read; (stderr bytes, status)."""
    r, w = os.pipe()
    p = subprocess.Popen([PY, "-m", "guard.cli.annotate", "--", *args], env=env, stderr=w,
                         stdout=subprocess.DEVNULL)
    os.close(w)
    data = (reader or _read_all)(r)
    os.close(r)
    return data, p.wait(timeout=120)


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


@pytest.mark.parametrize("seed,total", [(1, 1), (2, relay.BULK_MIN - 1), (3, relay.BULK_MIN), (4, 5 << 20),
                                         (5, 40 << 20)])
def test_every_byte_once_in_order(env: dict[str, str], seed: int, total: int) -> None:
    data, status = _relayed([PY, "-c", WRITER, str(seed), str(total)], env)
    assert status == 0
    want = _expected(seed, total)
    assert len(data) == len(want) and hashlib.sha256(data).digest() == hashlib.sha256(want).digest()


def test_the_annotator_sees_lines_after_bulk_output(env: dict[str, str]) -> None:
    # git writes its line at a line start, and the annotator matches only there: end the bulk
    # output's last line first, as a tool's own output would be
    data, status = _relayed([PY, "-c", WRITER + "\nraise SystemExit(128)", "6", str(9 << 20),
                             "\n" + GIT_LINE.decode()], env)
    assert status == 128
    body, _, note = data.rpartition(GIT_LINE)
    assert body == _expected(6, 9 << 20) + b"\n"
    assert note.startswith(b"[guard] git could not authenticate")
    assert note.count(b"\n") == 1


def test_a_match_split_across_rounds_is_found(env: dict[str, str]) -> None:
    """Bulk zeros without a newline, then the matching line written in two halves apart."""
    script = ("import os, time\nos.write(2, bytes(3 << 20) + b'\\n')\n"
              f"line = {GIT_LINE!r}\nos.write(2, line[:30]); time.sleep(0.05); os.write(2, line[30:])\n"
              "raise SystemExit(128)")
    data, status = _relayed([PY, "-c", script], env)
    assert status == 128
    assert data.startswith(bytes(3 << 20) + b"\n" + GIT_LINE)
    assert b"[guard] git could not authenticate" in data[len(GIT_LINE) + (3 << 20):]


def test_a_slow_non_blocking_reader_still_gets_everything(env: dict[str, str]) -> None:
    def slow(fd: int) -> bytes:
        chunks = []
        while True:
            time.sleep(0.002)
            b = os.read(fd, 4096 * 7)
            if not b:
                return b"".join(chunks)
            chunks.append(b)

    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    p = subprocess.Popen([PY, "-m", "guard.cli.annotate", "--", PY, "-c", WRITER, "7", str(6 << 20)],
                         env=env, stderr=w, stdout=subprocess.DEVNULL)
    os.close(w)
    data = slow(r)
    os.close(r)
    assert p.wait(timeout=120) == 0
    assert data == _expected(7, 6 << 20)


def test_a_reader_that_goes_away_ends_nothing_early(env: dict[str, str], tmp_path: Path) -> None:
    """The reader closes after 1 MiB: the guard keeps draining the command's pipe, so the
    command runs to its end and its status is reported."""
    done = tmp_path / "done"
    script = f"import os\nfor _ in range(64): os.write(2, bytes(1 << 20))\nopen({str(done)!r}, 'w').close()"
    r, w = os.pipe()
    p = subprocess.Popen([PY, "-m", "guard.cli.annotate", "--", PY, "-c", script], env=env, stderr=w,
                         stdout=subprocess.DEVNULL)
    os.close(w)
    got = 0
    while got < (1 << 20):
        got += len(os.read(r, 1 << 16))
    os.close(r)
    assert p.wait(timeout=60) == 0
    assert done.exists()


def test_pipe_tee_moves_exactly_what_it_copies() -> None:
    """_PipeTee by itself: what leaves for stderr equals the copy, round by round."""
    src_r, src_w = os.pipe()
    out_r, out_w = os.pipe()
    saved = os.dup(2)
    os.dup2(out_w, 2)
    try:
        tee = relay._PipeTee.open(src_r)
        assert tee is not None
        payload = os.urandom(300000)
        received = bytearray()
        t = threading.Thread(target=lambda: received.extend(_read_all(out_r)))
        t.start()
        writer = threading.Thread(target=lambda: (os.write(src_w, payload), os.close(src_w)))
        writer.start()
        copies = bytearray()
        while True:
            select.select([src_r], [], [])  # as the relay polls before each round
            n = tee.move(src_r, [False])
            if not n:
                break
            copies += tee.buf[:n]
        tee.close()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(out_w)
    writer.join()
    t.join()
    assert bytes(copies) == payload == bytes(received)


def test_stderr_pipe_is_enlarged_for_bulk_rounds_and_set_back_when_it_can_be() -> None:
    """A harness's 64 KiB pipe would cut each round into 16 blocking splices, with the reader
    idle while the guard scans: _PipeTee enlarges it to PIPE_SIZE and, on close, sets it back
    when what it still holds fits; else it stays large, and nothing it holds is lost."""
    for pending in (0, 200_000):
        src_r, src_w = os.pipe()
        fcntl.fcntl(src_w, fcntl.F_SETPIPE_SZ, relay.PIPE_SIZE)  # the whole payload fits
        out_r, out_w = os.pipe()
        fcntl.fcntl(out_w, fcntl.F_SETPIPE_SZ, 65536)
        saved = os.dup(2)
        os.dup2(out_w, 2)
        try:
            tee = relay._PipeTee.open(src_r)
            assert tee is not None
            assert fcntl.fcntl(out_r, fcntl.F_GETPIPE_SZ) == relay.PIPE_SIZE
            payload = os.urandom(pending)
            os.write(src_w, payload)
            moved = tee.move(src_r, [False]) if pending else 0
            assert moved == pending  # one splice: the enlarged pipe takes the whole round
            tee.close()
            size = fcntl.fcntl(out_r, fcntl.F_GETPIPE_SZ)
            assert size == (relay.PIPE_SIZE if pending > 65536 else 65536)
            os.dup2(saved, 2)
            os.close(out_w)
            assert _read_all(out_r) == payload
        finally:
            os.dup2(saved, 2)
            for fd in (saved, src_r, src_w, out_r):
                os.close(fd)
            try:
                os.close(out_w)
            except OSError:
                pass


def test_a_harness_pipe_is_enlarged_during_bulk_output_and_its_size_restored(env: dict[str, str]) -> None:
    """Real bash writes 8 MiB through the guard into the test's 64 KiB pipe, then waits: the
    reader sees the pipe at 1 MiB while the bulk output flows, gets every byte, and finds it
    64 KiB again once the guard is done (it was drained when the relay ended)."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 65536)
    script = "head -c 8388608 /dev/zero >&2; sleep 1; printf 'done\\n' >&2"
    p = subprocess.Popen([PY, "-m", "guard.cli.annotate", "--", "bash", "-c", script], env=env, stderr=w,
                         stdout=subprocess.DEVNULL)
    os.close(w)
    sizes, chunks = set(), []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
        sizes.add(fcntl.fcntl(r, fcntl.F_GETPIPE_SZ))
    after = fcntl.fcntl(r, fcntl.F_GETPIPE_SZ)
    os.close(r)
    assert p.wait(timeout=60) == 0
    assert b"".join(chunks) == bytes(8 << 20) + b"done\n"
    assert relay.PIPE_SIZE in sizes
    assert after == 65536


def test_not_a_pipe_means_no_tee(tmp_path: Path) -> None:
    saved = os.dup(2)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    os.dup2(fd, 2)
    try:
        r, w = os.pipe()
        assert relay._PipeTee.open(r) is None
        os.close(r)
        os.close(w)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


# A needle across a boundary: real bash writes bulk text (the relay splices and tees from the
# first large read on), then the failing git line placed so that its literals straddle a round
# of the relay (a tee takes at most 1 MiB), a slice of the literal search (64 KiB) or a pipe page.
BASH_BULK = r"""
yes 'an ordinary build log line that matches no rule' | head -c "$1" >&2
printf '\n%s\n' "$2" >&2
exit 128
"""
_LINE = GIT_LINE.rstrip(b"\n").decode()


def _at(boundary: int, into: str) -> int:
    """The bulk size that puts ``into`` (part of the git line) across ``boundary``."""
    return boundary - 1 - _LINE.index(into) - len(into) // 2  # the printf's leading newline


@pytest.mark.parametrize("boundary,into", [
    (relay.READ_SIZE, "terminal prompts"),
    (relay.READ_SIZE, "could not read Username"),
    (2 * relay.READ_SIZE, "fatal: "),
    (17 * 65536, "terminal prompts"),
    (relay.BULK_MIN + 4096, "Username"),
    (3 * relay.READ_SIZE + 7 * 4096, "prompts disabled"),
])
def test_a_needle_across_a_boundary_still_annotates(env: dict[str, str], boundary: int, into: str) -> None:
    bulk = _at(boundary, into)
    data, status = _relayed(["bash", "-c", BASH_BULK, "bash", str(bulk), _LINE], env)
    assert status == 128
    yes = b"an ordinary build log line that matches no rule\n"
    want = (yes * (bulk // len(yes) + 1))[:bulk] + b"\n" + GIT_LINE
    assert data[: len(want)] == want
    assert data[len(want) :].startswith(b"[guard] git could not authenticate")


@pytest.mark.parametrize("cut", [5, 30, 47, 60])
def test_a_line_written_in_two_halves_apart_after_bulk_output_annotates(env: dict[str, str], cut: int) -> None:
    """Bash writes 4 MiB, then the git line in two writes 50 ms apart: the halves arrive in
    different rounds, with a pause between them."""
    script = ('head -c 4194304 /dev/zero >&2; printf "\\n" >&2; printf "%s" "${1:0:' + str(cut) + '}" >&2;'
              ' sleep 0.05; printf "%s\\n" "${1:' + str(cut) + '}" >&2; exit 128')
    data, status = _relayed(["bash", "-c", script, "bash", _LINE], env)
    assert status == 128
    assert data.startswith(bytes(4 << 20) + b"\n" + GIT_LINE)
    assert data[(4 << 20) + 1 + len(GIT_LINE) :].startswith(b"[guard] git could not authenticate")


def test_bulk_output_with_no_needle_gets_no_annotation_and_arrives_whole(env: dict[str, str]) -> None:
    data, status = _relayed(["bash", "-c", "yes 'fatal: not quite a git line' | head -c 20000000 >&2; exit 128"],
                            env)
    assert status == 128
    assert data == (b"fatal: not quite a git line\n" * (20000000 // 28 + 1))[:20000000]


def test_the_pause_waits_for_a_fill_and_never_past_its_cap() -> None:
    r, w = os.pipe()
    saved = os.dup(2)
    out_r, out_w = os.pipe()
    os.dup2(out_w, 2)
    try:
        tee = relay._PipeTee.open(r)
        assert tee is not None
        assert tee.pause(relay.BULK_FILL) == 0.0  # a full round: go on at once
        assert tee.pause(0) == relay.BULK_PAUSE
        tee._prev, tee._at = tee._at - 10.0, tee._at  # 4 KiB in 10 s: a slow writer
        assert tee.pause(4096) == relay.BULK_PAUSE
        tee._prev, tee._at = tee._at - 1e-6, tee._at - 1e-6  # 128 KiB in 1 µs: a fast one
        assert tee.pause(relay.BULK_FILL // 2) == 0.0
        tee.close()
    finally:
        os.dup2(saved, 2)
        for fd in (saved, r, w, out_r, out_w):
            os.close(fd)


def test_a_match_in_the_read_that_starts_bulk_mode_is_found(env: dict[str, str]) -> None:
    """One large write: the read that switches the relay to tee and splice holds the line, and
    it is scanned from where it was read, not from the duplicate's buffer."""
    yes = b"an ordinary build log line that matches no rule\n"
    body = yes * (600_000 // len(yes)) + GIT_LINE + yes * (2_000_000 // len(yes))
    script = (f"import os\nyes = {yes!r}\nv = memoryview(yes * {600_000 // len(yes)} + {GIT_LINE!r}"
              f" + yes * {2_000_000 // len(yes)})\nwhile v: v = v[os.write(2, v):]\nraise SystemExit(128)")
    data, status = _relayed([PY, "-c", script], env)
    assert status == 128
    assert data.startswith(body) and data[len(body) :].startswith(b"[guard] git could not authenticate")


@pytest.mark.parametrize("boundary,into", [
    (relay.READ_SIZE, "terminal prompts"),
    (relay.BULK_MIN, "could not read"),
    (5 * relay.READ_SIZE + 65536, "fatal: "),
])
def test_a_needle_across_a_boundary_of_a_file_follower_still_annotates(
        env: dict[str, str], tmp_path: Path, boundary: int, into: str) -> None:
    """stderr a regular file: the command writes it, the follower reads it back (switching to
    its aligned buffer after the first large read) and the note is appended after the line."""
    bulk = _at(boundary, into)
    log = tmp_path / "err.log"
    with open(log, "wb") as fh:
        p = subprocess.run([PY, "-m", "guard.cli.annotate", "--", "bash", "-c", BASH_BULK, "bash",
                            str(bulk), _LINE], env=env, stderr=fh, stdout=subprocess.DEVNULL, timeout=120)
    assert p.returncode == 128
    data = log.read_bytes()
    yes = b"an ordinary build log line that matches no rule\n"
    want = (yes * (bulk // len(yes) + 1))[:bulk] + b"\n" + GIT_LINE
    assert data[: len(want)] == want
    assert data[len(want) :].startswith(b"[guard] git could not authenticate")
