"""Find patterns in a byte stream line by line, in linear time and bounded memory.

Patterns are RE2 (``re2``): no backtracking, so a hostile line costs time linear in its length.
They never match across a newline (RE2 ``never_nl``), so a match lies within one line.

The stream arrives in chunks. Complete lines of a chunk are scanned together in one RE2 set
pass; the incomplete last line is carried to the next chunk, but only its last ``window`` bytes,
so a line of any length costs bounded memory. A pattern is guaranteed to be found when its match
lies within the last ``window`` bytes of a line, or anywhere in a line that arrived within one
chunk. A chunk without a newline costs a slice, not a scan.

Each pattern is reported once, with the named groups of its first match; a pattern that has
matched leaves the set, so a program repeating a matching line cannot make the scan slower.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WINDOW = 8192
MAX_SEEN = 64


def re2_options() -> Any:
    import re2

    opts = re2.Options()
    opts.log_errors = False
    opts.never_nl = True
    return opts


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
        self._pending: list[tuple[str, Any]] = list(patterns)
        self._tail = b""
        self._set: Any = None
        self._rebuild()

    @property
    def idle(self) -> bool:
        return self._set is None

    def _rebuild(self) -> None:
        import re2

        entries = [rx for _, rx in self._pending]
        if self._watch is not None and len(self.seen) < MAX_SEEN:
            entries.append(self._watch)
        if not entries:
            self._set = None
            return
        s = re2.Set.SearchSet(re2_options())
        for rx in entries:
            s.Add(rx.pattern)
        s.Compile()
        self._set = s

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        """Look at ``data[:n]`` (default: all of it); nothing of ``data`` is kept by reference."""
        if n is None:
            n = len(data)
        if self._set is None or not n:
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
        if self._set is not None and self._tail:
            self._scan(self._tail)
        self._tail = b""

    def _scan(self, region: bytes) -> None:
        found = self._set.Match(region)
        if not found:
            return
        changed = False
        npend = len(self._pending)
        for i in sorted(found):
            if i >= npend:
                self._collect_seen(region)
                changed = changed or len(self.seen) >= MAX_SEEN
                continue
            key, rx = self._pending[i]
            m = rx.search(region)
            if m is None:
                continue
            self.hits[key] = {
                (k.decode() if isinstance(k, bytes) else k): v for k, v in m.groupdict().items() if v is not None
            }
            changed = True
        if changed:
            self._pending = [(k, rx) for k, rx in self._pending if k not in self.hits]
            self._rebuild()

    def _collect_seen(self, region: bytes) -> None:
        for m in self._watch.finditer(region):
            if len(self.seen) >= MAX_SEEN:
                return
            self.seen.append(m.group(0).rstrip(b"\r"))
