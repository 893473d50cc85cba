"""Helpers for the audit tests: records with chosen times, logs written line by line."""

from __future__ import annotations

import json
import re
from pathlib import Path

from guard.audit import log

T0 = 1767268800.0  # 2026-01-01T12:00:00Z


def record(offset_s: float = 0.0, **fields: object) -> dict:
    """A record built the way the shell builds one, at ``T0 + offset_s``, with ``fields`` set."""
    env = {
        "GUARD_AGENT": str(fields.pop("agent", "agent-a")),
        "GUARD_THREAD": str(fields.pop("thread", "t1")),
        "GUARD_ROLE": str(fields.pop("role", "worker")),
    }
    rec = log.build_record(
        str(fields.pop("kind", "refusal")),
        str(fields.pop("command", "git push origin feature")),
        cwd=str(fields.pop("cwd", "/workspace/app")),
        env=env,
        verdict=str(fields.pop("verdict", "refuse")),
        category=fields.pop("category", "publish"),  # type: ignore[arg-type]
        rule=fields.pop("rule", "git-push"),  # type: ignore[arg-type]
        tool=fields.pop("tool", "git_push"),  # type: ignore[arg-type]
        via=list(fields.pop("via", [])),  # type: ignore[arg-type]
        rules_digest="sha256:test",
    )
    t = T0 + offset_s
    rec["ts"] = log.rfc3339(t)
    rec["id"] = str(fields.pop("id", log.new_id(t)))
    rec.update(fields)
    return rec


def write_jsonl(path: Path, records: list[dict], extra_lines: tuple[str, ...] = ()) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "".join(x + "\n" for x in extra_lines))
    return path


# Bytes a terminal acts on: C0 controls except \t and \n (ESC, BEL and \r among them), DEL, C1
# controls, zero-width and bidirectional format characters, line/paragraph separators, BOM, tags.
FORBIDDEN = re.compile(
    rb"[\x00-\x08\x0b-\x1f\x7f]"  # C0 except \t and \n, DEL (ESC, BEL, \r among them)
    rb"|\xc2[\x80-\x9f]"  # C1 controls in UTF-8
    rb"|\xe2\x80[\x8b-\x8f\xaa-\xae\xa8\xa9]|\xe2\x81[\xa0-\xa4\xa6-\xaf]"  # zero-width, bidi, separators
    rb"|\xef\xbb\xbf|\xf3\xa0[\x80-\x81]"  # BOM, tag characters
)
