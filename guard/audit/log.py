"""Append-only refused-command log (docs/behaviour.md §8).

One JSON object per line, flat, UTF-8, ``ts`` in RFC 3339 UTC — the shape log collectors (Vector,
Fluent Bit, the OpenTelemetry file log receiver) ship as is.

Concurrency: every record is one ``os.write`` of the whole line on an ``O_APPEND`` descriptor,
which Linux local file systems apply atomically (the inode lock is held for the whole write of a
regular file), so concurrent writers never tear or interleave lines. Records are capped at
``RECORD_CAP`` bytes by cutting the command (the record then carries a sha256 of the whole).

Rotation: when the file reaches ``GUARD_AUDIT_MAX_BYTES`` (default 32 MiB, ``0`` disables) the
writer that noticed takes ``<log>.lock`` with a non-blocking ``flock``, checks the file is still
the one it saw, and renames it to ``<log>.<UTC stamp>``; every append opens the path anew, so the
next one lands in a fresh file. A writer that opened the old file just before the rename writes
into the renamed file: the record is kept, only its file differs. ``GUARD_AUDIT_KEEP`` (default
8, ``0`` keeps all) rotated files are kept.

Failure to write costs one warning line on stderr per process and never raises.

Imports are kept to os/sys/time/json/re (``hashlib`` and ``fcntl`` only when needed): this runs
in ``guard-shell``'s hot path.
"""

from __future__ import annotations

import os
import sys
import time

from guard.text.redact import redact

TYPE_CHECKING = False  # typing itself is not imported on the hot path

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SCHEMA = 1
COMMAND_CAP = 4096  # characters of command kept in a record
RECORD_CAP = 16384  # bytes of one JSON line, newline included
FIELD_CAP = 256  # agent, thread, role, host, rule, category, tool, each via entry
CWD_CAP = 1024
VIA_CAP = 32
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_KEEP = 8
WARNING_PREFIX = "guard: audit log not written: "

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_warned = False


# --------------------------------------------------------------------------- record


def new_id(now: float | None = None) -> str:
    """A 26-character ULID-style id: 48 bits of milliseconds then 80 random bits, base32.

    Ids sort by creation time; two ids made in the same millisecond differ in their random part.
    """
    ms = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    n = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    out = []
    for _ in range(26):
        out.append(_CROCKFORD[n & 31])
        n >>= 5
    return "".join(reversed(out))


def rfc3339(now: float | None = None) -> str:
    """UTC time as RFC 3339 with milliseconds: ``2026-02-02T10:11:12.345Z``."""
    t = time.time() if now is None else now
    ms = int(t * 1000) % 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{ms:03d}Z"


def _cap(value: object, limit: int = FIELD_CAP) -> str | None:
    if value is None:
        return None
    s = value if isinstance(value, str) else str(value)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cut_command(command: str, limit: int = COMMAND_CAP) -> tuple[str, str | None]:
    """``command`` redacted and cut to ``limit`` characters; the sha256 of the whole redacted
    command when it was cut, else None."""
    clean = redact(command)
    if len(clean) <= limit:
        return clean, None
    return clean[:limit] + "…", _sha256(clean)


def build_record(
    kind: str,
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str],
    verdict: str,
    category: str | None,
    rule: str | None,
    tool: str | None,
    via: list[str],
    rules_digest: str | None = None,
    action: str | None = None,
) -> dict[str, Any]:
    """One audit record. ``kind`` is ``"refusal"``, ``"trial"`` (a rule on trial matched a
    command that ran; ``action`` says ``warned`` or ``observed``) or ``"annotation"``; ``env`` supplies
    ``GUARD_AGENT``, ``GUARD_THREAD`` and ``GUARD_ROLE``. The command is redacted and capped."""
    from guard import __version__

    now = time.time()
    text, digest = cut_command(command or "")
    try:
        host = os.uname().nodename
    except OSError:
        host = None
    return {
        "id": new_id(now),
        "ts": rfc3339(now),
        "kind": kind,
        "verdict": verdict,
        "category": category,
        "rule": _cap(rule),
        "tool": _cap(tool),
        "agent": _cap(env.get("GUARD_AGENT") or None),
        "thread": _cap(env.get("GUARD_THREAD") or None),
        "role": _cap(env.get("GUARD_ROLE") or None),
        "host": _cap(host),
        "cwd": _cap(redact(cwd or ""), CWD_CAP),
        "command": text,
        "command_chars": len(command or ""),
        "command_sha256": digest,
        "via": [_cap(redact(str(v))) for v in list(via or ())[:VIA_CAP]],
        "version": __version__,
        "rules_digest": rules_digest,
        "schema": SCHEMA,
        **({"action": action} if action else {}),
    }


