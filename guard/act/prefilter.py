"""The relay's sink until stderr could matter: a cheap literal check in front of the annotator.

Every pattern of every stderr rule contains one of a few literal strings (its "needles",
``guard.act.matcher.needles``), and a watched ``[guard]`` line contains ``[guard] ``. Until one of
them shows up, no rule can fire, so the annotator (rule loading, ``re``, ``json`` and RE2: about
15 ms) is not built: ``DeferredSink`` checks each chunk for the needles with ``bytes in`` and
keeps only the last ``WINDOW`` bytes of the unfinished line. When a needle appears, or once
``SWITCH_BYTES`` have gone by (past that, the annotator's single RE2 pass is cheaper than one
search per needle), it builds the annotator and hands it that tail and then the stream, so the
annotator sees the same lines, within the same window, that it would have seen from the start;
every earlier region held no needle and so no match.

The needles come from the rule set's digest (``guard.ruleset.needles``). Without a digest, or
when the rule files have problems to report, the annotator is built at once, as before.
"""

from __future__ import annotations

from guard.act.matcher import WINDOW  # the matcher keeps this much of an unfinished line
from guard.ruleset import needles as rulefiles
from guard.ruleset import paths as rulepaths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

SWITCH_BYTES = 256 << 10
WATCH_NEEDLE = b"[guard] "


class DeferredSink:
    """``feed``/``finish`` like the annotator, which it builds only when stderr could matter."""

    def __init__(self, build: Callable[[], Any], needles: Sequence[bytes], window: int = WINDOW) -> None:
        self._build = build
        self._needles = tuple(needles)
        self._window = window
        self._tail = b""
        self._fed = 0
        self.real: Any = None

    def feed(self, data: bytes | bytearray, n: int | None = None) -> None:
        if n is None:
            n = len(data)
        if self.real is not None:
            self.real.feed(data, n)
            return
        if not n:
            return
        self._fed += n
        with memoryview(data) as view:
            chunk = bytes(view[:n])
        region = self._tail + chunk if self._tail else chunk
        if self._fed > SWITCH_BYTES or any(nd in region for nd in self._needles):
            self.real = self._build()
            if self._tail:
                self.real.feed(self._tail)
            self.real.feed(chunk)
            return
        w = self._window
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            self._tail = chunk[max(nl + 1, n - w) :]
        else:
            self._tail = region[-w:]

    def finish(self, status: int) -> bytes:
        """The annotations; none when no needle was ever seen (every byte fed was checked)."""
        if self.real is None:
            return b""
        return bytes(self.real.finish(status))


def rule_set_needles(env: Mapping[str, str]) -> tuple[tuple[bytes, ...], bool]:
    """(needles of every pattern of the default rule set plus the watch line, eager): eager when
    loading reports problems or a pattern has no needles, so the caller must not defer."""
    from guard.act import matcher
    from guard.ruleset import annotations as stderr_rules

    rules, problems = stderr_rules.load_with_problems(rulepaths.stderr_paths(env), env=env)
    found: set[bytes] = {WATCH_NEEDLE}
    eager = bool(problems)
    for rule in rules:
        for pattern in (*rule.patterns, *rule.captures):  # a capture line can come first
            nd = matcher.needles(pattern)
            if nd is None:
                eager = True
            else:
                found.update(nd)
    return tuple(sorted(found)), eager


def sink_for_run(argv: Sequence[str], env: Mapping[str, str], on_build: Callable[[Any], Any] | None = None,
                 **annotator: Any) -> Any:
    """The relay's sink for one run: a DeferredSink when the rule set's digest allows it, else
    the annotator itself. ``annotator`` holds ``Annotator.for_run``'s keywords (cwd, command …);
    ``on_build`` is given the annotator when it is built."""

    def build() -> Any:
        from guard.act.annotate import Annotator

        got = Annotator.for_run(argv, env, **annotator)
        if on_build is not None:
            on_build(got)
        return got

    try:
        key = rulefiles.digest_key(rulepaths.expand(rulepaths.stderr_paths(env)))
        digest = rulefiles.read_digest(env, key)
        if digest is None:
            needles, eager = rule_set_needles(env)
            rulefiles.write_digest(env, key, needles, eager)
            digest = (needles, eager)
    except (OSError, ValueError):
        digest = None
    if digest is None or digest[1]:
        return build()
    return DeferredSink(build, digest[0])

