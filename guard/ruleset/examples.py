"""What a rule's examples are and what running one gives: the context an example runs in and
the result record. Running them needs the whole pipeline, a layer above this one, so the caller
of the compile passes the runner in (``guard.policy.examples.run_rule_examples``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.ruleset.checks import Entry
    from guard.ruleset.model import RuleSet
    from guard.ruleset.read import Diagnostic

EXAMPLE_CWD = "/workspace/app"
EXAMPLE_TREES = ("/workspace",)
EXAMPLE_ENV = {"HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin", "USER": "agent"}


@dataclass
class ExampleResult:
    entry: Entry
    kind: str  # "refuse" or "allow"
    index: int
    command: str
    ok: bool
    why: str = ""

    def diagnostic(self) -> Diagnostic:
        path = (*self.entry.path, "examples", self.kind, self.index)
        return self.entry.doc.diag(path, self.why, "example-" + self.kind)


# =========================================================================== examples


def example_context(ex: Any) -> tuple[str, Any]:
    """(command, Context) for one example: a string, or {command, cwd, tree, env}."""
    from guard.context import Context

    if isinstance(ex, str):
        return ex, Context(cwd=EXAMPLE_CWD, trees=EXAMPLE_TREES, env=dict(EXAMPLE_ENV))
    tree = ex.get("tree") or list(EXAMPLE_TREES)
    env = {**EXAMPLE_ENV, **{str(k): str(v) for k, v in (ex.get("env") or {}).items()}}
    trees = (tree,) if isinstance(tree, str) else tuple(tree)
    return ex["command"], Context(cwd=ex.get("cwd") or EXAMPLE_CWD, trees=trees, env=env)


# Runs each example of one entry against the compiled set: (entry, rule set) → results.
Runner = Callable[["Entry", "RuleSet"], "list[ExampleResult]"]
