"""The record schema as a table definition, and the queries ``guard audit`` runs, as SQL.

The DuckDB engine (``guard.audit.reports.duck``) runs these texts as they are, over a view ``kept`` (the
records the report's filters keep), except that it works out the retry runs with
``RETRIES_BY_HASH`` (DuckDB's ``hash``; the same rows) and works out the small tables from one
count of the records (``KEPT_COUNTS``; the same rows); ``guard audit --sql`` prints them, so an
operator whose fleet ships its logs to a warehouse can run the same report where the logs live.
The dialect is DuckDB's; apart from ``FILTER (WHERE …)`` and ``epoch()`` it is standard SQL.

Each query keeps the meaning the Python engine (``guard.audit.reports.pyreport``) gives its field: a
missing or empty agent, thread or category counts as ``-`` in the retry table, and the summary
counts agents and threads so; a missing rule or category counts as ``-`` in the "refused most"
tables; ties sort by the key.
"""

from __future__ import annotations

# The record guard.audit.log writes, one JSON object per line; an annotation adds the fields
# after ``schema``. Every record has ``id``, ``ts`` and ``verdict`` or ``kind``.
SCHEMA = """\
CREATE TABLE guard_audit (
  id             VARCHAR NOT NULL,  -- 26-character ULID: 48 bits of milliseconds, 80 random bits
  ts             VARCHAR NOT NULL,  -- RFC 3339 UTC with milliseconds: 2026-03-02T09:12:53.984Z
  kind           VARCHAR,           -- refusal | trial | annotation
  verdict        VARCHAR,           -- refuse | allow (trial) | annotate
  category       VARCHAR,           -- the rule's category: publish, mutate, read-probe, credential…
  rule           VARCHAR,           -- the id of the rule that refused or annotated
  tool           VARCHAR,           -- the tool the message points to: git_push, gh_pr_create…
  agent          VARCHAR,           -- GUARD_AGENT
  thread         VARCHAR,           -- GUARD_THREAD
  role           VARCHAR,           -- GUARD_ROLE
  host           VARCHAR,           -- the sandbox's host name
  cwd            VARCHAR,           -- the working directory, redacted
  command        VARCHAR,           -- the command, redacted, cut to 4096 characters
  command_chars  BIGINT,            -- the command's length before it was cut
  command_sha256 VARCHAR,           -- sha256 of the whole redacted command when it was cut
  via            VARCHAR[],         -- the indirections guard saw through (alias, bash -c…)
  version        VARCHAR,           -- guard's version
  rules_digest   VARCHAR,           -- digest of the rule set that decided
  schema         INTEGER,           -- this schema's version: 1
  in_tree        BOOLEAN,           -- annotation: the command ran in the shared tree
  program        VARCHAR,           -- annotation: the program whose stderr matched
  exit_status    INTEGER,           -- annotation: its exit status
  message        VARCHAR,           -- annotation: the explanation appended to stderr
  rule_source    VARCHAR,           -- annotation: the rule file
  captures       JSON,              -- annotation: what the rule's pattern captured
  truncated_record BOOLEAN,         -- only the identifying fields were kept (record over 16 KiB)
  action         VARCHAR            -- refused | warned | observed: what the matching rule did
);
"""

# Over a warehouse table, one copy of each id (collectors ship some twice) with its time in
# seconds since the epoch. guard audit builds this relation itself while reading the files: it
# reads collector envelopes, counts and skips malformed lines, and keeps the first copy read.
RECORDS = """\
CREATE VIEW records AS
SELECT * EXCLUDE (copy) FROM (
  SELECT *, epoch(CAST(ts AS TIMESTAMPTZ)) AS t,
         row_number() OVER (PARTITION BY id ORDER BY ts) AS copy
  FROM guard_audit
) WHERE copy = 1;
"""

REFUSAL = "coalesce(verdict = 'refuse' OR kind = 'refusal', false)"

