"""``guard audit [LOG…]``: merge refused-command logs and answer what operators ask (docs/behaviour.md §8).

Input: any number of files, directories (every ``*.jsonl*``/``*.log``/``*.json`` file in them) and
``-`` for standard input; with no file named, standard input when it is not a terminal, else the
default log and its rotated copies. ``.gz`` files are read through gzip. Each line is either one
of our records or a collector's envelope holding one (Vector's ``message``, Fluent Bit's
``log`` or ``tag: [time, {…}]`` lines, an OpenTelemetry ``body``/``stringValue``, OTLP JSON export
batches). Records are merged as a union by ``id`` and sorted by (``ts``, ``id``).

Every untrusted field is printed through ``guard.text.display``; ``--json`` escapes control
characters by construction; ``--csv`` cells are neutralised and guarded against formula
injection.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import IO, Any

from guard.audit.reports.normalise import normalise_command  # noqa: F401  (guard.audit.reports.report's API)
from guard.audit.reports.read import Record, default_logs, parse_ts
from guard.text.display import inert, show

DEFAULT_WINDOW_MINUTES = 10
BAR_WIDTH = 40
CSV_COLUMNS = (
    "id", "ts", "kind", "verdict", "category", "rule", "tool", "agent", "thread", "role",
    "host", "cwd", "via", "command", "command_sha256", "version", "rules_digest",
)  # fmt: skip


class UsageError(Exception):
    pass


# --------------------------------------------------------------------------- filtering

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_when(text: str, *, end: bool = False, now: float | None = None) -> float:
    """``--since``/``--until`` values: RFC 3339 or ISO time, a date (``--until`` takes the whole
    day), or an age such as ``30m``, ``12h``, ``7d``, ``2w``."""
    text = text.strip()
    m = _RELATIVE.match(text)
    if m:
        base = datetime.now(UTC).timestamp() if now is None else now
        return base - int(m.group(1)) * _UNITS[m.group(2)]
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        d = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        return (d + timedelta(days=1)).timestamp() if end else d.timestamp()
    t = parse_ts(text)
    if t is None:
        raise UsageError(f"not a time: {text!r} (use 2026-01-31, 2026-01-31T12:00:00Z or 7d)")
    return t


_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(value: int, peak: int, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of ``value`` out of ``peak`` in ``width`` cells, to an eighth of a cell."""
    if peak <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value * width * 8 / peak))
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


def read_rules_list(path: str) -> list[str]:
    """Rule ids, one per line (the first word; ``#`` starts a comment); a JSON list also works."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        try:
            return sorted({str(x) for x in json.loads(text)})
        except ValueError as e:
            raise UsageError(f"{path}: not a JSON list of rule ids: {e}") from None
    ids = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.add(line.split()[0].removeprefix("- ").strip())
    return sorted(ids)


def policy_rule_ids() -> list[str] | None:
    """The loaded rule set's ids of rules that write a record; None when it cannot be loaded."""
    from guard.audit.reports.ruleset import rule_ids

    return rule_ids()


# --------------------------------------------------------------------------- the report


