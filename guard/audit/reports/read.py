"""Reading refused-command logs as operators hand them over (docs/behaviour.md §8), in Python.

Input: files, directories (every ``*.jsonl*``/``*.log``/``*.json`` file in them) and ``-`` for
standard input. ``.gz`` files are read through gzip. Each line is either one of our records or a
collector's envelope holding one (Vector's ``message``, Fluent Bit's ``log`` or
``tag: [time, {…}]`` lines, an OpenTelemetry ``body``/``stringValue``, OTLP JSON export batches).
``load`` merges records as a union by ``id`` and sorts them by (``ts``, ``id``); the DuckDB engine
(``guard.audit.reports.duck``) hands the lines it cannot read itself to ``records_in_line``, so both read
a line the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

Record = dict[str, Any]


@dataclass
class Loaded:
    """The merged, de-duplicated records, each with its parsed time, sorted by (ts, id)."""

    records: list[tuple[float, Record]] = field(default_factory=list)
    sources: int = 0
    lines: int = 0
    duplicates: int = 0
    malformed: int = 0
    first_malformed: str | None = None


_ENVELOPE_KEYS = ("message", "log", "body", "record", "msg", "_raw", "event", "stringValue", "data")


def is_record(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and isinstance(value.get("ts"), str)
        and ("verdict" in value or "kind" in value)
    )


def _unwrap(value: object, depth: int = 0) -> Iterator[Record]:
    """Our records inside one parsed JSON value, looking through collector envelopes."""
    if depth > 10:
        return
    if isinstance(value, dict):
        if is_record(value):
            yield value
            return
        for key, inner in value.items():
            if isinstance(inner, str):
                if key in _ENVELOPE_KEYS and inner.lstrip().startswith(("{", "[")):
                    try:
                        yield from _unwrap(json.loads(inner), depth + 1)
                    except ValueError:
                        pass
            elif isinstance(inner, (dict, list)):
                yield from _unwrap(inner, depth + 1)
    elif isinstance(value, list):
        for inner in value:
            yield from _unwrap(inner, depth + 1)


def records_in_line(line: str) -> list[Record] | None:
    """The records one log line holds; ``[]`` for a blank line, None for a malformed one."""
    text = line.strip()
    if not text:
        return []
    if text[0] not in "{[":
        # A prefix put there by a collector or a log viewer: "tag: [...]", "2026-… stdout F {…}".
        starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
        if not starts:
            return None
        text = text[min(starts) :]
    try:
        value = json.loads(text)
    except ValueError:
        return None
    found = list(_unwrap(value))
    return found or None


def parse_ts(value: str) -> float | None:
    """Seconds since the epoch for an RFC 3339 time; a time without offset is taken as UTC."""
    try:
        t = datetime.fromisoformat(value.strip())
    except (ValueError, AttributeError):
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return t.timestamp()


def load(streams: Iterable[tuple[str, IO[bytes]]]) -> Loaded:
    """Read every stream, keep one copy of each id, sort by (ts, id)."""
    out = Loaded()
    by_id: dict[str, tuple[float, Record]] = {}
    for name, stream in streams:
        out.sources += 1
        for number, raw in enumerate(stream, 1):
            out.lines += 1
            line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            found = records_in_line(line)
            if found is None:
                out.malformed += 1
                out.first_malformed = out.first_malformed or f"{name}:{number}"
                continue
            for rec in found:
                t = parse_ts(rec["ts"])
                if t is None:
                    out.malformed += 1
                    out.first_malformed = out.first_malformed or f"{name}:{number}"
                    continue
                if rec["id"] in by_id:
                    out.duplicates += 1
                    continue
                by_id[rec["id"]] = (t, rec)
    out.records = sorted(by_id.values(), key=lambda tr: (tr[0], tr[1]["id"]))
    return out


def files_under(path: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if ".jsonl" in name or name.endswith((".log", ".json", ".log.gz", ".json.gz")):
                if not name.endswith(".lock"):
                    found.append(os.path.join(root, name))
    return found


def open_log(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def default_logs(env: Mapping[str, str]) -> list[str]:
    from guard.audit.log import default_log_path, rotated_files

    path = default_log_path(env)
    if path is None:
        return []
    return [p for p in [*rotated_files(path), path] if os.path.isfile(p)]


def streams(paths: list[str], stdin: IO[bytes]) -> Iterator[tuple[str, IO[bytes]]]:
    for path in paths:
        if path == "-":
            yield "<stdin>", stdin
            continue
        targets = files_under(path) if os.path.isdir(path) else [path]
        for target in targets:
            with open_log(target) as f:
                yield target, f


# --------------------------------------------------------------------------- filtering