SUMMARY = f"""\
SELECT
  (SELECT count(*) FROM kept) AS records,
  (SELECT count(*) FROM kept WHERE {REFUSAL}) AS refusals,
  (SELECT ts FROM kept ORDER BY t, id LIMIT 1) AS first,
  (SELECT ts FROM kept ORDER BY t DESC, id DESC LIMIT 1) AS last,
  (SELECT count(DISTINCT coalesce(nullif(agent, ''), '-')) FROM kept) AS agents,
  (SELECT count(*) FROM (SELECT DISTINCT coalesce(nullif(agent, ''), '-'), coalesce(nullif(thread, ''), '-')
                         FROM kept) AS a) AS threads;
"""

TOP_RULE = f"""\
SELECT coalesce(rule, '-') AS key, count(*) AS count
FROM kept WHERE {REFUSAL}
GROUP BY 1 ORDER BY count DESC, key LIMIT $top;
"""

TOP_CATEGORY = f"""\
SELECT coalesce(category, '-') AS key, count(*) AS count
FROM kept WHERE {REFUSAL}
GROUP BY 1 ORDER BY count DESC, key LIMIT $top;
"""

# Counted per exact command; guard folds each into its normalised form (guard.audit.reports.normalise)
# and adds up the counts of the commands that fold together.
REFUSED_COMMANDS = f"""\
SELECT coalesce(command, '') AS command, count(*) AS count
FROM kept WHERE {REFUSAL}
GROUP BY 1;
"""

# A run: refusals in one thread, each within the window of the one before; every refusal after a
# run's first is a wasted step.
_RUNS = f"""\
WITH refused AS (
  SELECT coalesce(nullif(agent, ''), '-') AS agent, coalesce(nullif(thread, ''), '-') AS thread,
         coalesce(nullif(category, ''), '-') AS category, t, id, command
  FROM kept WHERE {REFUSAL}
), starts AS (
  SELECT *, CASE WHEN t - lag(t) OVER (PARTITION BY agent, thread ORDER BY t, id) <= $window_s
                 THEN 0 ELSE 1 END AS starts_run
  FROM refused
), numbered AS (
  SELECT *, sum(starts_run) OVER (PARTITION BY agent, thread ORDER BY t, id
                                  ROWS UNBOUNDED PRECEDING) AS run
  FROM starts
), runs AS (
  SELECT agent, thread, run, count(*) AS length, min(t) AS began FROM numbered GROUP BY agent, thread, run
)"""

# One sort: each thread's refusals in (t, id) order, numbered, each marked when it starts a run;
# a run's length is where the next run starts (or the thread's end) less where it starts.
RETRIES = f"""\
WITH refused AS (
  SELECT coalesce(nullif(agent, ''), '-') AS agent, coalesce(nullif(thread, ''), '-') AS thread,
         coalesce(nullif(category, ''), '-') AS category, t, id
  FROM kept WHERE {REFUSAL}
), marked AS (
  SELECT agent, thread, row_number() OVER w AS n, count(*) OVER (PARTITION BY agent, thread) AS total,
         coalesce(t - lag(t) OVER w > $window_s, true) AS starts_run
  FROM refused WINDOW w AS (PARTITION BY agent, thread ORDER BY t, id)
), runs AS (
  SELECT agent, thread, coalesce(lead(n) OVER (PARTITION BY agent, thread ORDER BY n), total + 1) - n AS length
  FROM marked WHERE starts_run
), per_thread AS (
  SELECT agent, thread, sum(length) AS refusals, count(*) AS runs,
         count(*) FILTER (WHERE length >= 2) AS runs_with_retries,
         sum(length) - count(*) AS wasted, max(length) AS longest
  FROM runs GROUP BY agent, thread
), categories AS (
  SELECT agent, thread, category,
         row_number() OVER (PARTITION BY agent, thread ORDER BY count(*) DESC, category) AS rank
  FROM refused GROUP BY agent, thread, category
)
SELECT p.agent, p.thread, p.refusals, p.runs, p.runs_with_retries, p.wasted, p.longest,
       c.category AS top_category
FROM per_thread AS p JOIN categories AS c ON c.agent = p.agent AND c.thread = p.thread AND c.rank = 1
ORDER BY p.wasted DESC, p.longest DESC, p.agent, p.thread;
"""

