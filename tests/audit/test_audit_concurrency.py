"""Many processes appending to one log at once: every record present, whole and parseable."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

from guard.audit import log

WRITERS = 64
RECORDS = 2000
BIG_EVERY = 16  # one record in 16 carries a ~12 KiB field, well over PIPE_BUF


def _pad(writer: int, seq: int) -> str:
    """A per-record payload whose length and content the reader can check: text like a command's
    arguments (it goes through redaction like any free-text field)."""
    size = 12000 if seq % BIG_EVERY == 0 else (writer * 131 + seq * 17) % 1500
    word = f"w{writer}s{seq}/arg-{(writer * seq) % 9973:04d} "
    return (word * (size // len(word) + 1))[:size]


def _writer(path: str, writer: int, count: int, env_extra: dict[str, str]) -> None:
    env = {
        "GUARD_AUDIT_LOG": path,
        "GUARD_AGENT": f"agent-{writer}",
        "GUARD_THREAD": f"thread-{writer % 7}",
        "GUARD_ROLE": "worker",
        **env_extra,
    }
    for seq in range(count):
        rec = log.build_record(
            "refusal",
            f"git push origin w{writer}-r{seq}",
            cwd="/workspace/app",
            env=env,
            verdict="refuse",
            category="publish",
            rule="git-push",
            tool="git_push",
            via=["alias g"],
        )
        rec["writer"] = writer
        rec["seq"] = seq
        rec["pad"] = _pad(writer, seq)
        log.append_record(rec, env)


def _run(path: Path, writers: int, records: int, env_extra: dict[str, str] | None = None) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_writer, args=(str(path), w, records, env_extra or {})) for w in range(writers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
        assert p.exitcode == 0


def _check(files: list[Path], writers: int, records: int) -> int:
    seen: set[tuple[int, int]] = set()
    ids: set[str] = set()
    lines = 0
    for f in files:
        data = f.read_bytes()
        assert data.endswith(b"\n"), f"{f} ends mid-record"
        for raw in data.split(b"\n")[:-1]:
            lines += 1
            rec = json.loads(raw)  # a torn or interleaved line fails here
            key = (rec["writer"], rec["seq"])
            assert key not in seen, f"record {key} written twice"
            seen.add(key)
            ids.add(rec["id"])
            assert rec["command"] == f"git push origin w{key[0]}-r{key[1]}"
            assert rec["pad"] == _pad(*key), f"record {key} is not whole"
    assert lines == len(seen) == len(ids) == writers * records
    assert seen == {(w, s) for w in range(writers) for s in range(records)}
    return lines


def test_64_writers_thousands_of_records_each(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    _run(path, WRITERS, RECORDS, {"GUARD_AUDIT_MAX_BYTES": "0"})
    found = _check([path], WRITERS, RECORDS)
    print(f"\naudit concurrency: {WRITERS} writers x {RECORDS} records = {WRITERS * RECORDS}; found {found}")


def test_rotation_under_concurrency_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    writers, records = 16, 600
    _run(path, writers, records, {"GUARD_AUDIT_MAX_BYTES": "300000", "GUARD_AUDIT_KEEP": "0"})
    rotated = [Path(p) for p in log.rotated_files(str(path))]
    assert len(rotated) >= 5, "the test should rotate many times"
    # the last append may itself have rotated the file away, leaving no live file behind
    found = _check([*rotated, *([path] if path.exists() else [])], writers, records)
    # Every rotated file was full when renamed (a rotation is never repeated on a fresh file).
    assert all(os.path.getsize(p) >= 300000 for p in rotated)
    print(f"\naudit rotation: {writers} writers x {records} records, {len(rotated)} rotations; found {found}")
