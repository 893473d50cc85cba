"""Shape builders shared by the lowerings: and-or lists, pipelines, sequences, redirect attachment.

Lowerings flatten pipelines and and-or lists into a stream of nodes and operator strings
(``"|" "|&" "&&" "||" "!"``) and rebuild them here with bash's precedence (pipelines bind tighter
than ``&&``/``||``), which also repairs tree-sitter's wrong nesting of ``a | b | c && d``.
"""

from __future__ import annotations

from guard.ir import (
    AndOr,
    FunctionDef,
    Group,
    Lit,
    Node,
    Pipeline,
    Redirect,
    Sequence,
    Simple,
    Subshell,
    Word,
)
from guard.record import replace

Stream = list  # list[Node | str]

_STDERR_TO_STDOUT = Redirect(">&", fd=2, target=Word("1", (Lit("1"),)))


def attach_redirects(node: Node, redirects: tuple[Redirect, ...]) -> Node:
    """``node`` with ``redirects`` added; on a list or pipeline they go to the last command (#345)."""
    if not redirects:
        return node
    if isinstance(node, Simple | Subshell | Group):
        return replace(node, redirects=node.redirects + redirects)
    if isinstance(node, Pipeline):
        return replace(node, commands=node.commands[:-1] + (attach_redirects(node.commands[-1], redirects),))
    if isinstance(node, AndOr | Sequence):
        return replace(node, items=node.items[:-1] + (attach_redirects(node.items[-1], redirects),))
    if isinstance(node, FunctionDef):
        return replace(node, body=attach_redirects(node.body, redirects))
    return node


def _pipeline(tokens: list) -> Node | None:
    negated = False
    commands: list[Node] = []
    for tok in tokens:
        # Operators are strings; testing that first spares comparing each node with "!" and
        # "|&" through the records' Python-level __eq__.
        if not isinstance(tok, str):
            commands.append(tok)
        elif tok == "!":
            negated = not negated
        elif tok == "|&":
            if commands:
                commands[-1] = attach_redirects(commands[-1], (_STDERR_TO_STDOUT,))
    if not commands:
        return None
    if len(commands) == 1 and not negated:
        return commands[0]
    return Pipeline(tuple(commands), negated=negated)


def build_chain(stream: Stream) -> Node | None:
    """Rebuilds an and-or list of pipelines from a flat stream of nodes and operators."""
    items: list[Node] = []
    ops: list[str] = []
    segment: list = []
    for tok in stream:
        if isinstance(tok, str) and tok in ("&&", "||"):
            node = _pipeline(segment)
            segment = []
            if node is not None:
                items.append(node)
                ops.append(tok)
        else:
            segment.append(tok)
    node = _pipeline(segment)
    if node is not None:
        items.append(node)
    elif ops:
        ops.pop()
    if not items:
        return None
    if len(items) == 1:
        return items[0]
    return AndOr(tuple(items), tuple(ops[: len(items) - 1]))


def make_sequence(items: list[tuple[Node, bool]]) -> Node | None:
    """One node for a list of statements with their background flags."""
    if not items:
        return None
    if len(items) == 1 and not items[0][1]:
        return items[0][0]
    return Sequence(tuple(n for n, _ in items), tuple(bg for _, bg in items))
