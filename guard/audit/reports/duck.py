"""``guard audit`` on DuckDB: the logs are read, merged and reported on by an embedded analytical
engine, so a fleet's month (millions of records) is reported on in bounded memory.

Only ``guard audit`` imports this module (DuckDB is the optional extra ``guard[audit]``).

Reading keeps the Python reader's meaning line for line (``guard.audit.reports.read``): each file is split
on ``\\n`` only, with its line numbers. ``.gz`` files are decompressed into a work directory
first and standard input is spooled there. Every line is read in SQL with per-line JSON functions:
a line that is one of our records as Python reads it (one JSON object, none of the forms where
DuckDB's JSON reading and Python's part ways, our fields strings or null) becomes a row as it is,
and every other line (collector envelopes, prefixes, batches, malformed and torn lines, bytes that
are not UTF-8) is kept whole for ``read.records_in_line``.

The records are then merged (first copy of each id, in the order the files were named) and the
report's queries (``guard.audit.reports.queries``) run over them; DuckDB spills to the work directory when
memory runs short.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import mmap
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import IO, Any

import duckdb
import re2

from guard.audit.reports import queries
from guard.audit.reports.read import Loaded, Record, files_under, records_in_line

DEFAULT_MEMORY = "300MB"
PIECE = 64 * 1024 * 1024  # bytes of log DuckDB reads as one value
# Up to this much log the records are held in an in-memory database (writing a database file
# costs CPU); past it, in a file in the work directory, whose pages can always be written out
# when memory_limit is reached (ten million records: about 460 MB peak RSS at the default
# memory_limit). An in-memory database spills too, but at ten million records its report's
# queries, reading the spilled pages back, cost more than the file saves.
MEMORY_DB_BYTES = 512 * 1024 * 1024
_FIELDS = ("id", "ts", "verdict", "kind", "rule", "category", "agent", "thread", "command", "role", "action")
_STRING_FIELDS = _FIELDS[2:]
# A lone surrogate (a JSON "\\udXXX" escape) cannot be held by DuckDB: it travels as a character
# of Supplementary Private Use Area-B and is turned back on the way out.
_SURROGATE = re.compile("[\ud800-\udfff]")
_MASKED = re.compile("[\U00100000-\U001007ff]")
_PATHS = repr(["$." + f for f in _FIELDS])
# Lines left to the Python reader although DuckDB's JSON functions read them, each a place where
# the two readings part ways: a trailing comma (DuckDB takes it, Python does not); nan and inf,
# which DuckDB takes in any case and Python only as NaN and Infinity; a key of ours written twice
# (DuckDB reads the first, Python the last); a lone surrogate or a NUL escape, which DuckDB
# cannot hold as text; an escape in a key (an escaped "id" is still our field to Python); and a
# field of ours whose value is a number, a boolean, an object or an array (Python's record then
# holds that value, not the text json_extract_string gives, and an id or a time that is not a
# string is no record of ours), which spares SQL a second parse of every line for the types of
# its values. The patterns also match such text inside a string: that line is then read by
# Python, which gives the same records, only slower. They are found by one RE2 search of each
# file's bytes, beside DuckDB's reading of it (a search of a whole file costs a fraction of a
# regular expression evaluated line by line in SQL, and adding a pattern to it next to nothing).
# None of them reaches past its line.
_MARKS = re2.compile(
    b"|".join(
        [
            rb",[ \t\r]*[\]}]",
            rb"[:,\[][ \t\r]*[-+]?(?i:nan|inf)",
            rb"\\u[dD][89a-fA-F]|\\u0000",
            rb'\\u[0-9a-fA-F]{4}(?:[^"\\\n]|\\.)*"[ \t\r]*:',
            *(rf'"{f}"[ \t\r]*:[^\n]*"{f}"[ \t\r]*:'.encode() for f in _FIELDS),
            rb'"(?:' + "|".join(_FIELDS).encode() + rb')"[ \t\r]*:[ \t\r]*[^" \t\rn]',
        ]
    )
)


# One statement per group of files: every line, the ones SQL reads as they are, and the others
# kept whole for the Python reader. A line is read here when it is one JSON object
# (json_extract_string fails on anything else, and try() makes that NULL) with id, ts and verdict
# or kind: each line is parsed once. A line where a field of ours is not a string or null is
# among those _MARKS finds, which are handed to Python afterwards.
_PARSE = f"""
INSERT INTO parsed
SELECT src, lineno, 0 AS pos,
       CASE WHEN ok THEN NULL ELSE line END AS odd,
       {", ".join(f"CASE WHEN ok THEN j[{i + 1}] END AS {f}" for i, f in enumerate(_FIELDS))},
       CASE WHEN ok {{raw}} END AS raw,
       CASE WHEN ok THEN guard_us(j[2]) END AS t_us