def render_text(data: dict[str, Any], top_n: int) -> str:
    s = data["summary"]
    lines: list[str] = []
    period = f"{s['first'][:10]} → {s['last'][:10]} UTC" if s["first"] else "no records"
    lines.append(
        f"guard audit: {s['records']} records ({s['refusals']} refusals, {s['annotations']} annotations), "
        f"{period}"
    )
    lines.append(
        f"  {s['agents']} agents, {s['threads']} threads, {s['sources']} sources; "
        f"{s['duplicates']} duplicate copies merged, {s['malformed']} malformed lines skipped"
    )
    for title, key in (("rule", "rule"), ("category", "category"), ("normalised command", "command")):
        rows = data["top"][key]
        lines.append("")
        lines.append(f"Refused most, by {title}")
        if not rows:
            lines.append("  (none)")
        for row in rows:
            lines.append(f"  {row['count']:>6}  {show(row['key'], 96)}")

    r = data["retries"]
    lines.append("")
    lines.append(
        f"Retries after a refusal (a run: refusals in one thread, each within {r['window_minutes']:g} min "
        "of the last; every refusal after a run's first is a wasted step)"
    )
    lines.append(f"  {r['runs']} runs, {r['runs_with_retries']} with retries, {r['wasted']} wasted steps")
    retried = [t for t in r["threads"] if t["wasted"]][:top_n]
    if retried:
        lines.append(
            f"  {'agent':<20} {'thread':<20} {'refused':>7} {'runs':>5} {'wasted':>6} {'longest':>7}  mostly"
        )
        for t in retried:
            lines.append(
                f"  {show(t['agent'], 20):<20} {show(t['thread'], 20):<20} {t['refusals']:>7} {t['runs']:>5} "
                f"{t['wasted']:>6} {t['longest']:>7}  {show(t['top_category'], 16)}"
            )
    else:
        lines.append("  no thread retried after a refusal")

    lines.append("")
    nf = data["never_fired"]
    if not nf["known"]:
        lines.append("Rules that never fired: unknown (pass --rules-list FILE)")
    else:
        lines.append(f"Rules that never fired over the period: {len(nf['rules'])}")
        for chunk in _wrap([show(x, 60) for x in nf["rules"]], 92):
            lines.append("  " + chunk)

    days = data["per_day"]
    lines.append("")
    lines.append("Refusals per day (UTC)")
    peak = max((d["refusals"] for d in days), default=0)
    for d in days:
        weekday = date.fromisoformat(d["day"]).strftime("%a")
        lines.append(
            f"  {d['day']} {weekday}  {bar(d['refusals'], peak):<{BAR_WIDTH}}  {d['refusals']:>5}"
            + (f"  (+{d['annotations']} annotations)" if d["annotations"] else "")
        )
    if not days:
        lines.append("  (none)")
    if data.get("trial"):
        lines.append("")
        lines.append("Rules on trial (warn, observe): what they would have refused; a repeat is the same thread "
                     "meeting the same rule again within the retry window")
        lines.append(f"  {'rule':<28} {'category':<13} {'matches':>7} {'warned':>6} {'observed':>8} {'repeats':>7} "
                     f"{'agents':>6} {'threads':>7}")
        for row in data["trial"]:
            lines.append(
                f"  {show(row['rule'], 28):<28} {show(row['category'], 13):<13} {row['matches']:>7} "
                f"{row['warned']:>6} {row['observed']:>8} {row['repeats']:>7} {row['agents']:>6} {row['threads']:>7}"
            )
            for c in row["commands"][:3]:
                lines.append(f"      {c['count']:>6}  {show(c['key'], 88)}")
    return "\n".join(lines) + "\n"


def _wrap(words: list[str], width: int) -> list[str]:
    out: list[str] = []
    line = ""
    for w in words:
        candidate = f"{line}, {w}" if line else w
        if len(candidate) > width and line:
            out.append(line + ",")
            line = w
        else:
            line = candidate
    if line:
        out.append(line)
    return out


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        value = " > ".join(str(v) for v in value)
    text = inert(value)
    if text[:1] in ("=", "+", "-", "@"):
        text = "'" + text  # keep a spreadsheet from evaluating it
    return text


def render_csv(records: Iterable[Record]) -> Iterator[str]:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for n, rec in enumerate(records, 1):
        writer.writerow([_csv_cell(rec.get(c)) for c in CSV_COLUMNS])
        if n % 5000 == 0:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def render_records(records: Iterable[Record]) -> Iterator[str]:
    chunk: list[str] = []
    for rec in records:
        chunk.append(json.dumps(rec, separators=(",", ":")) + "\n")
        if len(chunk) >= 5000:
            yield "".join(chunk)
            chunk.clear()
    yield "".join(chunk)


# --------------------------------------------------------------------------- engines

