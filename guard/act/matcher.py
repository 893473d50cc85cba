"""Find patterns in a byte stream line by line, in linear time and bounded memory.

Patterns are RE2 (``re2``): no backtracking, so a hostile line costs time linear in its length.
They never match across a newline (RE2 ``never_nl``), so a match lies within one line. Before
RE2 runs the patterns, one RE2 pass over the literals every match must contain (``needles``)
decides whether a region needs a closer look at all; ordinary output stops there.

The stream arrives in chunks. Complete lines of a chunk are scanned together; the incomplete last line is carried to the next chunk, but only its last ``window`` bytes,
so a line of any length costs bounded memory. A pattern is guaranteed to be found when its match
lies within the last ``window`` bytes of a line, or anywhere in a line that arrived within one
chunk. A chunk without a newline costs a slice, not a scan.

Each pattern is reported once, with the named groups of its first match; a pattern that has
matched leaves the set, so a program repeating a matching line cannot make the scan slower.
"""

from __future__ import annotations

from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any


WINDOW = 8192
MAX_SEEN = 64


def re2_options() -> Any:
    import re2

    opts = re2.Options()
    opts.log_errors = False
    opts.never_nl = True
    return opts


def _source(rx: Any) -> str:
    pat = rx.pattern
    if isinstance(pat, bytes):
        pat = pat.decode("utf-8", "replace")
    return pat[4:] if pat.startswith("(?m)") else pat


def compile_pattern(pattern: str) -> Any:
    """Compile one rule pattern (bytes, multi-line anchors, never across a newline).

    Raises ``ValueError`` with RE2's reason when RE2 rejects it (backreferences, lookaround …).
    """
    import re2

    try:
        return re2.compile(b"(?m)" + pattern.encode("utf-8"), re2_options())
    except re2.error as e:
        reason = e.args[0] if e.args else e
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(str(reason)) from None


def needles(pattern: str) -> tuple[bytes, ...] | None:
    """Literal strings one of which every match of ``pattern`` contains, or None if unknown.

    A cheap ``bytes in`` test on them lets a region that cannot match skip RE2 entirely.
    """
    try:
        from re import _constants as c
        from re import _parser

        parsed = _parser.parse(pattern)
    except Exception:
        return None
    if parsed.state.flags & (c.SRE_FLAG_IGNORECASE | c.SRE_FLAG_VERBOSE):
        return None
    found = _needles(list(parsed), c)
    if not found or min(len(n) for n in found) < 3:
        return None
    return tuple(sorted({n.encode("utf-8") for n in found}))


def _needles(seq: list[Any], c: Any) -> list[str] | None:
    best: list[str] | None = None

    def offer(cand: list[str] | None) -> None:
        nonlocal best
        if cand and all(cand) and (best is None or min(map(len, cand)) > min(map(len, best))):
            best = cand

    run: list[str] = []
    for op, av in seq:
        if op is c.LITERAL:
            run.append(chr(av))
            continue
        offer(["".join(run)] if run else None)
        run = []
        if op is c.SUBPATTERN:
            if av[1] or av[2]:  # scoped flags: do not guess
                continue
            offer(_needles(list(av[3]), c))
        elif op is c.BRANCH:
            alts = [_needles(list(b), c) for b in av[1]]
            if all(alts):
                offer([n for a in alts for n in a or ()])
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
            offer(_needles(list(av[2]), c))
    offer(["".join(run)] if run else None)
    return best


class StreamMatcher:
    """Feed bytes; read ``hits`` (key → named groups as bytes) and ``seen`` afterwards.

    ``patterns`` is a sequence of (key, compiled pattern). ``watch`` is an optional compiled
    pattern whose matching lines (up to 64, without the newline) are collected in ``seen`` and
    which never leaves the set.
    """

    def __init__(self, patterns: Sequence[tuple[str, Any]], watch: Any = None, window: int = WINDOW) -> None:
        self.window = window
        self.hits: dict[str, dict[str, bytes]] = {}
        self.seen: list[bytes] = []
        self._watch = watch
        self._pending: list[tuple[str, Any, tuple[bytes, ...] | None]] = [
            (key, rx, needles(_source(rx))) for key, rx in patterns
        ]
        self._watch_needles = needles(_source(watch)) if watch is not None else None
        self._tail = b""
        self._gate: Any = None
        self._build_gate()

    def _build_gate(self) -> None:
        """One RE2 pass over literal alternatives decides whether a region needs a closer look;
        a pattern without needles forces the closer look every time."""
        import re2

        groups = [nd for _, _, nd in self._pending]
        if self._watch is not None and len(self.seen) < MAX_SEEN:
            groups.append(self._watch_needles)
        if not groups or any(nd is None for nd in groups):
            self._gate = None
            return
        opts = re2_options()
        opts.longest_match = True
        lits = sorted({n for nd in groups for n in nd or ()})
        self._gate = re2.compile(b"|".join(re2.escape(n) for n in lits), opts)

    @property
    def idle(self) -> bool:
        """Nothing left to look for: feeding costs nothing."""
        return not self._pending and (self._watch is None or len(self.seen) >= MAX_SEEN)

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        """Look at ``data[:n]`` (default: all of it); nothing of ``data`` is kept by reference."""
        if n is None:
            n = len(data)
        if not n or self.idle:
            return
        w = self.window
        nl = data.rfind(b"\n", 0, n)
        with memoryview(data) as view:
            if nl < 0:
                if n >= w:
                    self._tail = bytes(view[n - w : n])
                else:
                    self._tail = (self._tail + bytes(view[:n]))[-w:]
                return
            region = self._tail + bytes(view[:nl]) if self._tail else bytes(view[:nl])
            self._tail = bytes(view[max(nl + 1, n - w) : n])
        self._scan(region)

    def close(self) -> None:
        if self._tail and not self.idle:
            self._scan(self._tail)
        self._tail = b""

    def _scan(self, region: bytes) -> None:
        if self._gate is not None and self._gate.search(region) is None:
            return
        present: dict[bytes, bool] = {}

        def may_match(nd: tuple[bytes, ...] | None) -> bool:
            if nd is None:
                return True
            for x in nd:
                hit = present.get(x)
                if hit is None:
                    hit = present[x] = x in region
                if hit:
                    return True
            return False

        fired = False
        for key, rx, nd in self._pending:
            if not may_match(nd):
                continue
            m = rx.search(region)
            if m is None:
                continue
            self.hits[key] = {
                (k.decode() if isinstance(k, bytes) else k): v for k, v in m.groupdict().items() if v is not None
            }
            fired = True
        if fired:
            self._pending = [p for p in self._pending if p[0] not in self.hits]
            self._build_gate()
        if self._watch is not None and len(self.seen) < MAX_SEEN and may_match(self._watch_needles):
            self._collect_seen(region)

    def _collect_seen(self, region: bytes) -> None:
        for m in self._watch.finditer(region):
            if len(self.seen) >= MAX_SEEN:
                return
            self.seen.append(m.group(0).rstrip(b"\r"))