# What guard runs for RETRIES: the same rows, each thread keyed by a 64-bit hash of its agent and
# thread while its refusals are sorted, and sorted by their time in microseconds alone: refusals
# at one time lie together in either order, and every one after the first is within the window
# of the one before, so the id that orders them in RETRIES changes no run's start or length. The
# sort's keys are two integers instead of two strings, a double and a string (``t`` is
# ``t_us / 1000000``, worked out here as the view does). ``shared`` counts
# the threads that ended up with one hash; guard runs RETRIES instead when it is ever above 1.
RETRIES_BY_HASH = f"""\
WITH refused AS (
  SELECT hash(coalesce(nullif(agent, ''), '-'), coalesce(nullif(thread, ''), '-')) AS h, t_us
  FROM kept WHERE {REFUSAL}
), marked AS (
  SELECT h, row_number() OVER w AS n,
         coalesce(t_us / 1000000 - lag(t_us) OVER w / 1000000 > $window_s, true) AS starts_run
  FROM refused WINDOW w AS (PARTITION BY h ORDER BY t_us)
), runs AS (
  SELECT h, n, lead(n) OVER (PARTITION BY h ORDER BY n) AS next FROM marked WHERE starts_run
), totals AS (
  SELECT h, max(n) AS total FROM marked GROUP BY h
), per_thread AS (
  SELECT h, sum(length) AS refusals, count(*) AS runs,
         count(*) FILTER (WHERE length >= 2) AS runs_with_retries,
         sum(length) - count(*) AS wasted, max(length) AS longest
  FROM (SELECT h, coalesce(next, total + 1) - n AS length FROM runs JOIN totals USING (h)) GROUP BY h
), categories AS (
  SELECT agent, thread, hash(agent, thread) AS h, category,
         row_number() OVER (PARTITION BY agent, thread ORDER BY count(*) DESC, category) AS rank
  FROM (
    SELECT coalesce(nullif(agent, ''), '-') AS agent, coalesce(nullif(thread, ''), '-') AS thread,
           coalesce(nullif(category, ''), '-') AS category
    FROM kept WHERE {REFUSAL}
  ) GROUP BY agent, thread, category
)
SELECT c.agent, c.thread, p.refusals, p.runs, p.runs_with_retries, p.wasted, p.longest,
       c.category AS top_category, count(*) OVER (PARTITION BY p.h) AS shared
FROM per_thread AS p JOIN categories AS c ON c.h = p.h AND c.rank = 1
ORDER BY p.wasted DESC, p.longest DESC, c.agent, c.thread;
"""

FIRED = "SELECT DISTINCT rule FROM kept WHERE rule <> '';\n"

PER_DAY = f"""\
SELECT CAST(floor(t / 86400) AS BIGINT) AS day,
       count(*) FILTER (WHERE {REFUSAL}) AS refusals,
       count(*) FILTER (WHERE NOT {REFUSAL}) AS annotations
FROM kept GROUP BY 1 ORDER BY 1;
"""

# What guard runs for TOP_RULE, TOP_CATEGORY, FIRED and PER_DAY: the same rows, worked out from
# one count of the kept records by rule, category, day and kind (``kept_counts``: a few thousand
# rows), in place of four scans of every record.
KEPT_COUNTS = f"""\
CREATE OR REPLACE TEMP TABLE kept_counts AS
SELECT rule, category, CAST(floor(t / 86400) AS BIGINT) AS day, {REFUSAL} AS refusal, count(*) AS n
FROM kept GROUP BY ALL;
"""

TOP_RULE_COUNTED = """\
SELECT coalesce(rule, '-') AS key, sum(n) AS count
FROM kept_counts WHERE refusal
GROUP BY 1 ORDER BY count DESC, key LIMIT $top;
"""

TOP_CATEGORY_COUNTED = """\
SELECT coalesce(category, '-') AS key, sum(n) AS count
FROM kept_counts WHERE refusal
GROUP BY 1 ORDER BY count DESC, key LIMIT $top;
"""

FIRED_COUNTED = "SELECT DISTINCT rule FROM kept_counts WHERE rule <> '';\n"

PER_DAY_COUNTED = """\
SELECT day, coalesce(sum(n) FILTER (WHERE refusal), 0) AS refusals,
       coalesce(sum(n) FILTER (WHERE NOT refusal), 0) AS annotations
FROM kept_counts GROUP BY 1 ORDER BY 1;
"""

