"""parse → resolve → classify, for one command. Runs nothing."""

from __future__ import annotations

from guard import parse, resolve
from guard.context import Context
from guard.ir import Verdict
from guard.policy import classify as classifier
from guard.ruleset.load import load_for

# The stages are imported with this module, not on each call: an import statement in a function
# costs a lookup per call, and whoever imports the engine is about to analyse a command anyway.


def analyze(command: str, ctx: Context) -> Verdict:
    """The verdict for ``command`` run in ``ctx``.

    Any input gets a verdict; an exception here is a bug in guard, and callers decide what it
    means (guard-shell fails open unless GUARD_FAIL=closed; guard check reports it).
    """
    rules = load_for(ctx)
    ctx = classifier.effective_context(ctx, rules)
    script = parse.parse(command)
    resolution = resolve.resolve(script, ctx, parse.parse)  # the parse stage reads built code again
    return classifier.classify(script, resolution, ctx, rules)