# What the record says was done, by the action the rule took (guard.ruleset.actions).
TAKEN = {"refuse": "refused", "warn": "warned", "observe": "observed"}


# Fields that never hold free text from a command or its output; everything else is redacted.
_PLAIN_FIELDS = frozenset(
    ("id", "ts", "kind", "verdict", "category", "rule", "tool", "agent", "thread", "role", "host",
     "command_chars", "command_sha256", "version", "rules_digest", "schema", "exit_status", "in_tree", "action")
)  # fmt: skip


def _redact_value(value: object, depth: int = 0) -> object:
    if isinstance(value, str):
        return redact(value)
    if depth < 3 and isinstance(value, dict):
        return {k: _redact_value(v, depth + 1) for k, v in value.items()}
    if depth < 3 and isinstance(value, (list, tuple)):
        return [_redact_value(v, depth + 1) for v in value]
    return value


def complete_record(record: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """``record`` with the identity fields a record built elsewhere may lack: agent, thread and
    role from ``env``, host, guard version, schema. Fields already present are kept."""
    rec = dict(record)
    for key, name in (("agent", "GUARD_AGENT"), ("thread", "GUARD_THREAD"), ("role", "GUARD_ROLE")):
        if key not in rec:
            rec[key] = _cap(env.get(name) or None)
    if "host" not in rec:
        try:
            rec["host"] = _cap(os.uname().nodename)
        except OSError:
            rec["host"] = None
    if "version" not in rec:
        from guard import __version__

        rec["version"] = __version__
    rec.setdefault("schema", SCHEMA)
    return rec


def encode_record(record: Mapping[str, Any]) -> bytes:
    """The record as one UTF-8 JSON line of at most ``RECORD_CAP`` bytes.

    Fills ``id``/``ts`` when missing and redacts every free-text field again (idempotent), so a
    record built elsewhere cannot carry a secret or exceed the cap either.
    """
    rec = {k: (v if k in _PLAIN_FIELDS else _redact_value(v)) for k, v in record.items()}
    if not rec.get("id"):
        rec["id"] = new_id()
    if not rec.get("ts"):
        rec["ts"] = rfc3339()
    limit = COMMAND_CAP
    for _ in range(8):
        line = _dumps(rec)
        if len(line) <= RECORD_CAP:
            return line
        command = rec.get("command")
        if isinstance(command, str) and len(command) > 64:
            limit = min(limit, len(command)) // 2
            whole = command[:-1] if command.endswith("…") and rec.get("command_sha256") else command
            rec["command"] = whole[:limit] + "…"
            rec["command_sha256"] = rec.get("command_sha256") or _sha256(whole)
        else:
            break
    # Something other than the command is huge: keep the identifying fields only.
    keep = (
        "id",
        "ts",
        "kind",
        "verdict",
        "category",
        "rule",
        "tool",
        "agent",
        "thread",
        "role",
        "host",
        "command_sha256",
        "version",
        "rules_digest",
        "schema",
    )
    small = {k: (_cap(rec.get(k)) if isinstance(rec.get(k), str) else rec.get(k)) for k in keep}
    small["command"] = _cap(rec.get("command"), 1024)
    small["cwd"] = _cap(rec.get("cwd"), 1024)
    small["truncated_record"] = True
    return _dumps(small)[: RECORD_CAP - 1].rstrip(b"\n") + b"\n"


def _dumps(rec: Mapping[str, Any]) -> bytes:
    import json

    from guard.text.display import json_inert

    # C1 controls, bidi overrides, lone surrogates … as JSON escapes: the file shows no control
    # to whoever reads it in a terminal, and a JSON reader gets the same strings back
    text = json_inert(json.dumps(rec, ensure_ascii=False, separators=(",", ":"), default=str))
    return text.encode("utf-8", "backslashreplace") + b"\n"


# --------------------------------------------------------------------------- where


def default_log_path(env: Mapping[str, str]) -> str | None:
    """``GUARD_AUDIT_LOG``, else ``$XDG_STATE_HOME/guard/audit.jsonl``, else
    ``~/.local/state/guard/audit.jsonl``. None when the log is turned off (``off``)."""
    explicit = env.get("GUARD_AUDIT_LOG")
    home = env.get("HOME") or os.path.expanduser("~")
    if explicit:
        if explicit.strip().lower() == "off":
            return None
        if explicit == "~" or explicit.startswith("~/"):
            return home.rstrip("/") + explicit[1:]
        return explicit
    state = env.get("XDG_STATE_HOME")
    if state and state.startswith("/"):
        return os.path.join(state, "guard", "audit.jsonl")
    return os.path.join(home, ".local", "state", "guard", "audit.jsonl")


def _int_setting(env: Mapping[str, str], name: str, default: int) -> int:
    try:
        return max(0, int(env.get(name, "") or default))
    except ValueError:
        return default


# --------------------------------------------------------------------------- append


def append_record(record: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Append one audit record (already built) to the log named by ``env``. Never raises."""
    path = None
    try:
        path = default_log_path(env)
        if path is None:
            return
        data = encode_record(complete_record(record, env))
        size = _write_line(path, data)
        max_bytes = _int_setting(env, "GUARD_AUDIT_MAX_BYTES", DEFAULT_MAX_BYTES)
        if max_bytes and size >= max_bytes:
            rotate(path, max_bytes, _int_setting(env, "GUARD_AUDIT_KEEP", DEFAULT_KEEP))
    except OSError as e:
        _warn(_reason(e, path))
    except Exception as e:  # never let the log change what the shell does
        _warn(f"{type(e).__name__}: {e}")


_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


def _write_line(path: str, data: bytes) -> int:
    """Write ``data`` with one write() on an O_APPEND descriptor; the file's size after it."""
    try:
        fd = os.open(path, _OPEN_FLAGS, 0o600)
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if not parent:
            raise
        os.makedirs(parent, mode=0o700, exist_ok=True)
        fd = os.open(path, _OPEN_FLAGS, 0o600)
    try:
        written = os.write(fd, data)
        if written != len(data):
            # A short write to a regular file means the disk filled mid-record.
            import errno

            raise OSError(
                errno.ENOSPC, f"No space left on device (short write: {written} of {len(data)} bytes)", path
            )
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def rotate(path: str, max_bytes: int, keep: int) -> bool:
    """Rename a full log aside under an exclusive lock; True when this call rotated it.

    Safe with any number of concurrent writers and rotators: the lock is taken without blocking
    (someone else is already rotating), and the size is checked again under it.
    """
    import fcntl

    lock = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            if os.stat(path).st_size < max_bytes:
                return False
        except FileNotFoundError:
            return False
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}Z"
        dest = f"{path}.{stamp}"
        n = 0
        while os.path.exists(dest):
            n += 1
            dest = f"{path}.{stamp}-{n}"
        os.rename(path, dest)
        if keep:
            for old in rotated_files(path)[:-keep]:
                try:
                    os.unlink(old)
                except OSError:
                    pass
        return True
    finally:
        os.close(lock)  # releases the flock


def rotated_files(path: str) -> list[str]:
    """Rotated copies of ``path`` (``<path>.<stamp>``), oldest first."""
    parent = os.path.dirname(path) or "."
    prefix = os.path.basename(path) + "."
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    stamps = [n for n in names if n.startswith(prefix) and n[len(prefix) :][:1].isdigit()]
    return [os.path.join(parent, n) for n in sorted(stamps)]


# --------------------------------------------------------------------------- warning


def _reason(e: OSError, path: str | None) -> str:
    what = e.strerror or str(e)
    where = e.filename or path
    return f"{what} ({where})" if where else what


def _warn(reason: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    try:
        sys.stderr.write(WARNING_PREFIX + reason.replace("\n", " ") + "\n")
        sys.stderr.flush()
    except Exception:
        pass
