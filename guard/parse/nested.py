"""The parser for command text nested in a command (``$(…)``, backticks, ``<(…)``, heredoc text).

Each lowering hands the inner text back to the whole parser, with its plain, tree-sitter,
bashlex and scan stages in order. That parser is ``guard.parse.parse_at``, which imports the
lowerings; it registers itself here when ``guard.parse`` is imported (always before any of its
modules), so a lowering reaches it without importing the package that imports the lowering.
"""

from __future__ import annotations

from guard.ir import Script

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from collections.abc import Callable

_parse_at: Callable[[str, int, int], Script] | None = None


def register(parse_at: Callable[[str, int, int], Script]) -> None:
    global _parse_at
    _parse_at = parse_at


def reparse(src: str, base: int, depth: int) -> Script:
    """``src`` (at offset ``base`` of the whole command, ``depth`` substitutions deep) parsed."""
    if _parse_at is None:  # only while guard.parse itself is being imported
        raise RuntimeError("guard.parse has not registered its parser yet")
    return _parse_at(src, base, depth)
