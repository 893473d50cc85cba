"""How a rule file's stderr pattern is read: RE2, bytes, multi-line anchors, never across a
newline. One reading for the validator, the loader and the annotator that runs the patterns."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
