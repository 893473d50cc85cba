"""Find patterns in a byte stream line by line, in linear time and bounded memory.

Patterns are RE2 (``re2``): no backtracking, so a hostile line costs time linear in its length.
They never match across a newline (RE2 ``never_nl``), so a match lies within one line. Before
RE2 runs the patterns, one search for the literals every match must contain (``needles``)
decides whether a region needs a closer look at all; ordinary output stops there. The search is
``ahocorasick_rs`` (its SIMD "Teddy" search, several GB/s) where it is installed, and only the
lines holding a literal get the closer look: a match lies in one line and contains a literal.
Without it, one RE2 pass over the literals (about 0.5 GB/s) gates the whole region.

The stream arrives in chunks. Complete lines of a chunk are scanned together; the incomplete last line is carried to the next chunk, but only its last ``window`` bytes,
so a line of any length costs bounded memory. A pattern is guaranteed to be found when its match
lies within the last ``window`` bytes of a line, or anywhere in a line that arrived within one
chunk. A chunk without a newline costs a slice, not a scan.

The gate reads the caller's buffer in place (RE2 takes any buffer and releases the GIL while it
searches): only the first line of a chunk, which continues the carried tail, is copied before
the gate. Lines are never split, so scanning "tail + first line" and then "the other complete
lines" finds what one pass over their concatenation finds, in the same order. Whatever passes
the gate (rare) is copied to ``bytes`` for the closer look, so captures are ``bytes``.

Each pattern is reported once, with the named groups of its first match; a pattern that has
matched leaves the set, so a program repeating a matching line cannot make the scan slower.
A pattern named in ``keep`` (a rule's optional captures) stays in the set and reports its last
match instead: the URL on the last "cloning …" line before a failure is the one that failed.
"""

from __future__ import annotations

from guard.ruleset.patterns import compile_pattern, re2_options  # noqa: F401 - the annotator's callers use both

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and collections.abc cost ~2-7 ms to import on the command path
    from collections.abc import Sequence
    from typing import Any


WINDOW = 8192
MAX_SEEN = 64
SPLIT = 1 << 18  # complete lines beyond this are gated on two threads; below, a hand-off costs more
# ahocorasick_rs keeps its packed SIMD search for about two dozen literals; past that it falls
# back to a slower automaton (2 GB/s against 11 on this project's machine), so larger sets are
# searched in groups of this many.
LITERAL_GROUP = 20
LITERAL_SLICE = 1 << 16  # searched a slice at a time: the list of occurrences stays small


def _source(rx: Any) -> str:
    pat = rx.pattern
    if isinstance(pat, bytes):
        pat = pat.decode("utf-8", "replace")
    return pat[4:] if pat.startswith("(?m)") else pat


def needles(pattern: str) -> tuple[bytes, ...] | None:
    """Literal strings one of which every match of ``pattern`` contains, or None if unknown.

    A cheap ``bytes in`` test on them lets a region that cannot match skip RE2 entirely.
    """
    if "[:" in pattern:  # a POSIX class ([[:alpha:]]): Python's parser reads it otherwise than RE2
        return None
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


def literal_gate(literals: Sequence[bytes]) -> Literals | None:
    """A ``Literals`` search for ``literals``, or None where ahocorasick_rs is not installed."""
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return Literals(literals, ahocorasick_rs)