ENGINES = ("auto", "duckdb", "python")
# Without DuckDB, logs larger than this are refused: the Python engine holds every record in
# memory (about 3 GB and a minute for a million records).
PYTHON_MAX_BYTES = 64 * 1024 * 1024
INSTALL = "pip install 'guard[audit]'"


def _has_duckdb() -> bool:
    import importlib.util

    return importlib.util.find_spec("duckdb") is not None


def _input_bytes(paths: list[str]) -> int:
    from guard.audit.reports.read import files_under

    total = 0
    for path in paths:
        if path == "-":
            continue
        for target in files_under(path) if os.path.isdir(path) else [path]:
            try:
                size = os.path.getsize(target)
            except OSError:
                continue
            total += size * 8 if target.endswith(".gz") else size  # gzip: about 8 to 1 on logs
    return total


class _Capped:
    """Standard input for the Python engine, refused past PYTHON_MAX_BYTES."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.read = 0

    def __iter__(self) -> Iterator[bytes]:
        for line in self.stream:
            self.read += len(line)
            if self.read > PYTHON_MAX_BYTES:
                raise UsageError(_too_large(f"standard input: more than {_mb(PYTHON_MAX_BYTES)}"))
            yield line


def _mb(size: int) -> str:
    return f"{-(-size // 1_000_000)} MB"


def _too_large(what: str) -> str:
    return (
        f"{what} of logs needs the DuckDB engine: {INSTALL}"
        " (or --engine python, which holds every record in memory)"
    )


def _engine(choice: str, paths: list[str], stdin: IO[bytes], keep_raw: bool) -> Any:
    if choice == "python" or (choice == "auto" and not _has_duckdb()):
        if choice == "auto":
            size = _input_bytes(paths)
            if size > PYTHON_MAX_BYTES:
                raise UsageError(_too_large(_mb(size)))
            stdin = _Capped(stdin)  # type: ignore[assignment]
        from guard.audit.reports.pyreport import PythonEngine

        return PythonEngine(paths, stdin)
    if not _has_duckdb():
        raise UsageError(f"--engine duckdb: DuckDB is not installed: {INSTALL}")
    from guard.audit.reports.duck import DuckEngine

    return DuckEngine(paths, stdin, keep_raw=keep_raw, memory_limit=os.environ.get("GUARD_AUDIT_MEMORY"))


# --------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(message)


FIELDS = ("agent", "thread", "role", "rule", "category", "verdict", "kind")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="guard audit",
        description="Merge refused-command logs (union by id, sorted by time) and report on them.",
    )
    p.add_argument("logs", nargs="*", metavar="LOG", help="log files or folders; - for stdin")
    p.add_argument("--since", help="from this time: 2026-01-31, 2026-01-31T12:00:00Z, or an age: 7d, 12h")
    p.add_argument("--until", help="before this time (a date includes that whole day)")
    for name in FIELDS:
        p.add_argument(
            f"--{name}",
            action="append",
            default=[],
            metavar="GLOB",
            help=f"keep records whose {name} matches (repeatable)",
        )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="the report as one JSON object")
    out.add_argument("--csv", action="store_true", help="the merged records as CSV, one row each")
    out.add_argument("--records", action="store_true", help="the merged records as JSON lines (a merged log)")
    out.add_argument(
        "--html", metavar="FILE", help="the report as one self-contained HTML page, written to FILE"
    )
    out.add_argument(
        "--sql",
        action="store_true",
        help="print the record schema and the report's queries as SQL, and read no log",
    )
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows per 'refused most' table (10)")
    p.add_argument(
        "--window",
        type=float,
        default=DEFAULT_WINDOW_MINUTES,
        metavar="MIN",
        help="retry window in minutes (10)",
    )
    p.add_argument("--rules-list", metavar="FILE", help="rule ids, one per line, for 'never fired'")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="duckdb (guard[audit]), python (small logs), or auto: duckdb when installed"
        " ($GUARD_AUDIT_ENGINE)",
    )
    return p  # fmt: skip


def main(argv: list[str]) -> int:
    """``guard audit`` with ``argv`` (what follows ``audit``). Exit 0, or 2 on a usage error or an
    unreadable log."""
    try:
        opts = _parser().parse_args(argv)
    except UsageError as e:
        _err(f"guard audit: {e}")
        return 2
    except SystemExit as e:  # --help
        return int(e.code or 0)
    top_n, window = max(1, opts.top), max(0.0, opts.window)
    try:
        since = parse_when(opts.since) if opts.since else None
        until = parse_when(opts.until, end=True) if opts.until else None
        fields = tuple((name, tuple(getattr(opts, name))) for name in FIELDS if getattr(opts, name))
        if opts.sql:
            from guard.audit.reports import queries

            return _out(queries.render_sql(queries.kept_where(since, until, fields), top_n, window * 60))
        choice = opts.engine or os.environ.get("GUARD_AUDIT_ENGINE", "auto")
        if choice not in ENGINES:
            raise UsageError(f"GUARD_AUDIT_ENGINE={choice!r}: use one of {', '.join(ENGINES)}")
        wants_rules = not (opts.csv or opts.records)
        rule_ids = read_rules_list(opts.rules_list) if opts.rules_list else None
        stdin = sys.stdin.buffer if sys.stdin is not None else io.BytesIO()
        paths = list(opts.logs)
        if not paths:
            paths = ["-"] if not _isatty(stdin) else default_logs(os.environ)
        engine = _engine(choice, paths, stdin, keep_raw=opts.csv or opts.records)
    except UsageError as e:
        _err(f"guard audit: {e}")
        return 2
    except OSError as e:
        _err(f"guard audit: cannot read {e.filename or 'input'}: {e.strerror or e}")
        return 2
    except Exception as e:
        if not type(e).__module__.startswith(("duckdb", "_duckdb", "guard.audit.reports.duck")):
            raise
        _err(
            f"guard audit: the DuckDB engine failed: {inert(str(e).splitlines()[0] if str(e) else type(e).__name__)}"
        )
        return 2
    with engine:
        loaded = engine.loaded
        if loaded.malformed:
            _err(
                f"guard audit: skipped {loaded.malformed} malformed line{'s' if loaded.malformed != 1 else ''}"
                f" (first at {inert(loaded.first_malformed)})"
            )
        engine.keep(since, until, fields)
        if rule_ids is None and wants_rules:
            rule_ids = policy_rule_ids()
        if opts.csv:
            return _out(render_csv(engine.records()))
        if opts.records:
            return _out(render_records(engine.records()))
        data = engine.report(top_n, window, rule_ids)
        from guard.audit.reports.pyreport import trial_report

        trial = trial_report(engine.trial_records(), top_n, window * 60)
        if trial:  # rules on trial (warn, observe) matched: their own section
            data["trial"] = trial
        if opts.html:
            from guard.audit.reports.html import render_html

            page = render_html(data, engine.details(data, top_n, window), top_n)
            try:
                with open(opts.html, "w", encoding="utf-8", errors="backslashreplace") as f:
                    f.write(page)
            except OSError as e:
                _err(f"guard audit: cannot write {inert(opts.html)}: {e.strerror or e}")
                return 2
            return _out(f"guard audit: report written to {inert(opts.html)}\n")
        return _out(json.dumps(data, indent=2) + "\n" if opts.json else render_text(data, top_n))


def _isatty(stream: IO[bytes]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _err(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:
        pass


def _out(text: str | Iterable[str]) -> int:
    chunks = [text] if isinstance(text, str) else text
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        for chunk in chunks:
            data = chunk.encode("utf-8", "backslashreplace")
            if buffer is not None:
                buffer.write(data)
            else:
                sys.stdout.write(data.decode("utf-8"))
        if buffer is not None:
            buffer.flush()
        else:
            sys.stdout.flush()
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return 0
