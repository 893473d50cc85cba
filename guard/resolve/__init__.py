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


def resolve(script: Script, ctx: Context) -> Resolution:
    sink = Sink()
    try:
        walk_script(script, ctx, sink)
    except RecursionError:
        sink.note("command nested too deeply: analysis stopped")
    if script.error and script.parser in ("scan", "none"):
        sink.note(f"could not parse the command ({script.error})")
    elif script.error:
        sink.note(f"command partly analysed ({script.error})")
    return Resolution(tuple(sink.invocations), tuple(sink.unresolved))
