"""guard: a shell-command guard and stderr annotator for AI coding agents.

Pipeline, one module or subpackage per stage:
parse (guard.parse) → resolve (guard.resolve) → classify (guard.policy) → act (guard.act,
guard.shell.main) → audit (guard.audit). ``guard.engine.analyze`` runs the first three.
"""

__version__ = "0.1.0"
