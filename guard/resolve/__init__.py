"""Resolve stage: from a parsed Script to every program the command would run.

``resolve(script, ctx)`` walks the IR with a model of the shell state (cwd, variables, aliases,
functions, files written) and sees through wrappers, nested shells, eval, inline programs and
scripts. It never runs anything.
"""

from __future__ import annotations

from guard.context import Context
from guard.ir import Resolution, Script
from guard.resolve.state import Sink
from guard.resolve.walk import walk_script  # at module level: not an import per command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def resolve(script: Script, ctx: Context, reparse: Callable[[str], Script] | None = None) -> Resolution:
    """``reparse`` reads shell code the command builds (``bash -c``, ``eval``) again: the parse
    stage's ``parse``, which is what it defaults to."""
    if reparse is None:
        from guard.parse import parse as reparse
    sink = Sink()
    try:
        walk_script(script, ctx, sink, reparse)
    except RecursionError:
        sink.note("command nested too deeply: analysis stopped")
    if script.error and script.parser in ("scan", "none"):
        sink.note(f"could not parse the command ({script.error})")
    elif script.error:
        sink.note(f"command partly analysed ({script.error})")
    return Resolution(tuple(sink.invocations), tuple(sink.unresolved))
