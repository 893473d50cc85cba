"""``guard audit`` on DuckDB: the logs are read, merged and reported on by an embedded analytical
engine, so a fleet's month (millions of records) is reported on in bounded memory.

Only ``guard audit`` imports this module (DuckDB is the optional extra ``guard[audit]``).

Reading keeps the Python reader's meaning line for line (``guard.audit.read``): each file is split
on ``\\n`` only, with its line numbers. ``.gz`` files are decompressed into a work directory
first and standard input is spooled there. Two readers share the work:

- The fast one: DuckDB's ``read_json`` with our fields as typed columns reads every file, one row a
  line, numbered in the order read. Beside it, Python counts each file's lines and marks the lines
  where DuckDB's JSON reading and Python's part ways (a trailing comma, ``nan``/``inf`` spellings
  Python refuses, a key written twice, an escape in a key, a NUL or surrogate escape). A row is
  kept when its line is not marked, it is one of our records (``id``, ``ts`` and ``verdict`` or
  ``kind`` present) and no field of ours holds what could be a number, a boolean, an object or an
  array read as text; every other line (collector envelopes, prefixes, batches, malformed and
  torn lines, bytes that are not UTF-8) goes to ``read.records_in_line``.
- The exact one, for a file whose line count is not the number of rows DuckDB gave (blank lines,
  which DuckDB skips) or whose sampled rows are not on their line, and for ``--csv`` and
  ``--records`` (which print each record as the log holds it): each line in SQL with per-line
  JSON functions, the odd ones in Python.

The records are then merged (first copy of each id, in the order the files were named) and the
report's queries (``guard.audit.queries``) run over them; DuckDB spills to the work directory when
memory runs short.
"""

from __future__ import annotations

import contextlib
import gzip
import json
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

from guard.audit import queries
from guard.audit.read import Loaded, Record, files_under, records_in_line

DEFAULT_MEMORY = "300MB"
PIECE = 64 * 1024 * 1024  # bytes of log DuckDB reads as one value
# Up to this much log the records are held in an in-memory database (writing a database file
# costs about 1.5 s of CPU a million records); past it, in a file in the work directory, whose
# pages are compressed as they are written and can always be written out when memory_limit is
# reached (ten million records: about 430 MB peak RSS at the default memory_limit).
MEMORY_DB_BYTES = 512 * 1024 * 1024
_FIELDS = ("id", "ts", "verdict", "kind", "rule", "category", "agent", "thread", "command", "role")
_STRING_FIELDS = _FIELDS[2:]
# A lone surrogate (a JSON "\\udXXX" escape) cannot be held by DuckDB: it travels as a character
# of Supplementary Private Use Area-B and is turned back on the way out.
_SURROGATE = re.compile("[\ud800-\udfff]")
_MASKED = re.compile("[\U00100000-\U001007ff]")
# Lines left to the Python reader although DuckDB reads them: a trailing comma (DuckDB's JSON
# reader takes it, Python's does not); and, of the lines with a \u escape, those with a lone
# surrogate, a NUL, or an escape in a key (an escaped "id" is still our field to Python).
_TRAILING_COMMA = r",[ \t\r]*[\]}]"
_ODD_ESCAPE = r'\\u[dD][89a-fA-F]|\\u0000|\\u[0-9a-fA-F]{4}(?:[^"\\]|\\.)*"[ \t\r]*:'
_PATHS = repr(["$." + f for f in _FIELDS])
_STRING_OR_NULL = " AND ".join(f"coalesce(y[{i}] IN ('VARCHAR', 'NULL'), true)" for i in range(3, len(_FIELDS) + 1))

# One statement per group of files: every line, the ones SQL reads as they are, and the others
# kept whole for the Python reader. A line is read here when it is one JSON object (json_valid)
# with none of the forms above, id and ts strings, verdict or kind a string, and every field of
# ours a string or null (json_type). Differences left, which only a hand-edited log can show
# (guard's writer never writes them, and what an agent types is in values, escaped): of a key
# written twice in one object, json_extract reads the first and Python the last; and nan or inf
# (lower case) as a value outside our fields, which DuckDB reads as a number and Python refuses.
_PARSE = f"""
INSERT INTO parsed
SELECT src, lineno, 0 AS pos,
       CASE WHEN ok THEN NULL ELSE line END AS odd,
       {", ".join(f"CASE WHEN ok THEN j[{i + 1}] END AS {f}" for i, f in enumerate(_FIELDS))},
       CASE WHEN ok {{raw}} END AS raw,
       CASE WHEN ok THEN guard_us(j[2]) END AS t_us
FROM (
  SELECT src, lineno, line, j,
         coalesce(fast AND y[1] = 'VARCHAR' AND y[2] = 'VARCHAR' AND (y[3] = 'VARCHAR' OR y[4] = 'VARCHAR')
                  AND {_STRING_OR_NULL}, false) AS ok
  FROM (
    SELECT src, lineno, line, fast,
           CASE WHEN fast THEN json_extract_string(line, {_PATHS}) END AS j,
           CASE WHEN fast THEN json_type(line, {_PATHS}) END AS y
    FROM (
      SELECT src, lineno, line,
             line[1] = '{{' AND line[-1] = '}}'
               AND NOT regexp_matches(line, '{_TRAILING_COMMA}')
               AND NOT (CASE WHEN contains(line, '\\u') THEN regexp_matches(line, '{_ODD_ESCAPE}') ELSE false END)
               AND json_valid(line) AS fast
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
)
"""