class Literals:
    """Where a set of literal strings occurs: ``lines(data, lo, hi)`` gives the lines of
    ``data[lo:hi]`` that hold one, as merged (start, end) spans in order.

    A literal holding another is dropped (the shorter one finds it). Each group's search is
    leftmost-first and reports no overlapping occurrences, but an occurrence it skips starts
    inside one it reports, so the skipped one's line is reported all the same. Slices overlap by
    the longest literal less one byte, so an occurrence across a slice boundary lies whole in
    one of them.
    """

    def __init__(self, literals: Sequence[bytes], ac: Any) -> None:
        lits = sorted({x for x in literals if x})
        lits = [x for x in lits if not any(y != x and y in x for y in lits)]
        self.literals = tuple(lits)
        self._searches = [
            ac.BytesAhoCorasick(lits[i : i + LITERAL_GROUP], matchkind=ac.MATCHKIND_LEFTMOST_FIRST)
            for i in range(0, len(lits), LITERAL_GROUP)
        ]
        self._overlap = max((len(x) for x in lits), default=1) - 1

    def lines(self, data: Any, lo: int, hi: int) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        searches = self._searches
        if not searches:
            return spans
        with memoryview(data) as view:
            a = lo
            while a < hi:  # a slice's occurrences become spans before the next slice is searched
                b = min(hi, a + LITERAL_SLICE + self._overlap)
                with view[a:b] as piece:
                    found = [m for search in searches for m in search.find_matches_as_indexes(piece)]
                if found:  # the common case is none: no sorting, no tuples
                    for s, e in sorted(m[1:] for m in found):
                        self._add(spans, data, lo, hi, a + s, a + e)
                a += LITERAL_SLICE
        return spans

    @staticmethod
    def _add(spans: list[tuple[int, int]], data: Any, lo: int, hi: int, s: int, e: int) -> None:
        """Add the line(s) of the occurrence ``data[s:e]`` to ``spans`` (occurrences come in order
        of start within a slice, and a slice's after the previous slice's)."""
        if spans and s < spans[-1][1]:
            if e > spans[-1][1]:  # a literal across a newline: never part of a match, but cheap
                end = data.find(b"\n", e - 1, hi)
                spans[-1] = (spans[-1][0], hi if end < 0 else end)
            return
        start = data.rfind(b"\n", lo, s) + 1 or lo
        end = data.find(b"\n", max(s, e - 1), hi)
        end = hi if end < 0 else end
        if spans and start <= spans[-1][1] + 1:  # the next line, or the same: one span
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))


