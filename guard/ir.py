"""The intermediate representation shared by the pipeline stages.

Plain data, no behaviour beyond trivial accessors. Three layers:

* parse output  — ``Script`` holding a tree of ``Node`` (``Simple``, ``Pipeline``, ``AndOr``,
  ``Sequence``, ``Subshell``, ``Group``, ``FunctionDef``) built from ``Word`` and ``Redirect``.
  Nothing downstream knows which parser produced it (``Script.parser`` says, for reporting only).
* resolve output — ``Invocation``: one program the command would run, with static argv, cwd and
  the ``via`` chain of indirections that led to it.
* classify output — ``Verdict``.

A *static string* may contain ``UNKNOWN`` where a part could not be determined (an unset
variable, a command substitution with side effects).  ``"/tmp/" + UNKNOWN`` is "somewhere under
/tmp"; a string without ``UNKNOWN`` is exact.
"""

from __future__ import annotations

from guard.record import dataclass, field

# The records here keep an instance dict (no ``slots=True``): each is built once and read a few
# times, and a slotted frozen record's construction (a descriptor call per field) cost more over
# the corpus than its faster reads saved. Context, World and Spec, read on every command and
# built once, are slotted.

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any

UNKNOWN = "\uffff"


def is_exact(s: str) -> bool:
    return UNKNOWN not in s


def known_prefix(s: str) -> str:
    return s.split(UNKNOWN, 1)[0]


# --------------------------------------------------------------------------- parse layer


@dataclass(frozen=True)
class Lit:
    """Literal text after quote removal and escape processing."""

    text: str
    quoted: bool = False


@dataclass(frozen=True)
class Param:
    """``$X``, ``${X}``, ``${X:-w}``, ``${X[@]}``, ``$1``, ``$@`` …

    ``op`` is the operator text after the name (``":-"``, ``"-"``, ``":="``, ``"#"``, ``"%"`` …,
    ``""`` when none); ``arg`` is the word after the operator, if any. ``index`` is the array
    subscript text (``"@"``, ``"*"``, ``"0"``) or ``None``. ``length`` is True for ``${#X}``.
    """

    name: str
    quoted: bool = False
    op: str = ""
    arg: Word | None = None
    index: str | None = None
    length: bool = False


@dataclass(frozen=True)
class CmdSub:
    """``$(…)`` or a backtick substitution, with its parsed body."""

    script: Script
    quoted: bool = False


@dataclass(frozen=True)
class ProcSub:
    """``<(…)`` or ``>(…)``."""

    script: Script
    direction: str = "<"


@dataclass(frozen=True)
class Arith:
    """``$((…))``: never a program name, value unknown."""

    text: str


Part = Lit | Param | CmdSub | ProcSub | Arith


@dataclass(frozen=True)
class Word:
    raw: str
    parts: tuple[Part, ...]
    pos: tuple[int, int] = (0, 0)

    @property
    def literal(self) -> str | None:
        """The word's value when it is wholly literal, else None."""
        parts = self.parts
        if len(parts) == 1:  # most words: one part, no list to build and join
            p = parts[0]
            return p.text if isinstance(p, Lit) else None
        out = []
        for p in parts:
            if not isinstance(p, Lit):
                return None
            out.append(p.text)
        return "".join(out)


@dataclass(frozen=True)
class Redirect:
    """``op`` is one of ``< > >> >| <> <& >& &> &>> << <<- <<<``.

    For heredocs ``body`` is the body as a Word (literal when the delimiter was quoted, with
    expansions otherwise) and ``target`` is None. For here-strings the body is ``target``.
    """

    op: str
    fd: int | None = None
    target: Word | None = None
    body: Word | None = None
    quoted: bool = False


@dataclass(frozen=True)
class Assign:
    name: str
    value: Word | None = None
    array: tuple[Word, ...] | None = None
    append: bool = False
    index: str | None = None