# What the HTML page adds to the report.
PER_DAY_CATEGORY = f"""\
SELECT CAST(floor(t / 86400) AS BIGINT) AS day, coalesce(category, '-') AS category, count(*) AS count
FROM kept WHERE {REFUSAL} GROUP BY 1, 2 ORDER BY 1, 2;
"""

ANNOTATIONS_BY_RULE = f"""\
SELECT coalesce(rule, '-') AS key, count(*) AS count
FROM kept WHERE NOT {REFUSAL}
GROUP BY 1 ORDER BY count DESC, key LIMIT $top;
"""

COMMANDS_BY_RULE = f"""\
SELECT coalesce(rule, '-') AS key, coalesce(command, '') AS command, count(*) AS count
FROM kept WHERE {REFUSAL} GROUP BY 1, 2;
"""

COMMANDS_BY_CATEGORY = f"""\
SELECT coalesce(category, '-') AS key, coalesce(command, '') AS command, count(*) AS count
FROM kept WHERE {REFUSAL} GROUP BY 1, 2;
"""

# The longest run of each thread (the first of equal ones), command by command.
LONGEST_RUNS = (
    _RUNS
    + """, longest AS (
  SELECT agent, thread, run,
         row_number() OVER (PARTITION BY agent, thread ORDER BY length DESC, began) AS rank
  FROM runs
)
SELECT n.agent, n.thread, n.t, n.command
FROM numbered AS n JOIN longest AS l ON l.agent = n.agent AND l.thread = n.thread AND l.run = n.run
JOIN wanted_threads AS w ON w.agent = l.agent AND w.thread = l.thread
WHERE l.rank = 1
ORDER BY n.agent, n.thread, n.t, n.id;
"""
)

REPORT = (
    ("summary", SUMMARY),
    ("refused most, by rule", TOP_RULE),
    ("refused most, by category", TOP_CATEGORY),
    ("refused commands (guard folds them into normalised forms)", REFUSED_COMMANDS),
    ("retries after a refusal, per thread", RETRIES),
    ("rules that fired (the report lists the known rules not among them)", FIRED),
    ("per day (UTC days since the epoch)", PER_DAY),
)


# What a rule on trial (warn, observe) matched is reported on its own: never a refusal or an
# annotation in the report's other tables.
NOT_TRIAL = "coalesce(kind, '') <> 'trial'"


def kept_where(
    since: float | None, until: float | None, fields: tuple[tuple[str, tuple[str, ...]], ...]
) -> str:
    """The report's filters as the WHERE clause of ``kept`` (globs as GLOB: ``*``, ``?``, ``[…]``)."""
    from datetime import UTC, datetime

    where = []
    for op, when in ((">=", since), ("<", until)):
        if when is not None:
            iso = datetime.fromtimestamp(when, UTC).isoformat(timespec="microseconds")
            where.append(f"t {op} epoch(TIMESTAMPTZ '{iso}')")
    for name, patterns in fields:
        alternatives = " OR ".join(f"coalesce({name}, '') GLOB {_text(p)}" for p in patterns)
        where.append(f"({alternatives})" if len(patterns) > 1 else alternatives)
    return " AND ".join(where)


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def render_sql(kept_where: str, top_n: int, window_s: float) -> str:
    """The schema, the views and every query of the report, ready to paste: ``$top`` and
    ``$window_s`` replaced by this run's values, the filters in ``kept``."""
    out = [
        "-- guard audit: the record schema and the queries behind the report (DuckDB SQL).",
        "-- Load the JSON lines into guard_audit (DuckDB: INSERT INTO guard_audit",
        "--   SELECT * FROM read_json('audit.jsonl*', format = 'newline_delimited');",
        "-- ClickHouse, BigQuery: the table definition in their types), then run the rest.",
        "",
        SCHEMA,
        RECORDS,
        "-- The records the report's filters keep.",
        f"CREATE VIEW kept AS SELECT * FROM records WHERE {NOT_TRIAL}{' AND ' + kept_where if kept_where else ''};\n",
    ]
    for title, sql in REPORT:
        out.append(f"-- {title}")
        out.append(sql.replace("$top", str(top_n)).replace("$window_s", repr(float(window_s))))
    return "\n".join(out)