class StreamMatcher:
    """Feed bytes; read ``hits`` (key → named groups as bytes) and ``seen`` afterwards.

    ``patterns`` is a sequence of (key, compiled pattern). ``watch`` is an optional compiled
    pattern whose matching lines (up to 64, without the newline) are collected in ``seen`` and
    which never leaves the set.
    """

    def __init__(
        self, patterns: Sequence[tuple[str, Any]], watch: Any = None, window: int = WINDOW, keep: Any = ()
    ) -> None:
        self.window = window
        self._keep = frozenset(keep)
        self.hits: dict[str, dict[str, bytes]] = {}
        self.seen: list[bytes] = []
        self._watch = watch
        self._pending: list[tuple[str, Any, tuple[bytes, ...] | None]] = [
            (key, rx, needles(_source(rx))) for key, rx in patterns
        ]
        self._watch_needles = needles(_source(watch)) if watch is not None else None
        self._tail = b""
        self._gate: Any = None
        self._idle = False
        self._helper: _Helper | bool | None = None  # None: not started yet; False: not worth it
        self._build_gate()

    def _build_gate(self) -> None:
        """One RE2 pass over literal alternatives decides whether a region needs a closer look;
        a pattern without needles forces the closer look every time."""
        import re2

        self._idle = not self._pending and (self._watch is None or len(self.seen) >= MAX_SEEN)
        groups = [nd for _, _, nd in self._pending]
        if self._watch is not None and len(self.seen) < MAX_SEEN:
            groups.append(self._watch_needles)
        if not groups or any(nd is None for nd in groups):
            self._gate = None
            return
        lits = sorted({n for nd in groups for n in nd or ()})
        self._gate = literal_gate(lits)
        if self._gate is None:
            opts = re2_options()
            opts.longest_match = True
            self._gate = re2.compile(b"|".join(re2.escape(n) for n in lits), opts)

    @property
    def idle(self) -> bool:
        """Nothing left to look for: feeding costs nothing."""
        return self._idle

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        """Look at ``data[:n]`` (default: all of it); nothing of ``data`` is kept by reference."""
        if n is None:
            n = len(data)
        if not n or self._idle:
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
            first = data.find(b"\n", 0, nl)
            if first < 0:
                first = nl
            # The tail continues the first line: only that line is copied before the gate.
            head = self._tail + bytes(view[:first]) if self._tail else bytes(view[:first])
            self._tail = bytes(view[max(nl + 1, n - w) : n])
            literal = isinstance(self._gate, Literals)
            if nl - first > SPLIT and self._helper is not False and self._gate is not None and not literal:
                mid = data.find(b"\n", (first + nl) // 2, nl)
                if mid > first:
                    self._scan_split(head, view, mid, first, nl)
                    return
            self._scan(head)
            if first < nl and not self._idle:
                if literal:  # only the lines holding a literal are copied, and looked at
                    self._scan(data, first + 1, nl)
                    return
                with view[first + 1 : nl] as rest:
                    self._scan(rest)

    def _scan_split(self, head: bytes, view: memoryview, mid: int, first: int, nl: int) -> None:
        """Scan ``head``, then ``view[first+1:mid]``, then ``view[mid+1:nl]``, gating the last
        part on the helper thread while this one gates the first two.

        The gate only shrinks as patterns leave the set, so a part the old gate passed over needs
        no second look, and a part it flagged is scanned again, in order, with the current one.
        """
        helper = self._helper
        if helper is None:
            helper = self._helper = _Helper.start()
            if helper is False:
                self._scan(head)
                with view[first + 1 : nl] as rest:
                    self._scan(rest)
                return
        with view[first + 1 : mid] as a, view[mid + 1 : nl] as b:
            gate = self._gate
            helper.search(gate, b)
            try:
                flag_a = gate.search(a) is not None
                self._scan(head)
            finally:
                flag_b = helper.result()
            if flag_a and not self._idle:
                self._scan(a)
            if flag_b and not self._idle:
                self._scan(b)

    def close(self) -> None:
        if self._tail and not self._idle:
            self._scan(self._tail)
        self._tail = b""

    def _scan(self, data: Any, lo: int = 0, hi: int | None = None) -> None:
        """Look at ``data[lo:hi]`` (bytes, a bytearray, an mmap or a memoryview)."""
        gate = self._gate
        if isinstance(gate, Literals):
            if isinstance(data, memoryview):
                data = bytes(data)
            spans = gate.lines(data, lo, len(data) if hi is None else hi)
            if not spans:
                return
            region = b"\n".join(data[a:b] for a, b in spans)  # no pattern spans a newline
        else:
            with memoryview(data) as view, view[lo:hi] as part:
                if gate is not None and gate.search(part) is None:
                    return
                region = bytes(part)
        self._look(region)

    def _look(self, region: bytes) -> None:
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
            if key in self._keep:
                m = None
                for found in rx.finditer(region):
                    m = found
            else:
                m = rx.search(region)
            if m is None:
                continue
            self.hits[key] = {
                (k.decode() if isinstance(k, bytes) else k): v for k, v in m.groupdict().items() if v is not None
            }
            fired = fired or key not in self._keep
        if fired:
            self._pending = [p for p in self._pending if p[0] not in self.hits or p[0] in self._keep]
        if self._watch is not None and len(self.seen) < MAX_SEEN and may_match(self._watch_needles):
            before = len(self.seen)
            self._collect_seen(region)
            fired = fired or len(self.seen) >= MAX_SEEN > before
        if fired:
            self._build_gate()

    def _collect_seen(self, region: bytes) -> None:
        for m in self._watch.finditer(region):
            if len(self.seen) >= MAX_SEEN:
                return
            self.seen.append(m.group(0).rstrip(b"\r"))


class _Helper:
    """A second thread that runs one gate search at a time: RE2 releases the GIL while it
    searches, so a large chunk is gated on two CPUs. Two locks hand the job over and back."""

    def __init__(self) -> None:
        import threading

        self._job: tuple[Any, memoryview] | None = None
        self._found = False
        self._todo = threading.Lock()
        self._todo.acquire()
        self._done = threading.Lock()
        self._done.acquire()
        thread = threading.Thread(target=self._loop, name="guard-matcher-gate", daemon=True)
        thread.start()

    @classmethod
    def start(cls) -> _Helper | bool:
        """A helper, or False on a single CPU (or where no thread can start)."""
        import os

        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        if cpus < 2:
            return False
        try:
            return cls()
        except RuntimeError:
            return False

    def _loop(self) -> None:
        while True:
            self._todo.acquire()
            try:
                gate, region = self._job or (None, None)
                self._found = True  # if the search fails, the caller takes the closer look
                self._found = gate.search(region) is not None
            except Exception:
                pass
            finally:
                self._job = None
                self._done.release()

    def search(self, gate: Any, region: memoryview) -> None:
        self._job = (gate, region)
        self._todo.release()

    def result(self) -> bool:
        self._done.acquire()
        return self._found
