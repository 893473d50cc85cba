"""parse → resolve → classify, for one command. Runs nothing."""

from __future__ import annotations

from guard import parse, resolve
from guard.context import Context
from guard.ir import Verdict
from guard.policy import classify as classifier
from guard.ruleset.load import load_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.ruleset.checks import Entry
    from guard.ruleset.examples import ExampleResult
    from guard.ruleset.model import RuleSet

# The stages are imported with this module, not on each call: an import statement in a function
# costs a lookup per call, and whoever imports the engine is about to analyse a command anyway.


def rule_examples(entry: Entry, rs: RuleSet) -> list[ExampleResult]:
    """A rule's examples through this pipeline: what the rule set's compiler is given to run them
    with (imported when a compile needs it, which the command path almost never does)."""
    from guard.policy.examples import run_rule_examples

    return run_rule_examples(entry, rs)


def rules_for(ctx: Context) -> RuleSet:
    """The rule set for ``ctx``'s layers (``guard.ruleset.load.load_for``), compiled, when it must
    be, with the pipeline checking each rule's examples."""
    return load_for(ctx, rule_examples)


def analyze(command: str, ctx: Context) -> Verdict:
    """The verdict for ``command`` run in ``ctx``.

    Any input gets a verdict; an exception here is a bug in guard, and callers decide what it
    means (guard-shell fails open unless GUARD_FAIL=closed; guard check reports it).
    """
    rules = rules_for(ctx)
    ctx = classifier.effective_context(ctx, rules)
    script = parse.parse(command)
    resolution = resolve.resolve(script, ctx, parse.parse)  # the parse stage reads built code again
    return classifier.classify(script, resolution, ctx, rules)