FROM (
  SELECT src, lineno, line, j,
         coalesce(j[1] IS NOT NULL AND j[2] IS NOT NULL AND (j[3] IS NOT NULL OR j[4] IS NOT NULL), false) AS ok
  FROM (
    SELECT src, lineno, line,
           CASE WHEN line[1] = '{{' AND line[-1] = '}}' THEN try(json_extract_string(line, {_PATHS})) END AS j
    FROM (
      SELECT src, lineno, CASE WHEN line[-1] = chr(13) THEN line[:-2] ELSE line END AS line
      FROM (
        SELECT src, base + unnest(generate_series(1, len(ls))) AS lineno, unnest(ls) AS line
        FROM (
          SELECT list_extract($srcs, n) AS src, list_extract($bases, n) AS base,
                 string_split(content, chr(10)) AS ls
          FROM (SELECT list_position($paths, filename) AS n, content FROM read_text($paths))
        )
      ) WHERE line <> ''
    )
  )
)
"""

_CREATE_PARSED = """
CREATE TABLE parsed (src INTEGER, lineno BIGINT, pos INTEGER, odd VARCHAR, id VARCHAR, ts VARCHAR,
  verdict VARCHAR, kind VARCHAR, rule VARCHAR, category VARCHAR, agent VARCHAR, thread VARCHAR,
  command VARCHAR, role VARCHAR, action VARCHAR, raw VARCHAR, t_us BIGINT)
"""

_MACROS = """
CREATE OR REPLACE TEMP MACRO guard_h(id) AS hash(id);
CREATE OR REPLACE TEMP MACRO guard_us(ts) AS
  CASE WHEN regexp_full_match(ts, '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z')
       THEN epoch_us(try_strptime(ts, '%Y-%m-%dT%H:%M:%S.%gZ')) END;