@dataclass(frozen=True)
class Simple:
    """A simple command. ``words`` may be empty (assignment-only line).

    Declarations (``export``/``declare``/``local``/``readonly``/``typeset``), ``unset``, test
    commands (``[ … ]``, ``[[ … ]]``) and arithmetic commands are lowered to ``Simple`` too, with
    the keyword as the first word.
    """

    words: tuple[Word, ...]
    assigns: tuple[Assign, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    pos: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Pipeline:
    commands: tuple[Node, ...]
    negated: bool = False


@dataclass(frozen=True)
class AndOr:
    """``a && b || c``: ``ops[i]`` joins ``items[i]`` and ``items[i+1]``."""

    items: tuple[Node, ...]
    ops: tuple[str, ...]


@dataclass(frozen=True)
class Sequence:
    """Commands separated by ``;``, ``&`` or newlines. ``background[i]`` for ``&``."""

    items: tuple[Node, ...]
    background: tuple[bool, ...] = ()


@dataclass(frozen=True)
class Subshell:
    """``( … )``: cwd, variable and alias changes do not escape."""

    body: Node
    redirects: tuple[Redirect, ...] = ()


@dataclass(frozen=True)
class Group:
    """``{ …; }``, and the bodies of if/while/until/for/select/case, lowered to one scope.

    ``words`` holds the words those constructs evaluate outside their bodies (the for list, the
    case subject and patterns, the loop variable name as a Lit-only word ``kind_var``).
    ``kind`` is ``"group" | "if" | "while" | "until" | "for" | "select" | "case" | "arith-for"``.
    """

    body: tuple[Node, ...]
    kind: str = "group"
    words: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    loop_var: str | None = None


@dataclass(frozen=True)
class FunctionDef:
    name: str
    body: Node
    source: str = ""


Node = Simple | Pipeline | AndOr | Sequence | Subshell | Group | FunctionDef


@dataclass(frozen=True)
class Script:
    """A parsed command. ``body`` is None for empty input or when nothing could be parsed.

    ``parser`` is ``"tree-sitter" | "bashlex" | "scan" | "none"``. ``error`` holds the reason a
    parser rejected the input (for ``scan``, why both real parsers failed).
    """

    body: Node | None
    source: str
    parser: str
    error: str | None = None


# --------------------------------------------------------------------------- resolve layer

# What an invocation is. Nearly every one runs a program (RUN); the walk also records what runs
# none but still reads, writes or sends something: a bare assignment's expansions, a redirection
# on a compound command, an HTTP request or an environment read made by inline code.
RUN = "run"
ASSIGN = "assign"
REDIRECT = "redirect"
HTTP = "http"
ENV_READ = "env-read"
# The name an invocation that runs no program goes by where a program name stands: in a program
# spec's and a rule's ``program:`` (``"<http>"`` in rules/programs/http.yaml), in reports, in
# ``guard check --json``.
KIND_NAMES = {ASSIGN: ":assign", REDIRECT: "<redirect>", HTTP: "<http>", ENV_READ: "<env-read>"}


@dataclass(frozen=True)
class Invocation:
    """One program the command would run, or (``kind`` other than RUN) one thing it does without
    running a program, named by ``KIND_NAMES``.

    ``program`` is the basename with any directory and ``.exe`` stripped (``git``), or a string
    containing UNKNOWN when the name is dynamic. ``argv[0]`` is the name as written. ``cwd`` is an
    absolute path that may contain UNKNOWN. ``env`` is what the command adds or overrides
    (assignment prefixes, ``env K=V``, exports earlier in the command); ``None`` values mean "set
    to something unknown". ``via`` lists the indirections, outermost first, each a short phrase
    such as ``"alias g"``, ``"bash -c"``, ``"find -exec"``. ``stdin`` is the literal text fed on
    standard input when known (heredoc, here-string, ``echo … |``). ``pipe_to`` holds the argv of
    the commands this one's stdout is piped into, in order (the next 32 stages). ``writes`` are the resolved targets of
    output redirections, ``reads`` those of input redirections. ``var_refs`` are the variable
    names the command expands when run.
    """

    program: str
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str | None] = field(default_factory=dict)
    via: tuple[str, ...] = ()
    stdin: str | None = None
    pipe_to: tuple[tuple[str, ...], ...] = ()
    writes: tuple[str, ...] = ()
    var_refs: tuple[str, ...] = ()
    pos: tuple[int, int] = (0, 0)
    lang: str = "sh"
    reads: tuple[str, ...] = ()  # files opened by input redirections (< FILE)
    removed: tuple[str, ...] = ()  # paths the command deleted before this one ran (rm -rf x/.git)
    cloned: tuple[str, ...] = ()  # repositories the command cloned or created before this one ran
    facts: dict[str, Any] = field(default_factory=dict)
    kind: str = RUN


@dataclass(frozen=True)
class Resolution:
    invocations: tuple[Invocation, ...]
    unresolved: tuple[str, ...] = ()


# --------------------------------------------------------------------------- classify layer


@dataclass(frozen=True)
class Verdict:
    verdict: str  # "allow" | "refuse"
    category: str | None = None
    rule: str | None = None
    tool: str | None = None
    message: str | None = None
    invocations: tuple[Invocation, ...] = ()
    unresolved: tuple[str, ...] = ()
    parser: str = "none"
    rule_source: str | None = None
    matched: Invocation | None = None
    also: tuple[str, ...] = ()
    # for each invocation: whether its repository (or cwd) is in the tree; None when unknown
    in_tree: tuple[bool | None, ...] = ()
    # what the matched rule does (guard.ruleset.actions): "refuse" with a refusal; "warn" or
    # "observe" with verdict "allow" and the refusal it stands for in the fields above; None
    # when no refusing rule matched
    action: str | None = None
    action_source: str | None = None  # where the action comes from, for guard explain


# What an ``unresolved`` note says when a budget (size, depth, steps) stopped the analysis before
# it saw all of the command: under ``GUARD_FAIL=closed`` such an allow is a refusal (``over_budget``).
BUDGET_WORDS = ("too large", "too deep", "larger than", "deeper than", "beyond", "budget", "more than")


def over_budget(verdict: Verdict) -> str | None:
    """The first note of an allowing ``verdict`` that says a budget cut its analysis short."""
    if verdict.verdict != "allow":
        return None
    for note in verdict.unresolved:
        if any(w in note for w in BUDGET_WORDS):
            return note
    return None
