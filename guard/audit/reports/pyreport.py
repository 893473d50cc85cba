"""The report computed in Python over records held in memory: today's engine, kept for small logs
where DuckDB (``pip install 'guard[audit]'``) is not installed, and as the reference the DuckDB
engine is tested against byte for byte."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any

from guard.audit.reports.normalise import normalise_command
from guard.audit.reports.read import Loaded, Record, load, streams

SAMPLES = 5  # commands shown behind one row of the HTML page
MAX_DAYS = 3660
_EPOCH = date(1970, 1, 1)


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


def is_trial(rec: Record) -> bool:
    """What a rule on trial (warn, observe) matched: reported on its own (``trial_report``)."""
    return rec.get("kind") == "trial"


def top(items: Iterable[object], n: int) -> list[tuple[str, int]]:
    counts = Counter(x if isinstance(x, str) else "-" if x is None else str(x) for x in items)
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
        key = (_named(rec.get("agent")), _named(rec.get("thread")))
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


def trial_report(records: Iterable[tuple[float, Record]], top_n: int, window_s: float) -> list[dict[str, Any]]:
    """Per rule on trial (warn, observe): how often it matched, on which agents and threads, the
    commands, and how often the same thread met the same rule again within ``window_s`` of the
    last time (a repeat: the agent went on trying that kind of command). Most matches first."""
    rows: dict[str, dict[str, Any]] = {}
    last: dict[tuple[str, str, str], float] = {}
    for t, rec in records:
        rule = _key(rec.get("rule"))
        row = rows.setdefault(rule, {"rule": rule, "category": _key(rec.get("category")), "matches": 0,
                                     "warned": 0, "observed": 0, "repeats": 0, "agents": set(), "threads": set(),
                                     "commands": Counter()})
        row["matches"] += 1
        action = rec.get("action")
        if action in ("warned", "observed"):
            row[action] += 1
        agent, thread = _named(rec.get("agent")), _named(rec.get("thread"))
        row["agents"].add(agent)
        row["threads"].add((agent, thread))
        row["commands"][normalise_command(str(rec.get("command") or ""))] += 1
        key = (agent, thread, rule)
        if key in last and t - last[key] <= window_s:
            row["repeats"] += 1
        last[key] = t
    out = []
    for row in sorted(rows.values(), key=lambda r: (-r["matches"], r["rule"])):
        out.append({**row, "agents": len(row["agents"]), "threads": len(row["threads"]),
                    "commands": _pairs(sorted(row["commands"].items(), key=lambda kv: (-kv[1], kv[0]))[:top_n])})
    return out


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
        fired = {_key(r.get("rule")) for _, r in self.records if r.get("rule")}
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
                # Agents and threads as the retry table names them: no agent (missing, null,
                # empty, 0) is the one agent "-".
                "agents": len({_named(r.get("agent")) for _, r in self.records}),
                "threads": len({(_named(r.get("agent")), _named(r.get("thread"))) for _, r in self.records}),
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


def _named(value: object) -> str:
    """An agent's or a thread's name as the report shows it: ``-`` when there is none."""
    return str(value or "-")


def _pairs(items: list[tuple[str, int]]) -> list[dict[str, Any]]:
    return [{"key": k, "count": c} for k, c in items]


# --------------------------------------------------------------------------- the engine


def day_name(n: int) -> str:
    """The UTC day ``n`` days after 1970-01-01, as ``YYYY-MM-DD``."""
    return (_EPOCH + timedelta(days=n)).isoformat()


def days_between(first: int, last: int) -> list[tuple[int, str]]:
    """Every day from ``first`` to ``last`` (days since the epoch), at most MAX_DAYS of them."""
    return [(n, day_name(n)) for n in range(first, min(last + 1, first + MAX_DAYS))]


def top_commands(counts: Iterable[tuple[str, int]]) -> list[list[Any]]:
    """The SAMPLES commands counted most, as [command, count]."""
    return [[c, n] for c, n in sorted(counts, key=lambda kv: (-kv[1], kv[0]))[:SAMPLES]]


class PythonEngine:
    """Every record held in memory, as today's ``guard audit`` does: for logs of a few hundred
    thousand records where DuckDB is not installed."""

    name = "python"

    def __init__(self, paths: list[str], stdin: Any, **_: Any) -> None:
        self.loaded = load(streams(paths, stdin))
        self.kept: list[tuple[float, Record]] = [(t, r) for t, r in self.loaded.records if not is_trial(r)]
        self.trial: list[tuple[float, Record]] = [(t, r) for t, r in self.loaded.records if is_trial(r)]
        self.chosen = self.loaded.records  # every record the filters keep, trial ones included

    def __enter__(self) -> PythonEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def keep(
        self, since: float | None, until: float | None, fields: tuple[tuple[str, tuple[str, ...]], ...]
    ) -> str:
        filters = Filters(since, until, fields)
        chosen = self.chosen = [(t, r) for t, r in self.loaded.records if filters.keep(t, r)]
        self.kept = [(t, r) for t, r in chosen if not is_trial(r)]
        self.trial = [(t, r) for t, r in chosen if is_trial(r)]
        return ""

    def trial_records(self) -> Iterable[tuple[float, Record]]:
        return iter(self.trial)

    def report(self, top_n: int, window_minutes: float, rule_ids: list[str] | None) -> dict[str, Any]:
        return Report(self.loaded, self.kept, top_n, window_minutes, rule_ids).as_dict()

    def records(self) -> Iterable[Record]:
        return (r for _, r in self.chosen)

    def details(self, data: dict[str, Any], top_n: int, window_minutes: float) -> dict[str, Any]:
        refused = [(t, r) for t, r in self.kept if is_refusal(r)]
        per_day_category: Counter[tuple[str, str]] = Counter()
        for t, r in refused:
            key = (datetime.fromtimestamp(t, UTC).date().isoformat(), _key(r.get("category")))
            per_day_category[key] += 1
        annotations = top((r.get("rule") for _, r in self.kept if not is_refusal(r)), top_n)
        commands: dict[str, dict[str, list[list[Any]]]] = {}
        for kind in ("rule", "category", "command"):
            wanted = {row["key"] for row in data["top"][kind]}
            counts: dict[str, Counter[str]] = {}
            for _, r in refused:
                command = str(r.get("command") or "")
                key = normalise_command(command) if kind == "command" else _key(r.get(kind))
                if key in wanted:
                    counts.setdefault(key, Counter())[command] += 1
            commands[kind] = {k: top_commands(v.items()) for k, v in counts.items()}
        commands["thread"] = _longest_runs(refused, data, top_n, window_minutes * 60)
        return {
            "per_day_category": [
                {"day": d, "category": c, "count": n} for (d, c), n in sorted(per_day_category.items())
            ],
            "annotations": _pairs(annotations),
            "commands": commands,
        }


def _key(value: object) -> str:
    return "-" if value is None else str(value)


def _longest_runs(
    refused: list[tuple[float, Record]], data: dict[str, Any], top_n: int, window_s: float
) -> dict[str, list[list[Any]]]:
    """The longest run (the first of equal ones) of each thread the report lists as retrying."""
    shown = {
        (t["agent"], t["thread"]) for t in [t for t in data["retries"]["threads"] if t["wasted"]][:top_n]
    }
    runs: dict[tuple[str, str], list[tuple[float, str]]] = {}
    best: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for t, r in refused:
        key = (_named(r.get("agent")), _named(r.get("thread")))
        if key not in shown:
            continue
        run = runs.get(key)
        if run is None or t - run[-1][0] > window_s:
            run = runs[key] = []
        run.append((t, str(r.get("command") or "")))
        if len(run) > len(best.get(key, ())):
            best[key] = run
    return {
        f"{a}\0{th}": [
            [datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S"), c] for t, c in run[: SAMPLES * 4]
        ]
        for (a, th), run in best.items()
    }
