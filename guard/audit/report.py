"""``guard audit [LOG…]``: merge refused-command logs and answer what operators ask (SPEC §8).

Input: any number of files, directories (every ``*.jsonl*``/``*.log``/``*.json`` file in them) and
``-`` for standard input; with no file named, standard input when it is not a terminal, else the
default log and its rotated copies. ``.gz`` files are read through gzip. Each line is either one
of our records or a collector's envelope holding one (Vector's ``message``, Fluent Bit's
``log`` or ``tag: [time, {…}]`` lines, an OpenTelemetry ``body``/``stringValue``, OTLP JSON export
batches). Records are merged as a union by ``id`` and sorted by (``ts``, ``id``).

Every untrusted field is printed through ``guard.audit.display``; ``--json`` escapes control
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
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase
from typing import IO, Any

from guard.audit.display import clip, inert, show

Record = dict[str, Any]

DEFAULT_WINDOW_MINUTES = 10
BAR_WIDTH = 40
CSV_COLUMNS = (
    "id", "ts", "kind", "verdict", "category", "rule", "tool", "agent", "thread", "role",
    "host", "cwd", "via", "command", "command_sha256", "version", "rules_digest",
)  # fmt: skip


class UsageError(Exception):
    pass


# --------------------------------------------------------------------------- reading


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


def _files_under(path: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if ".jsonl" in name or name.endswith((".log", ".json", ".log.gz", ".json.gz")):
                if not name.endswith(".lock"):
                    found.append(os.path.join(root, name))
    return found


def _open(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _default_logs(env: Mapping[str, str]) -> list[str]:
    from guard.audit.log import default_log_path, rotated_files

    path = default_log_path(env)
    if path is None:
        return []
    return [p for p in [*rotated_files(path), path] if os.path.isfile(p)]


def _streams(paths: list[str], stdin: IO[bytes]) -> Iterator[tuple[str, IO[bytes]]]:
    for path in paths:
        if path == "-":
            yield "<stdin>", stdin
            continue
        targets = _files_under(path) if os.path.isdir(path) else [path]
        for target in targets:
            with _open(target) as f:
                yield target, f


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


@dataclass(frozen=True)
class Filters:
    since: float | None = None
    until: float | None = None
    fields: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def keep(self, t: float, rec: Record) -> bool:
        if self.since is not None and t < self.since:
            return False
        if self.until is not None and t >= self.until:
            return False
        for name, patterns in self.fields:
            value = rec.get(name)
            text = "" if value is None else str(value)
            if not any(fnmatchcase(text, p) for p in patterns):
                return False
        return True


# --------------------------------------------------------------------------- analysis


def is_refusal(rec: Record) -> bool:
    return rec.get("verdict") == "refuse" or rec.get("kind") == "refusal"


_TOKEN = re.compile(
    r"""&&|\|\||[;|&]|(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s;|&'"\\])+|['"].*""",
    re.S,
)
_SUBCOMMANDS = {
    "git": 1, "gh": 2, "glab": 2, "hub": 1, "docker": 1, "kubectl": 1, "aws": 2, "npm": 1,
    "pnpm": 1, "yarn": 1, "pip": 1, "pip3": 1, "uv": 1, "poetry": 1, "cargo": 1, "go": 1,
}  # fmt: skip
# Options that take the next word as their value, per program; the value is folded, and the
# subcommand after it is still recognised (``git -C DIR commit``).
_VALUE_FLAGS = {
    "git": {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"},
    "gh": {"-R", "--repo", "--hostname"},
    "docker": {"-H", "--host", "--context", "--config"},
    "kubectl": {"-n", "--namespace", "--context"},
}
# Programs whose first plain argument is what the command is about (a search pattern).
_KEEP_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "ack"}
_KEYWORDS = {"do", "then", "else", "elif", "if", "while", "until", "time", "!", "{", "(", "for"}
_GIT_GROUPS = {"remote", "submodule", "stash", "worktree", "notes", "bisect", "lfs", "credential"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "su", "eval"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BARE = re.compile(r"^[a-z][a-z0-9-]*$")
_KEEP_ARG = re.compile(r"^(?:~|\$|/proc/|/etc/|/root/\.|[A-Z][A-Z0-9_]{2,}$|GET$|POST$|PUT$|PATCH$|DELETE$)")
_URL = re.compile(r"^['\"]?([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^@/\s]*@)?([^/\s'\"]+)")


def _unquote(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token.lstrip("\\")


def normalise_command(command: str, depth: int = 0) -> str:
    """A command with its varying parts folded, so the same intent groups together.

    Per pipeline or list element: leading ``NAME=value`` assignments kept by name, the program's
    directory dropped, subcommands kept (``git push``, ``gh pr create``), flags kept by name
    (``-X``, ``--data``), URLs cut to scheme and host, variable references, ``~`` paths and
    credential-store paths kept, every other argument folded into ``…``; a ``bash -c`` script is
    normalised in turn.
    """
    parts: list[str] = []
    segment: list[str] = []

    def flush() -> None:
        if segment:
            parts.append(_normalise_segment(segment, depth))
            segment.clear()

    for token in _TOKEN.findall(command):
        if token in ("&&", "||", ";", "|", "&"):
            flush()
            parts.append(token)
        else:
            segment.append(token)
    flush()
    while parts and parts[-1] in ("&&", "||", ";", "|", "&"):
        parts.pop()
    return " ".join(parts) if parts else command.strip()


def _normalise_segment(tokens: list[str], depth: int) -> str:
    words = list(tokens)
    assigns = []
    while words and _ASSIGNMENT.match(words[0]) and len(words) > 1:
        assigns.append(words.pop(0).split("=", 1)[0] + "=…")
    if not words:
        return ""
    program = _unquote(words[0]).rsplit("/", 1)[-1]
    if program in _KEYWORDS and len(words) > 1 and program != "for":
        return " ".join([*assigns, program, _normalise_segment(words[1:], depth)])
    out = [*assigns, program]
    allowed = _SUBCOMMANDS.get(program, 0)
    keep_first = program in _KEEP_FIRST
    value_flags = _VALUE_FLAGS.get(program, set())
    rest = words[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("-"):
            flag = token.split("=", 1)[0]
            if flag not in out:
                out.append(flag)
            i += 1
            if flag in value_flags and "=" not in token and i < len(rest):
                out.append("…")
                i += 1
                continue
            if flag == "-c" and program in _SHELLS and i < len(rest) and depth < 2:
                out.append("'" + normalise_command(_unquote(rest[i]), depth + 1) + "'")
                i += 1
            continue
        bare = _unquote(token)
        if allowed and _BARE.match(bare):
            out.append(bare)
            if program == "git" and bare in _GIT_GROUPS:
                allowed += 1
            allowed -= 1
        else:
            allowed = 0
            url = _URL.match(bare)
            if url:
                out.append(url.group(1) + url.group(2) + "/…" if len(bare) > len(url.group(0)) else bare)
            elif _KEEP_ARG.match(bare) or keep_first:
                out.append(clip(bare, 40))
                keep_first = False
            elif out[-1] != "…":
                out.append("…")
        i += 1
    return " ".join(out)


def top(items: Iterable[str | None], n: int) -> list[tuple[str, int]]:
    counts = Counter(x if x is not None else "-" for x in items)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


@dataclass
class ThreadRetries:
    agent: str
    thread: str
    refusals: int = 0
    runs: int = 0
    runs_with_retries: int = 0
    wasted: int = 0
    longest: int = 0
    categories: Counter[str] = field(default_factory=Counter)

    @property
    def top_category(self) -> str:
        if not self.categories:
            return "-"
        return sorted(self.categories.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def retries(records: list[tuple[float, Record]], window_s: float) -> list[ThreadRetries]:
    """Wasted steps after a refusal, per (agent, thread).

    A *run* is a maximal sequence of refusals in one thread in which each refusal comes within
    ``window_s`` seconds of the one before. The first refusal of a run is the guard doing its
    job; every further one is a **wasted step**: the agent tried again instead of taking the
    pointer. A run ends when refusals stop for longer than the window — the agent used an
    allowed command (the right tool, one hopes) or gave up; allowed commands are not logged, so
    the log cannot tell those two apart. Sorted by wasted steps, then agent and thread.
    """
    by_thread: dict[tuple[str, str], ThreadRetries] = {}
    last: dict[tuple[str, str], float] = {}
    current: dict[tuple[str, str], int] = {}
    for t, rec in records:
        if not is_refusal(rec):
            continue
        key = (str(rec.get("agent") or "-"), str(rec.get("thread") or "-"))
        row = by_thread.setdefault(key, ThreadRetries(*key))
        row.refusals += 1
        row.categories[str(rec.get("category") or "-")] += 1
        if key in last and t - last[key] <= window_s:
            current[key] += 1
            row.wasted += 1
            row.runs_with_retries += current[key] == 2
        else:
            current[key] = 1
            row.runs += 1
        row.longest = max(row.longest, current[key])
        last[key] = t
    return sorted(by_thread.values(), key=lambda r: (-r.wasted, -r.longest, r.agent, r.thread))


def per_day(records: list[tuple[float, Record]]) -> list[tuple[str, int, int]]:
    """(UTC day, refusals, annotations) for every day from the first record to the last."""
    if not records:
        return []
    refusals: Counter[date] = Counter()
    others: Counter[date] = Counter()
    for t, rec in records:
        d = datetime.fromtimestamp(t, UTC).date()
        (refusals if is_refusal(rec) else others)[d] += 1
    first = datetime.fromtimestamp(records[0][0], UTC).date()
    last = datetime.fromtimestamp(records[-1][0], UTC).date()
    days = []
    d = first
    while d <= last and len(days) < 3660:
        days.append((d.isoformat(), refusals[d], others[d]))
        d += timedelta(days=1)
    return days


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
    """The loaded rule set's ids, when ``guard.policy`` can tell; None when it cannot.

    The rule loader's own warnings are not this report's business: they are swallowed here
    (``guard rules lint`` is where they belong).
    """
    import contextlib

    saved = None
    try:
        try:  # the loader may write to fd 2 directly
            sys.stderr.flush()
            saved = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            saved = None
        with contextlib.redirect_stderr(io.StringIO()):
            return _policy_rule_ids()
    except Exception:
        return None
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


def _policy_rule_ids() -> list[str] | None:
    from guard import policy
    from guard.context import Context

    ctx = Context.from_environ()
    fn = getattr(policy, "rule_ids", None)
    if callable(fn):
        return sorted({str(x) for x in fn(ctx)})
    rules = policy.load(ctx)
    items = getattr(rules, "rules", rules)
    if isinstance(items, Mapping):
        items = list(items.values())
    ids = set()
    for rule in items:
        if _field(rule, "verdict") == "allow":
            continue  # an allow rule never writes a record: it cannot "fire" in the log
        rid = _field(rule, "id")
        if rid:
            ids.add(str(rid))
    try:  # stderr annotation rules write records too
        from guard.act.annotate import load_rules
        from guard.act.stderr_rules import default_paths

        ids.update(str(r.id) for r in load_rules(default_paths(ctx.env), env=ctx.env))
    except Exception:
        pass
    return sorted(ids) or None


def _field(rule: object, name: str) -> object:
    if isinstance(rule, Mapping):
        return rule.get(name)
    return getattr(rule, name, None)


# --------------------------------------------------------------------------- the report


@dataclass
class Report:
    loaded: Loaded
    records: list[tuple[float, Record]]
    top_n: int
    window_minutes: float
    rule_ids: list[str] | None

    def refusals(self) -> list[Record]:
        return [r for _, r in self.records if is_refusal(r)]

    def as_dict(self) -> dict[str, Any]:
        refused = self.refusals()
        threads = retries(self.records, self.window_minutes * 60)
        fired = {r.get("rule") for _, r in self.records if r.get("rule")}
        never = None if self.rule_ids is None else [x for x in self.rule_ids if x not in fired]
        return {
            "summary": {
                "records": len(self.records),
                "refusals": len(refused),
                "annotations": len(self.records) - len(refused),
                "sources": self.loaded.sources,
                "duplicates": self.loaded.duplicates,
                "malformed": self.loaded.malformed,
                "first": self.records[0][1]["ts"] if self.records else None,
                "last": self.records[-1][1]["ts"] if self.records else None,
                "agents": len({r.get("agent") for _, r in self.records}),
                "threads": len({(r.get("agent"), r.get("thread")) for _, r in self.records}),
            },
            "top": {
                "rule": _pairs(top((r.get("rule") for r in refused), self.top_n)),
                "category": _pairs(top((r.get("category") for r in refused), self.top_n)),
                "command": _pairs(
                    top((normalise_command(str(r.get("command") or "")) for r in refused), self.top_n)
                ),
            },
            "retries": {
                "window_minutes": self.window_minutes,
                "runs": sum(t.runs for t in threads),
                "runs_with_retries": sum(t.runs_with_retries for t in threads),
                "wasted": sum(t.wasted for t in threads),
                "threads": [
                    {
                        "agent": t.agent,
                        "thread": t.thread,
                        "refusals": t.refusals,
                        "runs": t.runs,
                        "wasted": t.wasted,
                        "longest": t.longest,
                        "top_category": t.top_category,
                    }
                    for t in threads
                ],
            },
            "never_fired": {"known": never is not None, "rules": never or []},
            "per_day": [{"day": d, "refusals": r, "annotations": a} for d, r, a in per_day(self.records)],
        }


def _pairs(items: list[tuple[str, int]]) -> list[dict[str, Any]]:
    return [{"key": k, "count": c} for k, c in items]


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


def render_csv(records: list[tuple[float, Record]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for _, rec in records:
        writer.writerow([_csv_cell(rec.get(c)) for c in CSV_COLUMNS])
    return buf.getvalue()


def render_records(records: list[tuple[float, Record]]) -> str:
    return "".join(json.dumps(rec, separators=(",", ":")) + "\n" for _, rec in records)


# --------------------------------------------------------------------------- command line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="guard audit",
        description="Merge refused-command logs (union by id, sorted by time) and report on them.",
    )
    p.add_argument("logs", nargs="*", metavar="LOG", help="log files or folders; - for stdin")
    p.add_argument("--since", help="from this time: 2026-01-31, 2026-01-31T12:00:00Z, or an age: 7d, 12h")
    p.add_argument("--until", help="before this time (a date includes that whole day)")
    for name in ("agent", "thread", "role", "rule", "category", "verdict", "kind"):
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
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows per 'refused most' table (10)")
    p.add_argument(
        "--window",
        type=float,
        default=DEFAULT_WINDOW_MINUTES,
        metavar="MIN",
        help="retry window in minutes (10)",
    )
    p.add_argument("--rules-list", metavar="FILE", help="rule ids, one per line, for 'never fired'")
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
    try:
        filters = Filters(
            since=parse_when(opts.since) if opts.since else None,
            until=parse_when(opts.until, end=True) if opts.until else None,
            fields=tuple(
                (name, tuple(getattr(opts, name)))
                for name in ("agent", "thread", "role", "rule", "category", "verdict", "kind")
                if getattr(opts, name)
            ),
        )
        wants_rules = not (opts.csv or opts.records)
        rule_ids = read_rules_list(opts.rules_list) if opts.rules_list else None
        stdin = sys.stdin.buffer if sys.stdin is not None else io.BytesIO()
        paths = list(opts.logs)
        if not paths:
            paths = ["-"] if not _isatty(stdin) else _default_logs(os.environ)
        loaded = load(_streams(paths, stdin))
    except UsageError as e:
        _err(f"guard audit: {e}")
        return 2
    except OSError as e:
        _err(f"guard audit: cannot read {e.filename or 'input'}: {e.strerror or e}")
        return 2
    if loaded.malformed:
        _err(
            f"guard audit: skipped {loaded.malformed} malformed line{'s' if loaded.malformed != 1 else ''}"
            f" (first at {inert(loaded.first_malformed)})"
        )
    kept = [(t, r) for t, r in loaded.records if filters.keep(t, r)]
    if rule_ids is None and wants_rules:
        rule_ids = policy_rule_ids()
    if opts.csv:
        text = render_csv(kept)
    elif opts.records:
        text = render_records(kept)
    else:
        report = Report(loaded, kept, max(1, opts.top), max(0.0, opts.window), rule_ids)
        data = report.as_dict()
        text = json.dumps(data, indent=2) + "\n" if opts.json else render_text(data, max(1, opts.top))
    return _out(text)


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


def _out(text: str) -> int:
    data = text.encode("utf-8", "backslashreplace")
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return 0