# The fast reader: every line of every file as one row, numbered in the order read (the rows of
# one file are consecutive and in its order; a blank line gives no row, a line DuckDB cannot read
# an all-NULL one), with ``ok`` when the row is one of our records whose fields DuckDB read as
# Python does.
_FAST_COLUMNS = {f: "VARCHAR" for f in _FIELDS}
_FAST = f"""
INSERT INTO fast
SELECT list_extract($ns, (file_index + 1)::BIGINT) AS n, $offset + row_number() OVER () AS rn,
       {", ".join(_FIELDS)}, guard_us(ts) AS t_us,
       id IS NOT NULL AND ts IS NOT NULL AND (verdict IS NOT NULL OR kind IS NOT NULL) AS ok, guard_h(id) AS h
FROM read_json($paths, format = 'newline_delimited', records = true, ignore_errors = true, columns = $columns)
"""

_CREATE_FAST = f"""
CREATE TABLE fast (n INTEGER, rn BIGINT, {", ".join(f"{f} VARCHAR" for f in _FIELDS)}, t_us BIGINT, ok BOOLEAN,
                   h UBIGINT)
"""

# Where DuckDB's JSON reader and Python's part ways on a line DuckDB reads (those it cannot read
# come out NULL and go to Python anyway): a trailing comma, which DuckDB takes and Python does
# not; nan and inf, which DuckDB takes in any case and Python only as NaN and Infinity; a key of
# ours written twice (DuckDB keeps the first, Python the last); an escape in a key (which could
# spell one of ours twice); NUL and surrogate escapes; and a field of ours whose value is not a
# string or null (DuckDB reads 5 or true into a text column as "5" or "true", Python's reader
# gives str() of it, and a record needs its id and ts to be strings). None of these reaches past
# its line.
_OURS = "|".join(_FIELDS).encode()
_KEY_TWICE = [rf'"{f}"[ \t\r]*:.*"{f}"[ \t\r]*:'.encode() for f in _FIELDS]
_MARKED = [
    rb",[ \t\r]*[\]}]",
    rb"[:,\[][ \t\r]*[-+]?(?i:nan|inf)",
    rb"\\u[dD][89a-fA-F]|\\u0000",
    rb'\\u[0-9a-fA-F]{4}(?:[^"\\\n]|\\.)*"[ \t\r]*:',
    rb'"(?:' + _OURS + rb')"[ \t\r]*:[ \t\r]*(?:[^"n \t\r]|n(?:[^u]|u[^l]|ul[^l]))',
    *_KEY_TWICE,
]
_MARKED_RE = re2.compile(b"|".join(_MARKED))

