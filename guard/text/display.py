"""Rendering untrusted text (commands, cwd, agent names) so a terminal shows it and obeys nothing.

Log records come from many sandboxes and hold whatever an agent typed. Before any of it is
printed, every character that a terminal could act on is replaced by a visible escape:

* C0 controls (ESC, BEL, BS, ``\\r``, ``\\n`` …) and DEL → ``\\x1b``, ``\\x07``, ``\\r``, ``\\n``, ``\\t``;
  with ESC gone, no CSI, OSC (title, OSC 52 clipboard, hyperlinks) or DCS sequence can start;
* C1 controls U+0080–U+009F (8-bit CSI/OSC/DCS) → ``\\x9b`` …;
* bidirectional overrides and isolates, zero-width and other invisible format characters, line
  and paragraph separators, Unicode tag characters and lone surrogates → ``\\u202e`` ….
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"
    "\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\ud800-\udfff"
    "\U000e0000-\U000e007f]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    named = _NAMED.get(ch)
    if named:
        return named
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def inert(text: object) -> str:
    """``text`` as a string a terminal displays without acting on any part of it."""
    if text is None:
        return "-"
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, s)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in ``…`` when cut."""
    if width <= 0 or len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…"


def show(text: object, width: int = 0) -> str:
    """Neutralise, then clip: the form every untrusted field takes in a text report."""
    return clip(inert(text), width)


# A message guard writes for a model or a person: a word longer than WORD_MAX (a URL, a base64
# blob) keeps its two ends, and the whole is cut at MESSAGE_MAX, which no input can push a message
# past. Rule messages aim at 600 characters (docs/behaviour.md §6); the cap leaves room for the
# tool calls filled from a command (a git add of many files reaches 784 on the shared corpus),
# which a cut would make wrong.
MESSAGE_MAX = 1000
WORD_MAX = 200
_LONG_WORD = re.compile(rf"\S{{{WORD_MAX + 1},}}")


def _elide(m: re.Match[str]) -> str:
    word = m.group(0)
    keep = (WORD_MAX - 1) // 2
    return word[:keep] + "…" + word[-keep:]


def elide(text: str, limit: int = MESSAGE_MAX) -> str:
    """``text`` with each word past ``WORD_MAX`` characters elided in the middle, then cut to
    ``limit`` characters (``…`` marks each cut)."""
    if len(text) > WORD_MAX:
        text = _LONG_WORD.sub(_elide, text)
    return clip(text, limit)


def message(text: str, limit: int = MESSAGE_MAX) -> str:
    """The form every message guard writes takes: secrets redacted (``guard.text.redact``),
    control characters made visible (``inert``), long words elided and the whole capped."""
    from guard.text.redact import redact

    return elide(inert(redact(text)), limit)


def _json_escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_inert(text: str) -> str:
    """JSON text (``json.dumps`` output) with every character ``inert`` would escape written as
    a JSON ``\\u`` escape: the file shows no control to a terminal, a reader gets the same data."""
    return _UNSAFE.sub(_json_escape, text)
