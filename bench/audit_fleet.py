"""A synthetic fleet of audit logs for ``bench/audit_bench.py``: N records across F sandbox files.

    .venv/bin/python bench/audit_fleet.py DIR --records 1000000 --files 400

The records are the shapes in ``fixtures/audit/fleet.jsonl`` (refusals and annotations that the
real engine wrote), re-issued for many sandboxes, agents and threads over 30 days: times, ids,
hosts, agents and threads are synthetic (seeded), and one command in ten gets a varying argument
(a branch, a file, a commit message), so the log has as many distinct commands as a fleet's
agents would type. As a collector's output does, the fleet also carries copies of records shipped
twice (in another sandbox's file), a few lines wrapped in a collector envelope, malformed lines,
torn last lines and gzip-rotated files.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "fixtures" / "audit" / "fleet.jsonl"
START = 1772409600.0  # 2026-03-02T00:00:00Z
DAYS = 30
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
VARY = 10  # one record in VARY gets a varying argument
DUPLICATE = 100  # one record in DUPLICATE is shipped twice
ENVELOPE = 2000  # one line in ENVELOPE is wrapped in a collector envelope
MALFORMED = 50000  # one line in MALFORMED is garbage


def _ulid(ms: int, rnd: random.Random) -> str:
    n = (ms << 80) | rnd.getrandbits(80)
    return "".join(CROCKFORD[(n >> (5 * i)) & 31] for i in range(25, -1, -1))


def _ts(ms: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def _templates() -> list[dict]:
    return [json.loads(line) for line in TEMPLATES.read_text().splitlines() if line.strip()]


def generate(out: Path, records: int, files: int, seed: int = 16) -> dict[str, int]:
    """Write the fleet under ``out``; what it holds: records written, distinct ids, duplicate
    copies, malformed lines, enveloped lines, files."""
    rnd = random.Random(seed)
    templates = _templates()
    out.mkdir(parents=True, exist_ok=True)
    per_file = records // files
    stats = {"lines": 0, "ids": 0, "duplicates": 0, "malformed": 0, "enveloped": 0, "files": files}
    pending_copies: list[str] = []
    for f in range(files):
        host = f"sbx-{f:03d}"
        agents = [f"{rnd.choice(['claude', 'codex', 'gemini', 'aider'])}-{f:03d}-{a}" for a in range(3)]
        gz = f % 10 == 9
        name = out / (f"audit.jsonl.20260401T000000000Z.{f:03d}.gz" if gz else f"{host}.audit.jsonl")
        n = per_file + (records - per_file * files if f == files - 1 else 0)
        ms = int(START * 1000) + rnd.randrange(0, 3_600_000)
        lines: list[str] = []
        step_ms = max(1, DAYS * 86_400_000 // max(1, n))
        thread = f"t{rnd.randrange(1000)}"
        agent = agents[0]
        for _ in range(n):
            if rnd.random() < 0.3:  # a new turn: often a retry seconds later, else a later session
                ms += rnd.randrange(2_000, 90_000)
            else:
                ms += rnd.randrange(step_ms, 3 * step_ms)
            if rnd.random() < 0.02:
                agent = rnd.choice(agents)
                thread = f"t{rnd.randrange(1000)}"
            rec = dict(rnd.choice(templates))
            if rnd.randrange(VARY) == 0:
                rec["command"] = (
                    f"{rec['command']} {rnd.choice(['feat', 'fix', 'docs'])}-{rnd.randrange(50_000)}"
                )
            rec["id"] = _ulid(ms, rnd)
            rec["ts"] = _ts(ms)
            rec["agent"], rec["thread"], rec["host"] = agent, thread, host
            if "cwd" in rec:
                rec["cwd"] = rec["cwd"] + f"/{f % 7}"
            line = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
            stats["ids"] += 1
            if rnd.randrange(ENVELOPE) == 0:
                line = json.dumps({"timestamp": rec["ts"], "host": host, "message": line})
                stats["enveloped"] += 1
            if rnd.randrange(DUPLICATE) == 0:
                pending_copies.append(line)
            lines.append(line)
            if rnd.randrange(MALFORMED) == 0:
                lines.append('{"id": "torn", "ts": "2026-03-0')
                stats["malformed"] += 1
        if pending_copies and f % 3 == 2:  # another sandbox's collector shipped these again
            lines.extend(pending_copies)
            stats["duplicates"] += len(pending_copies)
            pending_copies = []
        text = "\n".join(lines) + "\n"
        if f % 50 == 49:  # a log cut mid-write: the last line torn
            text += lines[-1][: len(lines[-1]) // 2]
            stats["malformed"] += 1
        stats["lines"] += len(lines)
        data = text.encode("utf-8")
        if gz:
            with gzip.open(name, "wb", compresslevel=1) as g:
                g.write(data)
        else:
            name.write_bytes(data)
    return stats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", type=Path)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=400)
    p.add_argument("--seed", type=int, default=16)
    opts = p.parse_args()
    stats = generate(opts.dir, opts.records, opts.files, opts.seed)
    size = sum(os.path.getsize(p) for p in opts.dir.iterdir())
    print(json.dumps({**stats, "bytes": size}))


if __name__ == "__main__":
    main()
