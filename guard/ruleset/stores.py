"""Credential stores as data: the config's ``credential_stores`` (rules/config.yaml), read once
into what the token facts ask of them.

An entry is a path pattern (``*`` and ``?`` within one component):

- starting with ``/``: that path (``/proc/*/environ``);
- otherwise: that path as the end of any path (``.git-credentials``, ``.config/gh/``), the way
  a tool finds its file under whatever home it runs with;
- ending with ``/``: the folder and everything in it.

``names(path)`` says whether a path (already joined with the cwd) is a store; ``hint(text)`` is
the cheap gate in front of it (a literal every relative or globbed mention of a store holds);
``samples(home)`` are concrete store paths a ``find -name``/``-path`` pattern is tried against.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

_GLOB = re.compile(r"[*?]")


def _fragment(entry: str) -> str:
    folder = entry.endswith("/")
    body = entry.strip("/") if not entry.startswith("/") else entry.rstrip("/")
    rx = "".join("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in body)
    head = "^" if entry.startswith("/") else "(?:^|/)"
    return head + rx + ("(?:/|$)" if folder else "$")


class Stores:
    __slots__ = ("entries", "_rx", "literals", "hints", "_hint", "_named", "_samples")

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries = tuple(str(e) for e in entries if str(e).strip("/"))
        self._rx = re.compile("|".join(_fragment(e) for e in self.entries)) if self.entries else None
        # the longest literal run of each entry: every path the regex matches holds one
        self.literals = tuple(sorted({max(_GLOB.split(e.strip("/")), key=len) for e in self.entries}))
        # what a relative or globbed operand naming a store holds: a glob character, or a
        # literal piece of an entry's last component (environ, netrc, gh, credentials …)
        last = {max(_GLOB.split(e.rstrip("/").rsplit("/", 1)[-1]), key=len) for e in self.entries}
        self.hints = tuple(sorted(h for h in last if h)) + ("*", "?", "[")
        self._hint = re.compile("|".join(re.escape(h) for h in self.hints)).search
        # a pattern (find -name/-path) is worth trying only when it spells part of a store's name
        self._named = re.compile("|".join(re.escape(h) for h in self.hints if h not in "*?[") or "(?!)").search
        self._samples: dict[str, tuple[str, ...]] = {}

    def names(self, path: str) -> bool:
        """Whether ``path`` is a store, or lies in a store folder."""
        if self._rx is None:
            return False
        for lit in self.literals:  # an `in` test is far cheaper than the regex at every offset
            if lit in path:
                return self._rx.search(path) is not None
        return False

    def hint(self, text: str) -> bool:
        return self._hint(text) is not None

    def spelled(self, pattern: str) -> bool:
        """Whether a search pattern spells part of a store's name (``-name '*netrc*'``; not ``-name '*'``)."""
        return self._named(pattern) is not None

    def samples(self, home: str) -> tuple[str, ...]:
        """Concrete paths of the stores under ``home``: what a find pattern is matched against."""
        got = self._samples.get(home)
        if got is None:
            out = []
            for e in self.entries:
                path = e.rstrip("/") if e.startswith("/") else home.rstrip("/") + "/" + e.rstrip("/")
                out += [path.replace("*", "1"), path.replace("*", "self")] if "*" in path else [path]
            got = self._samples[home] = tuple(dict.fromkeys(out))
        return got