_CREATE_PARSED = """
CREATE TABLE parsed (src INTEGER, lineno BIGINT, pos INTEGER, odd VARCHAR, id VARCHAR, ts VARCHAR,
  verdict VARCHAR, kind VARCHAR, rule VARCHAR, category VARCHAR, agent VARCHAR, thread VARCHAR,
  command VARCHAR, role VARCHAR, raw VARCHAR, t_us BIGINT)
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
        self.con.execute(_CREATE_FAST)
        self.con.execute("CREATE TABLE fast_files (n INTEGER, first BIGINT, last BIGINT, rows BIGINT)")
        self.con.execute("CREATE TABLE fast_place (n INTEGER, src INTEGER, base BIGINT)")
        self.con.execute(
            "CREATE VIEW fast_at AS SELECT f.*, p.src, f.rn - x.first + 1 + p.base AS lineno, 0 AS pos"
            " FROM fast AS f JOIN fast_place AS p USING (n) JOIN fast_files AS x USING (n)"
        )
        self._lines: list[tuple[int, int, str]] = []  # (source, line number, text) for Python
        exact = pieces if self.keep_raw else self._read_fast(pieces)
        self._read_exact(exact)
        self._read_odd_lines()
        self._merge()

    def _read_exact(self, pieces: list[tuple[int, int, str]]) -> None:
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
        if len(groups) == 1:
            self._parse_group(self.con, parse, groups[0])
        elif groups:
            with ThreadPoolExecutor(max_workers=len(groups)) as pool:
                list(pool.map(lambda g: self._parse_group(self.con.cursor(), parse, g), groups))

    def _read_fast(self, pieces: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Read ``pieces`` with DuckDB's JSON reader while Python marks the lines it must read
        itself; the lines DuckDB did not read as Python would are queued for Python (``_lines``).
        The pieces whose rows cannot be matched to their lines are returned, for the exact reader."""
        if not pieces:
            return []
        paths = [p for _, _, p in pieces]
        # The files are shared out between one statement per core (a row number is one
        # pipeline's: the files in the order given, each file's lines in order).
        k = max(1, min(self._threads, len(pieces)))
        groups = [list(range(len(pieces)))[g::k] for g in range(k)]
        self.con.execute("SET preserve_insertion_order = true")

        def insert(g: int) -> None:
            cur = self.con.cursor()
            cur.execute(_MACROS)
            ns = groups[g]
            cur.execute(
                _FAST, {"paths": [paths[n] for n in ns], "ns": ns, "offset": g << 40, "columns": _FAST_COLUMNS}
            )

        with ThreadPoolExecutor(max_workers=k) as pool:
            inserts = [pool.submit(insert, g) for g in range(k)]
            scans = [_scan(path) for path in paths]  # meanwhile, in this thread
            try:
                for job in inserts:
                    job.result()
            except (duckdb.InvalidInputException, duckdb.IOException):  # a file DuckDB gives up on: all go the exact way
                for job in inserts:
                    job.exception()
                self.con.execute("DELETE FROM fast")
                return pieces
            finally:
                self.con.execute("SET preserve_insertion_order = false")
        con = self.con
        con.execute(
            "INSERT INTO fast_files SELECT n, min(rn) AS first, max(rn) AS last, count(*) AS rows"
            " FROM fast GROUP BY n"
        )
        files = {n: (first, last, rows) for n, first, last, rows in con.execute("SELECT * FROM fast_files").fetchall()}
        wanted: dict[int, set[int]] = {}
        for n, k in con.execute(
            "SELECT n, rn - first + 1 FROM fast JOIN fast_files USING (n) WHERE NOT ok"
        ).fetchall():
            wanted.setdefault(n, set()).add(k)
        # Each file's first and last rows are checked to be on their lines.
        ends: dict[int, list[tuple[int, str]]] = {}
        for n, end, id_ in con.execute(
            "SELECT n, rn = last, id FROM fast JOIN fast_files USING (n) WHERE ok AND (rn = first OR rn = last)"
        ).fetchall():
            ends.setdefault(n, []).append((end, id_))
        exact: list[tuple[int, int, str]] = []
        dropped: list[int] = []  # the row numbers of the lines Python reads
        for n, (src, base, path) in enumerate(pieces):
            lines, marked, head, tail = scans[n]
            first, last, rows = files.get(n, (1, 0, 0))
            if (
                rows != lines
                or last - first + 1 != rows
                or any(id_.encode("utf-8", "surrogatepass") not in (tail if end else head) for end, id_ in ends.get(n, []))
            ):
                exact.append(pieces[n])
                continue
            todo = sorted(wanted.get(n, set()) | marked)
            if not todo:
                continue
            with open(path, "rb") as f:
                text = f.read().split(b"\n")
            for k in todo:
                self._lines.append((src, base + k, text[k - 1].decode("utf-8", "replace")))
                dropped.append(first + k - 1)
        gone = [n for n, piece in enumerate(pieces) if piece in exact]
        con.execute("CREATE TEMP TABLE dropped AS SELECT unnest($rn::BIGINT[]) AS rn", {"rn": dropped})
        con.execute(
            "DELETE FROM fast WHERE NOT ok OR list_contains($gone, n) OR rn IN (SELECT rn FROM dropped)",
            {"gone": gone},
        )
        # A row's place among its source's lines, for the first copy of an id and the first
        # malformed line.
        con.execute(
            "INSERT INTO fast_place SELECT unnest($n::INTEGER[]), unnest($src::INTEGER[]), unnest($base::BIGINT[])",
            {"n": list(range(len(pieces))), "src": [p[0] for p in pieces], "base": [p[1] for p in pieces]},
        )
        return exact

    def _parse_group(self, cur: Any, parse: str, pieces: list[tuple[int, int, str]]) -> None:
        if cur is not self.con:
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
        """The lines SQL left whole and those the fast reader queued, read by the Python reader;
        its records join the others."""
        rows = []
        malformed: list[tuple[int, int]] = []

        def odd_lines() -> Iterator[tuple[int, int, str]]:
            cur = self.con.execute("SELECT src, lineno, odd FROM parsed WHERE odd IS NOT NULL")
            while batch := cur.fetchmany(10000):
                yield from batch
            yield from self._lines

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
                " UNION SELECT DISTINCT ts FROM fast WHERE t_us IS NULL"
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
            con.execute("UPDATE fast SET t_us = o.us FROM ts_other AS o WHERE fast.t_us IS NULL AND fast.ts = o.ts")
        bad = con.execute(
            "SELECT count(*), min({'s': src, 'l': lineno}) FROM ("
            " SELECT src, lineno FROM parsed WHERE odd IS NULL AND t_us IS NULL"
            " UNION ALL SELECT src, lineno FROM fast_at WHERE t_us IS NULL)"
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
                UNION ALL SELECT h FROM fast WHERE t_us IS NOT NULL
              )
            ) WHERE h = before
            """
        )
        con.execute(
            """
            CREATE TABLE later_copies AS
            SELECT rn, src, lineno, pos FROM (
              SELECT rn, src, lineno, pos, row_number() OVER (PARTITION BY id ORDER BY src, lineno, pos) AS copy
              FROM (
                SELECT NULL::BIGINT AS rn, src, lineno, pos, id, guard_h(id) AS h FROM parsed
                WHERE odd IS NULL AND t_us IS NOT NULL
                UNION ALL SELECT rn, src, lineno, pos, id, h FROM fast_at WHERE t_us IS NOT NULL
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
                "DELETE FROM parsed USING later_copies AS c WHERE c.rn IS NULL"
                " AND parsed.src = c.src AND parsed.lineno = c.lineno AND parsed.pos = c.pos"
            )
            con.execute("DELETE FROM fast USING later_copies AS c WHERE fast.rn = c.rn")
        fields = ", ".join(_FIELDS)
        con.execute(
            f"""
            CREATE VIEW records AS
            SELECT {fields}, raw, t_us, t_us / 1000000 AS t FROM parsed WHERE odd IS NULL AND t_us IS NOT NULL
            UNION ALL
            SELECT {fields}, NULL AS raw, t_us, t_us / 1000000 AS t FROM fast WHERE t_us IS NOT NULL
            """
        )
        con.execute("CREATE VIEW kept AS SELECT * FROM records")

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
        self.con.execute(
            "CREATE OR REPLACE VIEW kept AS SELECT * FROM records"
            + (" WHERE " + " AND ".join(where) if where else "")
        )
        return " AND ".join(shown)

    # ------------------------------------------------------------------ the report

    def _rows(self, sql: str, params: Mapping[str, Any] | None = None, con: Any = None) -> list[tuple]:
        used = {k: v for k, v in (params or {}).items() if f"${k}" in sql}
        return (con or self.con).execute(sql, used).fetchall()

    def report(self, top_n: int, window_minutes: float, rule_ids: list[str] | None) -> dict[str, Any]:
        from guard.audit.normalise import normalise_command
        from guard.audit.pyreport import days_between

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
        """The rows of SUMMARY, TOP_RULE, TOP_CATEGORY, FIRED and PER_DAY, in that order."""
        sqls = (queries.SUMMARY, queries.TOP_RULE, queries.TOP_CATEGORY, queries.FIRED, queries.PER_DAY)
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
        from guard.audit.normalise import normalise_command
        from guard.audit.pyreport import SAMPLES, day_name, top_commands

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

    def records(self) -> Iterator[Record]:
        """The kept records in (ts, id) order, as the log holds them."""
        cur = self.con.execute("SELECT raw FROM kept ORDER BY t, id")
        while batch := cur.fetchmany(10000):
            for (raw,) in batch:
                yield json.loads(_unmask(raw))


# --------------------------------------------------------------------------- helpers


def _scan(path: str) -> tuple[int, set[int], bytes, bytes]:
    """The lines in a file (split on ``\\n`` only), the numbers of those the fast reader must
    leave to Python (``_MARKED``), and the first and last lines."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    marked: set[int] = set()
    at, lineno = 0, 1
    for m in _MARKED_RE.finditer(data):
        lineno += data.count(b"\n", at, m.start())
        at = m.start()
        marked.add(lineno)
    head = data[: data.find(b"\n") if b"\n" in data else len(data)]
    body = data[:-1] if data.endswith(b"\n") else data
    tail = body[body.rfind(b"\n") + 1 :]
    return lines, marked, head, tail


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
    if not isinstance(text, str):
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