"""


class EngineError(Exception):
    """A log could not be read: the message names it."""


class DuckEngine:
    """The logs named by ``paths`` (``-`` for ``stdin``), loaded into DuckDB and merged."""

    name = "duckdb"

    def __init__(
        self,
        paths: list[str],
        stdin: IO[bytes],
        *,
        keep_raw: bool = False,
        memory_limit: str | None = None,
        threads: int | None = None,
    ) -> None:
        self._dir = tempfile.mkdtemp(prefix="guard-audit-")
        self._threads = threads or max(1, min(_cores(), 4))
        try:
            small = _input_bytes(paths) <= MEMORY_DB_BYTES
            self.con = duckdb.connect(
                ":memory:" if small else os.path.join(self._dir, "audit.duckdb"),
                config={
                    "memory_limit": memory_limit or DEFAULT_MEMORY,
                    "temp_directory": os.path.join(self._dir, "spill"),
                    "preserve_insertion_order": False,
                    "threads": self._threads,
                    # Compressing the pages as they are written costs about a fifth of
                    # reading a large log (measured: 2 s of CPU a million records); stored
                    # as they are, they take about 4x the disk (210 MB a million records)
                    # in the work directory, which is removed at the end.
                    **({} if small else {"force_compression": "uncompressed"}),
                },
            )
            self.con.execute(_MACROS)
            self.keep_raw = keep_raw
            self.loaded = Loaded()
            self._names: list[str] = []
            self._load(paths, stdin)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        con = getattr(self, "con", None)
        if con is not None:
            con.close()
            self.con = None  # type: ignore[assignment]
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> DuckEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def _sources(self, paths: list[str], stdin: IO[bytes]) -> tuple[list[str], list[tuple[int, int, str]]]:
        """The name of each source in the order they were named, and the pieces DuckDB reads:
        (source, lines before the piece, file). Each file is read whole by DuckDB, so a large
        one, standard input and a gzip file are copied into pieces of at most PIECE bytes cut
        at a line's end; a file named twice or whose name is a glob pattern is linked anew."""
        names: list[str] = []
        pieces: list[tuple[int, int, str]] = []
        copies: list[tuple[int, Any]] = []  # (source, opener)
        seen: set[str] = set()
        for path in paths:
            if path == "-":
                names.append("<stdin>")
                copies.append((len(names) - 1, lambda: contextlib.nullcontext(stdin)))
                continue
            for target in files_under(path) if os.path.isdir(path) else [path]:
                # A pipe (<(zcat …)) can be read once only: it is copied, as a large file is.
                regular = stat.S_ISREG(os.stat(target).st_mode)
                if regular:
                    with open(target, "rb"):  # an unreadable log is named now, as the reader does
                        pass
                names.append(target)
                src = len(names) - 1
                real = os.path.abspath(target)
                if target.endswith(".gz"):
                    copies.append((src, lambda t=target: gzip.open(t, "rb")))
                elif not regular or os.path.getsize(real) > PIECE:
                    copies.append((src, lambda t=real: open(t, "rb")))
                else:
                    if real in seen or any(c in real for c in "*?[]{}"):
                        link = os.path.join(self._dir, f"file-{src}.jsonl")
                        os.symlink(real, link)
                        real = link
                    seen.add(real)
                    pieces.append((src, 0, real))

        def copy(job: tuple[int, Any]) -> list[tuple[int, int, str]]:
            src, opener = job
            return [
                (src, base, piece) for base, piece in _split(opener, os.path.join(self._dir, f"src-{src}"))
            ]

        stdin_jobs = [j for j in copies if names[j[0]] == "<stdin>"]
        for job in stdin_jobs:  # in this thread: standard input is read once, in order
            pieces += copy(job)
        others = [j for j in copies if names[j[0]] != "<stdin>"]
        if others:
            with ThreadPoolExecutor(max_workers=2) as pool:
                for found in pool.map(copy, others):
                    pieces += found
        pieces.sort()
        return names, pieces

    def _load(self, paths: list[str], stdin: IO[bytes]) -> None:
        names, pieces = self._sources(paths, stdin)
        self.loaded.sources = len(names)
        self._names = names
        self.con.execute(_CREATE_PARSED)
        self._read_lines(pieces)
        self._read_odd_lines()
        self._merge()

    def _read_lines(self, pieces: list[tuple[int, int, str]]) -> None:
        """Read ``pieces`` line by line in SQL (the lines it leaves whole go to Python)."""
        parse = _PARSE.replace("{raw}", "THEN line" if self.keep_raw else "AND false THEN line")
        # One statement reads its files on one core: the files are shared out between as many
        # statements as there are threads, each on its own cursor, run side by side.
        groups: list[list[tuple[int, int, str]]] = [[] for _ in range(max(1, min(self._threads, len(pieces))))]
        sizes = [0] * len(groups)
        for piece in sorted(pieces, key=lambda p: -_size(p[2])):
            k = sizes.index(min(sizes))
            groups[k].append(piece)
            sizes[k] += _size(piece[2])
        groups = [g for g in groups if g]
        marked: list[tuple[int, int, str]] = []  # (source, line number, text)
        with ThreadPoolExecutor(max_workers=len(groups) or 1) as pool:
            jobs = [pool.submit(self._parse_group, self.con.cursor(), parse, g) for g in groups]
            for src, base, path in pieces:  # meanwhile, in this thread
                marked += [(src, base + k, text) for k, text in _marked_lines(path)]
            for job in jobs:
                job.result()
        if marked:
            # A marked line SQL read goes to Python as a line it left whole.
            self.con.execute("CREATE TEMP TABLE marked (src INTEGER, lineno BIGINT, line VARCHAR)")
            self.con.executemany("INSERT INTO marked VALUES (?, ?, ?)", [list(m) for m in marked])
            self.con.execute(
                "UPDATE parsed SET odd = m.line FROM marked AS m"
                " WHERE parsed.odd IS NULL AND parsed.src = m.src AND parsed.lineno = m.lineno"
            )

    def _parse_group(self, cur: Any, parse: str, pieces: list[tuple[int, int, str]]) -> None:
        cur.execute(_MACROS)
        files = [p for _, _, p in pieces]
        params = {"paths": files, "srcs": [s for s, _, _ in pieces], "bases": [b for _, b, _ in pieces]}
        for _ in range(len(files) + 1):
            try:
                cur.execute(parse, params)
                break
            except duckdb.InvalidInputException as e:
                bad = _not_utf8(str(e), files)
                if bad is None:
                    raise EngineError(str(e).splitlines()[0]) from None
                src, base, _ = pieces[files.index(bad)]
                fixed = os.path.join(self._dir, f"utf8-{src}-{base}.jsonl")
                _decode_replacing(bad, fixed)
                files[files.index(bad)] = fixed

    def _read_odd_lines(self) -> None:
        """The lines SQL left whole, read by the Python reader; its records join the others."""
        rows = []
        malformed: list[tuple[int, int]] = []

        def odd_lines() -> Iterator[tuple[int, int, str]]:
            cur = self.con.execute("SELECT src, lineno, odd FROM parsed WHERE odd IS NOT NULL")
            while batch := cur.fetchmany(10000):
                yield from batch

        for src, lineno, line in odd_lines():
            found = records_in_line(line)
            if found is None:
                malformed.append((src, lineno))
                continue
            for pos, rec in enumerate(found, 1):
                rows.append(_fallback_row(src, lineno, pos, rec, self.keep_raw))
        if rows:
            spool = os.path.join(self._dir, "odd.jsonl")
            with open(spool, "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            columns = {"src": "INTEGER", "lineno": "BIGINT", "pos": "INTEGER", "odd": "VARCHAR"}
            columns.update({f: "VARCHAR" for f in _FIELDS})
            columns.update({"raw": "VARCHAR", "t_us": "BIGINT"})
            self.con.execute(
                "INSERT INTO parsed BY NAME SELECT * FROM read_json(?, format = 'newline_delimited', columns = ?)",
                [spool, columns],
            )
        self._odd_malformed = malformed

    def _merge(self) -> None:
        con = self.con
        # Times in another form than the writer's: Python's reading of each distinct one.
        others = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT ts FROM parsed WHERE odd IS NULL AND t_us IS NULL"
            ).fetchall()
        ]
        known = [[ts, us] for ts in others if ts is not None and (us := _python_us(ts)) is not None]
        if known:
            con.execute("CREATE TABLE ts_other (ts VARCHAR, us BIGINT)")
            con.executemany("INSERT INTO ts_other VALUES (?, ?)", known)
            con.execute(
                "UPDATE parsed SET t_us = o.us FROM ts_other AS o"
                " WHERE parsed.odd IS NULL AND parsed.t_us IS NULL AND parsed.ts = o.ts"
            )
        bad = con.execute(
            "SELECT count(*), min({'s': src, 'l': lineno}) FROM parsed WHERE odd IS NULL AND t_us IS NULL"
        ).fetchone()
        firsts = list(self._odd_malformed)
        if bad and bad[0]:
            firsts.append((bad[1]["s"], bad[1]["l"]))
        self.loaded.malformed = len(self._odd_malformed) + (bad[0] if bad else 0)
        if firsts:
            src, lineno = min(firsts)
            self.loaded.first_malformed = f"{self._names[src]}:{lineno}"
        # One copy of each id, the first read. The ids read more than once are found by their
        # hashes (a table of ten million 8-byte keys fits where one of the ids does not); those
        # ids' copies are then numbered in the order read and the later ones set aside by
        # position. As copies are few, only they are sorted, and a hash two ids share only adds
        # rows to that sort.
        # The hashes read twice are found by sorting them (each one equal to the one before it),
        # not by a table of counts: a sort of ten million 8-byte keys spills to disk as it needs
        # to, where a table of counts of them does not fit the default memory_limit (it had to
        # be built a slice at a time, a scan of the records each), and costs a third less.
        con.execute(
            """
            CREATE TABLE copied AS
            SELECT DISTINCT h FROM (
              SELECT h, lag(h) OVER (ORDER BY h) AS before FROM (
                SELECT guard_h(id) AS h FROM parsed WHERE odd IS NULL AND t_us IS NOT NULL
              )
            ) WHERE h = before
            """
        )
        con.execute(
            """
            CREATE TABLE later_copies AS
            SELECT src, lineno, pos FROM (
              SELECT src, lineno, pos, row_number() OVER (PARTITION BY id ORDER BY src, lineno, pos) AS copy
              FROM (
                SELECT src, lineno, pos, id, guard_h(id) AS h FROM parsed WHERE odd IS NULL AND t_us IS NOT NULL
              )
              SEMI JOIN copied USING (h)
            ) WHERE copy > 1
            """
        )
        # The later copies are deleted once, so the report's queries read the tables as they
        # are rather than each joining them with the copies again.
        self.loaded.duplicates = con.execute("SELECT count(*) FROM later_copies").fetchone()[0]
        if self.loaded.duplicates:
            con.execute(
                "DELETE FROM parsed USING later_copies AS c"
                " WHERE parsed.src = c.src AND parsed.lineno = c.lineno AND parsed.pos = c.pos"
            )
        fields = ", ".join(_FIELDS)
        con.execute(
            f"""
            CREATE VIEW records AS
            SELECT {fields}, raw, t_us, t_us / 1000000 AS t FROM parsed WHERE odd IS NULL AND t_us IS NOT NULL
            """
        )
        con.execute(f"CREATE VIEW kept AS SELECT * FROM records WHERE {queries.NOT_TRIAL}")
        con.execute(f"CREATE VIEW trial AS SELECT * FROM records WHERE NOT ({queries.NOT_TRIAL})")

    # ------------------------------------------------------------------ filtering

    def keep(
        self, since: float | None, until: float | None, fields: tuple[tuple[str, tuple[str, ...]], ...]
    ) -> str:
        """Define the view ``kept``; its WHERE clause, as SQL an operator could run."""
        from fnmatch import fnmatchcase

        where = []
        if since is not None:
            where.append(f"t >= {since!r}")
        if until is not None:
            where.append(f"t < {until!r}")
        shown = list(where)
        for name, patterns in fields:
            if name not in _STRING_FIELDS:
                raise EngineError(f"cannot filter on {name}")
            values = [
                r[0]
                for r in self.con.execute(f"SELECT DISTINCT coalesce({name}, '') FROM records").fetchall()
            ]
            matched = [v for v in values if any(fnmatchcase(_unmask(v), p) for p in patterns)]
            where.append(f"coalesce({name}, '') IN ({_sql_list(matched)})" if matched else "false")
            shown.append(
                "(" + " OR ".join(f"coalesce({name}, '') GLOB {_sql_text(p)}" for p in patterns) + ")"
            )
        chosen = " AND ".join(where)
        for view, which in (("kept", queries.NOT_TRIAL), ("trial", f"NOT ({queries.NOT_TRIAL})")):
            self.con.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM records WHERE {which}"
                             + (f" AND {chosen}" if chosen else ""))
        return " AND ".join(shown)

    # ------------------------------------------------------------------ the report

    def _rows(self, sql: str, params: Mapping[str, Any] | None = None, con: Any = None) -> list[tuple]:
        used = {k: v for k, v in (params or {}).items() if f"${k}" in sql}
        return (con or self.con).execute(sql, used).fetchall()

    def report(self, top_n: int, window_minutes: float, rule_ids: list[str] | None) -> dict[str, Any]:
        from guard.audit.reports.normalise import normalise_command
        from guard.audit.reports.pyreport import days_between

        params = {"top": top_n, "window_s": window_minutes * 60}
        # The retry runs are worked out by DuckDB on a cursor of their own, and the other
        # queries on another, while this thread folds the commands (DuckDB lets go of the GIL
        # while it runs a query): on two cores the report takes about as long as its longest
        # query rather than all of them one after the other.
        with ThreadPoolExecutor(max_workers=2) as pool:
            retries = pool.submit(self._retries, params, self.con.cursor())
            others = pool.submit(self._counts, params, self.con.cursor())
            folded: dict[str, int] = {}
            cur = self.con.cursor().execute(queries.REFUSED_COMMANDS)
            while batch := cur.fetchmany(10000):
                for command, count in batch:
                    key = normalise_command(_unmask(command))
                    folded[key] = folded.get(key, 0) + count
            commands = sorted(folded.items(), key=lambda kv: (-kv[1], kv[0]))[:top_n]
            summary, top_rule, top_category, fired_rows, per_day_rows = others.result()
            threads_rows = retries.result()
        records, refusals, first, last, agents, threads = summary[0]
        fired = {_unmask(r[0]) for r in fired_rows}
        never = None if rule_ids is None else [x for x in rule_ids if x not in fired]
        per_day = {day: (r, a) for day, r, a in per_day_rows}
        data = {
            "summary": {
                "records": records,
                "refusals": refusals,
                "annotations": records - refusals,
                "sources": self.loaded.sources,
                "duplicates": self.loaded.duplicates,
                "malformed": self.loaded.malformed,
                "first": first,
                "last": last,
                "agents": agents,
                "threads": threads,
            },
            "top": {
                "rule": [{"key": k, "count": c} for k, c in top_rule],
                "category": [{"key": k, "count": c} for k, c in top_category],
                "command": [{"key": k, "count": c} for k, c in commands],
            },
            "retries": {
                "window_minutes": window_minutes,
                "runs": sum(r[3] for r in threads_rows),
                "runs_with_retries": sum(r[4] for r in threads_rows),
                "wasted": sum(r[5] for r in threads_rows),
                "threads": [
                    {
                        "agent": agent,
                        "thread": thread,
                        "refusals": refusals_,
                        "runs": runs,
                        "wasted": wasted,
                        "longest": longest,
                        "top_category": category,
                    }
                    for agent, thread, refusals_, runs, _, wasted, longest, category in threads_rows
                ],
            },
            "never_fired": {"known": never is not None, "rules": never or []},
            "per_day": [
                {"day": day, "refusals": per_day.get(n, (0, 0))[0], "annotations": per_day.get(n, (0, 0))[1]}
                for n, day in days_between(min(per_day, default=0), max(per_day, default=-1))
            ],
        }
        return _unmask_all(data)

    def _counts(self, params: Mapping[str, Any], cur: Any) -> list[list[tuple]]:
        """The rows of SUMMARY, TOP_RULE, TOP_CATEGORY, FIRED and PER_DAY, in that order (the last
        four from one count of the kept records, on this cursor: the table is its own)."""
        cur.execute(queries.KEPT_COUNTS)
        sqls = (
            queries.SUMMARY,
            queries.TOP_RULE_COUNTED,
            queries.TOP_CATEGORY_COUNTED,
            queries.FIRED_COUNTED,
            queries.PER_DAY_COUNTED,
        )
        return [self._rows(sql, params, cur) for sql in sqls]

    def _retries(self, params: Mapping[str, Any], cur: Any) -> list[tuple]:
        """RETRIES' rows, sorted by hashed threads (RETRIES itself where two threads share a hash)."""
        rows = self._rows(queries.RETRIES_BY_HASH, params, cur)
        if any(r[-1] > 1 for r in rows):
            return self._rows(queries.RETRIES, params, cur)
        return [r[:-1] for r in rows]

    def details(self, data: dict[str, Any], top_n: int, window_minutes: float) -> dict[str, Any]:
        """What the HTML page shows beside the report: refusals per day and category,
        annotations by rule, and the commands behind each row."""
        from guard.audit.reports.normalise import normalise_command
        from guard.audit.reports.pyreport import SAMPLES, day_name, top_commands

        params = {"top": top_n, "window_s": window_minutes * 60}
        per_day_category = [
            {"day": day_name(day), "category": category, "count": count}
            for day, category, count in self._rows(queries.PER_DAY_CATEGORY)
        ]
        annotations = [{"key": k, "count": c} for k, c in self._rows(queries.ANNOTATIONS_BY_RULE, params)]
        commands: dict[str, dict[str, list[list[Any]]]] = {}
        for kind, sql in (("rule", queries.COMMANDS_BY_RULE), ("category", queries.COMMANDS_BY_CATEGORY)):
            wanted = {row["key"] for row in data["top"][kind]}
            counts: dict[str, list[tuple[str, int]]] = {}
            for key, command, count in self._rows(sql):
                if key in wanted:
                    counts.setdefault(key, []).append((command, count))
            commands[kind] = {k: top_commands(v) for k, v in counts.items()}
        wanted = {row["key"] for row in data["top"]["command"]}
        by_form: dict[str, list[tuple[str, int]]] = {}
        for command, count in self._rows(queries.REFUSED_COMMANDS):
            form = normalise_command(_unmask(command))
            if form in wanted:
                by_form.setdefault(form, []).append((command, count))
        commands["command"] = {k: top_commands(v) for k, v in by_form.items()}
        shown = [t for t in data["retries"]["threads"] if t["wasted"]][:top_n]
        self.con.execute("CREATE OR REPLACE TABLE wanted_threads (agent VARCHAR, thread VARCHAR)")
        if shown:
            self.con.executemany(
                "INSERT INTO wanted_threads VALUES (?, ?)",
                [[_mask(t["agent"]), _mask(t["thread"])] for t in shown],
            )
        runs: dict[str, list[list[Any]]] = {}
        if shown:
            for agent, thread, t, command in self._rows(queries.LONGEST_RUNS, params):
                run = runs.setdefault(f"{agent}\0{thread}", [])
                if len(run) < SAMPLES * 4:
                    run.append([datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S"), command])
        commands["thread"] = runs
        return _unmask_all(
            {"per_day_category": per_day_category, "annotations": annotations, "commands": commands}
        )

    def trial_records(self) -> Iterator[tuple[float, Record]]:
        """(t, record) of what rules on trial (warn, observe) matched, in (ts, id) order."""
        names = ("rule", "category", "agent", "thread", "command", "action")
        cur = self.con.execute(f"SELECT t, {', '.join(names)} FROM trial ORDER BY t, id")
        while batch := cur.fetchmany(10000):
            for t, *values in batch:
                yield t, {k: None if v is None else _unmask(v) for k, v in zip(names, values, strict=True)}

    def records(self) -> Iterator[Record]:
        """The kept records, trial ones included, in (ts, id) order, as the log holds them."""
        cur = self.con.execute(
            "SELECT raw FROM (SELECT raw, t, id FROM kept UNION ALL SELECT raw, t, id FROM trial) ORDER BY t, id"
        )
        while batch := cur.fetchmany(10000):
            for (raw,) in batch:
                yield json.loads(_unmask(raw))


# --------------------------------------------------------------------------- helpers


def _marked_lines(path: str) -> list[tuple[int, str]]:
    """The lines of a file ``_MARKS`` finds: (line number, text as SQL holds it)."""
    with open(path, "rb") as f:
        # Searched where the page cache holds it: most files have no such line, and copying
        # each into a bytes object first cost a tenth of the search.
        if os.fstat(f.fileno()).st_size == 0:
            return []
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            if _MARKS.search(mapped) is None:
                return []
            data = mapped[:]
    found: list[tuple[int, str]] = []
    at, lineno, end = 0, 1, -1
    for m in _MARKS.finditer(data):
        if m.start() <= end:
            continue  # the line already marked
        lineno += data.count(b"\n", at, m.start())
        at = m.start()
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        line = data[start:end]
        found.append((lineno, (line[:-1] if line.endswith(b"\r") else line).decode("utf-8", "replace")))
    return found


def _split(opener: Any, prefix: str) -> Iterator[tuple[int, str]]:
    """Copy what ``opener()`` reads into files of about PIECE bytes, each ending at a line's end;
    (lines before it, file) for each. A gzip file cut short keeps what it had (its torn last
    line is then malformed, as any torn line is)."""
    lines = 0
    n = 0
    buf = bytearray()
    done = False
    with opener() as stream:
        while not done:
            try:
                block = stream.read(1 << 20)
            except EOFError:
                block = b""
            done = not block
            buf += block
            if len(buf) < PIECE and not done:
                continue
            cut = len(buf) if done else buf.rfind(b"\n") + 1
            if cut == 0:
                continue
            if cut or n == 0:
                yield lines, _write(f"{prefix}-{n}.jsonl", bytes(buf[:cut]))
                lines += buf.count(b"\n", 0, cut)
                del buf[:cut]
                n += 1


def _input_bytes(paths: list[str]) -> int:
    """About how much log ``paths`` hold, uncompressed; standard input and pipes count as large."""
    total = 0
    for path in paths:
        try:
            targets = files_under(path) if os.path.isdir(path) else [path]
            for target in targets:
                st = os.stat(target)
                if not stat.S_ISREG(st.st_mode):
                    return MEMORY_DB_BYTES + 1
                total += st.st_size * (10 if target.endswith(".gz") else 1)
        except OSError:
            continue
    return total + (MEMORY_DB_BYTES + 1 if "-" in paths else 0)


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return path


def _not_utf8(message: str, paths: list[str]) -> str | None:
    if "UTF-8" not in message and "utf-8" not in message and "unicode" not in message.lower():
        return None
    for path in paths:
        if f"'{path}'" in message or f"file = {path}" in message:
            return path
    return None


def _decode_replacing(source: str, dest: str) -> None:
    with open(source, "rb") as f, open(dest, "w", encoding="utf-8") as out:
        for line in f:
            out.write(line.decode("utf-8", "replace"))


def _python_us(ts: str | None) -> int | None:
    """Microseconds since the epoch for a time the SQL reader left to Python."""
    if ts is None:
        return None
    try:
        t = datetime.fromisoformat(_unmask(ts).strip())
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    delta = t - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _text(value: object, falsy_is_none: bool = False) -> str | None:
    """A field as the report reads it: a string as is, anything else as ``str()`` of it."""
    if value is None or isinstance(value, str):
        return None if value is None else _mask(value)
    if falsy_is_none and not value:
        return None
    return _mask(str(value))


def _fallback_row(src: int, lineno: int, pos: int, rec: Record, keep_raw: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"src": src, "lineno": lineno, "pos": pos, "odd": None}
    for name in _FIELDS:
        row[name] = _text(rec.get(name), falsy_is_none=name in ("agent", "thread", "category"))
    row["raw"] = _mask(json.dumps(rec)) if keep_raw else None
    row["t_us"] = _python_us(rec["ts"])
    return row


def _mask(text: str) -> str:
    return _SURROGATE.sub(lambda m: chr(ord(m.group(0)) - 0xD800 + 0x100000), text)


def _unmask(text: str) -> str:
    if not isinstance(text, str) or text.isascii():  # isascii: a flag CPython keeps, no scan
        return text
    return _MASKED.sub(lambda m: chr(ord(m.group(0)) - 0x100000 + 0xD800), text)


def _unmask_all(value: Any) -> Any:
    if isinstance(value, str):
        return _unmask(value)
    if isinstance(value, list):
        return [_unmask_all(v) for v in value]
    if isinstance(value, dict):
        return {_unmask(k): _unmask_all(v) for k, v in value.items()}
    return value


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_list(values: list[str]) -> str:
    return ", ".join(_sql_text(v) for v in values)
