"""The pre-check's plan file: what guard-shell may run without analysis, as the rule set derived it.

Written by the rule set's loader (``guard.ruleset.derived``) when a rule set is compiled, read by
the pre-check (``guard.shell.precheck``) on every command. Both sides meet here, below either of
them, so the format has one owner. Imports next to nothing: it is read on the launcher's path,
before guard loads its parser.
"""

# No `from __future__ import annotations`: it imports the __future__ module, a file read on the
# plain path; annotations naming typing-only types are strings instead.
import posix

from guard.system.cachedir import cache_root, read_private

TYPE_CHECKING = False
if TYPE_CHECKING:  # collections.abc costs ~2 ms on the path this module exists to keep short
    from collections.abc import Callable, Container, Mapping

PLAN_FORMAT = 2
PLAN_HEADER = f"guard-precheck {PLAN_FORMAT}"

class Plan:
    """What the pre-check may let through: ``programs`` (plain names) and ``watched`` (lower-case
    word fragments that some rule or fact looks at)."""

    __slots__ = ("programs", "watched")

    def __init__(self, programs: "Container[str]", watched: tuple[str, ...]) -> None:
        self.programs = programs
        self.watched = watched


# --------------------------------------------------------------------------- the cached plan
# Read on every command, with ``posix`` alone; written by ``guard.ruleset.derived`` when the
# rule set is compiled.

HERE = __file__.rpartition("/")[0].rpartition("/")[0]  # the guard package
# The plan of the shipped rules alone, for a cache that holds none yet (tests/shell/test_precheck.py
# proves it is the one the shipped rules give).
SHIPPED_PLAN = HERE + "/ruleset/precheck-shipped.txt"


def environ() -> dict[str, str]:
    return {k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape") for k, v in posix.environ.items()}


def inputs(env: "Mapping[str, str]") -> tuple[tuple[str, ...], str | None]:
    """The rule layers ``env`` names, as guard.context reads them."""
    return tuple(p for p in env.get("GUARD_RULES", "").split(":") if p), env.get("GUARD_CONFIG") or None


def size_mtime(path: str) -> tuple[int, int]:
    try:
        st = posix.stat(path)
        return st.st_size, st.st_mtime_ns
    except OSError:
        return -1, -1


def plan_file(extra: tuple[str, ...], config_path: str | None) -> str:
    """One plan per install and rule layering, named by a hash computed in C without hashlib
    (the bytes as one number modulo a 64-bit prime; ``guard.shell.client.short_hash``): a
    byte-by-byte loop in Python took 30 us of every command."""
    data = "\0".join((HERE, *extra, "\1", config_path or "")).encode("utf-8", "surrogateescape") + b"\x01"
    return f"{cache_root()}/precheck-{int.from_bytes(data, 'little') % 0xFFFFFFFFFFFFFFC5:016x}.txt"


def shipped_plan() -> Plan | None:
    try:
        with open(SHIPPED_PLAN, encoding="utf-8") as fh:
            programs, watched = (line.split() for line in fh.read().splitlines()[-2:])
    except (OSError, ValueError):
        return None
    return Plan(frozenset(programs), tuple(watched))


# The analysis server's workers: the plan of each rule layering the server's watch vouches for
# (``trust``), taken from memory while ``_quiet()`` holds, with no read of the plan file and no
# look at the rule files. The watch was set up before the server stamped those files, so any
# change since makes ``_quiet()`` false, and then the cached plan is checked as everywhere else.
_trusted: "Mapping[tuple, Plan]" = {}
_quiet: "Callable[[], bool] | None" = None


def trust(plans: "Mapping[tuple, Plan]", quiet: "Callable[[], bool] | None") -> None:
    """Let ``current_plan`` answer from ``plans`` (keyed by ``inputs``) while ``quiet()`` is true;
    ``trust({}, None)`` ends it. Only for plans derived from rule files a watch covers."""
    global _trusted, _quiet
    _trusted, _quiet = (plans, quiet) if quiet is not None else ({}, None)


def current_plan(env: "Mapping[str, str]") -> Plan | None:
    """The plan the rule set of ``env``'s rule files left in the cache, if none of those files
    has changed since (else None). With no plan cached and no rule layers of one's own, the
    plan of the shipped rules. A plan ``trust`` vouches for comes from memory."""
    extra, config_path = inputs(env)
    if _quiet is not None:
        plan = _trusted.get((extra, config_path))
        if plan is not None and _quiet():
            return plan
    data = read_private(plan_file(extra, config_path))
    if data is None:
        return None if extra or config_path else shipped_plan()
    return read_plan(data)


# --------------------------------------------------------------------------- the plan file
# Text that nothing but this parser reads (never code, nothing that can run or crash on hostile
# bytes): a header line, one line per stamped rule file or folder ("SIZE MTIME_NS PATH"), then
# "programs NAME…" and "watched FRAGMENT…".


def plan_text(at: tuple, plan: Plan) -> "bytes | None":
    """The plan file's bytes for ``plan`` under stamp ``at``; None when a path cannot be written
    as one line."""
    lines = [PLAN_HEADER]
    for path, size, mtime in at:
        if "\n" in path:
            return None
        lines.append(f"{size} {mtime} {path}")
    lines.append(" ".join(("programs", *sorted(plan.programs))))
    lines.append(" ".join(("watched", *plan.watched)))
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


def read_plan(data: bytes) -> "Plan | None":
    """The plan in ``data`` when every file it was derived from is as it was then, else None."""
    try:
        lines = data.decode("utf-8", "surrogateescape").split("\n")
        if lines[0] != PLAN_HEADER or lines[-1] != "" or len(lines) < 4:
            return None
        programs, watched = lines[-3].split(" "), lines[-2].split(" ")
        if programs[0] != "programs" or watched[0] != "watched":
            return None
        for line in lines[1:-3]:
            size, mtime, path = line.split(" ", 2)
            if size_mtime(path) != (int(size), int(mtime)):
                return None
        return Plan(frozenset(programs[1:]), tuple(w for w in watched[1:] if w))
    except ValueError:
        return None
