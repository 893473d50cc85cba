"""The shell state the resolver tracks while it walks a command: cwd, variables, aliases,
functions, files the command wrote. Subshells work on a copy."""

from __future__ import annotations

from guard.ir import UNKNOWN, FunctionDef, Invocation
from guard.resolve import paths

TYPE_CHECKING = False  # typing costs ~2-7 ms to import on the command path
if TYPE_CHECKING:
    from typing import Protocol

    class Walker(Protocol):
        """What the program handlers (``programs``, ``sourced``) call back into: the walker in
        ``walk``, which imports them, so they name it by this interface instead."""

        sink: Sink
        sourced_files: set[str]

        def string(self, text: str, st: State, fr: Frame, via: str, stdin: str | None = None) -> None: ...

        def string_in(self, text: str, st: State, fr: Frame, stdin: str | None = None) -> None: ...

        def emit(self, argv: tuple[str, ...], st: State, fr: Frame, env: dict[str, str | None],
                 stdin: str | None, writes: tuple[str, ...], refs: list[str], pos: tuple[int, int],
                 program: str | None = None, cwd: str | None = None, facts: dict | None = None) -> None: ...


class Assoc(dict):
    """An associative array (``declare -A``): keys are strings, in insertion order."""


# A variable's value: a string (may hold UNKNOWN); an indexed array as a list (dense) or a
# dict of int keys (sparse); an ``Assoc``; or None when it is set to something we cannot know.
Value = str | list[str] | dict | None


class Frame:
    """Where the walk is: the indirections that led here, how many re-parses deep, the language.

    Defined here rather than in ``walk`` so that ``programs``, which ``walk`` imports, can
    import it at module level instead of once per command. A plain class with slots, never
    changed once made: the walk makes one per indirection and per substitution, and a record's
    generated ``__init__`` cost twice as much.
    """

    __slots__ = ("via", "depth", "lang")

    def __init__(self, via: tuple[str, ...] = (), depth: int = 0, lang: str = "sh") -> None:
        self.via = via
        self.depth = depth
        self.lang = lang

    def __repr__(self) -> str:
        return f"Frame(via={self.via!r}, depth={self.depth!r}, lang={self.lang!r})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Frame:
            return NotImplemented
        return (self.via, self.depth, self.lang) == (other.via, other.depth, other.lang)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.via, self.depth, self.lang))


_STATE_SLOTS = ("cwd", "vars", "aliases", "functions", "dirstack", "positional", "exported", "files", "git_aliases",
                "removed", "cloned", "namerefs", "arg0", "noglob", "failed", "cd_target", "links", "hashed", "renamed",
                "given", "made", "ran")


class State:
    """The shell state of one walk. A plain class with slots and literal empty containers: one
    is made per command and copied per pipeline stage and substitution, and the record's
    generated ``__init__`` (a factory call per container) made that a tenth of a plain
    command's resolve time.

    Fields: ``positional`` None means unknown ($1… of the outer shell); ``exported`` holds what
    the command assigned and exported; ``files`` path → content written by the command;
    ``git_aliases`` those defined by ``git config alias.X``; ``removed`` paths rm'd earlier in
    the command; ``cloned`` repositories git clone/init made earlier; ``namerefs`` declare -n
    NAME=TARGET; ``arg0`` $0; ``noglob`` set -f; ``failed`` the last builtin is known to have
    failed (cd to a missing folder) and ``cd_target`` where that cd meant to go; ``links``
    symlinks ln -s made earlier (path → target); ``hashed`` hash -p PATH NAME (NAME runs PATH);
    ``renamed`` path → program copied or linked there; ``given`` folders known to exist (the
    tree roots and the starting cwd); ``made`` folders mkdir made earlier; ``ran`` the argv of
    the commands run so far.
    """

    __slots__ = _STATE_SLOTS

    def __init__(
        self,
        cwd: str,
        vars: dict[str, Value],
        aliases: dict[str, str] | None = None,
        functions: dict[str, FunctionDef | str] | None = None,
        dirstack: list[str] | None = None,
        positional: list[str] | None = None,
        exported: dict[str, str | None] | None = None,
        files: dict[str, str] | None = None,
        git_aliases: dict[str, str] | None = None,
        removed: set[str] | None = None,
        cloned: set[str] | None = None,
        namerefs: dict[str, str] | None = None,
        arg0: str = "bash",
        noglob: bool = False,
        failed: bool = False,
        cd_target: str = "",
        links: dict[str, str] | None = None,
        hashed: dict[str, str] | None = None,
        renamed: dict[str, str] | None = None,
        given: tuple[str, ...] = (),
        made: set[str] | None = None,
        ran: list[tuple[str, ...]] | None = None,
    ) -> None:
        self.cwd = cwd
        self.vars = vars
        self.aliases = {} if aliases is None else aliases
        self.functions = {} if functions is None else functions
        self.dirstack = [] if dirstack is None else dirstack
        self.positional = positional
        self.exported = {} if exported is None else exported
        self.files = {} if files is None else files
        self.git_aliases = {} if git_aliases is None else git_aliases
        self.removed = set() if removed is None else removed
        self.cloned = set() if cloned is None else cloned
        self.namerefs = {} if namerefs is None else namerefs
        self.arg0 = arg0
        self.noglob = noglob
        self.failed = failed
        self.cd_target = cd_target
        self.links = {} if links is None else links
        self.hashed = {} if hashed is None else hashed
        self.renamed = {} if renamed is None else renamed
        self.given = given
        self.made = set() if made is None else made
        self.ran = [] if ran is None else ran

    @classmethod
    def start(cls, cwd: str, vars: dict[str, Value], aliases: dict[str, str], given: tuple[str, ...]) -> State:
        """The state a command starts in: ``State(cwd, vars, aliases, given=given)`` without
        the keyword defaults and the test per container (one is made per command)."""
        new = _new_state(cls)
        new.cwd = cwd
        new.vars = vars
        new.aliases = aliases
        new.functions = {}
        new.dirstack = []
        new.positional = None
        new.exported = {}
        new.files = {}
        new.git_aliases = {}
        new.removed = set()
        new.cloned = set()
        new.namerefs = {}
        new.arg0 = "bash"
        new.noglob = False
        new.failed = False
        new.cd_target = ""
        new.links = {}
        new.hashed = {}
        new.renamed = {}
        new.given = given
        new.made = set()
        new.ran = []
        return new

    def __repr__(self) -> str:
        return "State(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in _STATE_SLOTS) + ")"

    def copy(self) -> State:
        """A subshell's state: its own variables, aliases, functions, directory stack and
        options; the files, deletions, clones, folders made and commands run are shared (they
        outlive the subshell). ``failed`` and ``cd_target`` start over, as a fresh record's did."""
        new = _new_state(State)
        new.cwd = self.cwd
        new.vars = dict(self.vars)  # arrays are never changed in place: a shallow copy is enough
        new.aliases = dict(self.aliases)
        new.functions = dict(self.functions)
        new.dirstack = list(self.dirstack)
        new.positional = None if self.positional is None else list(self.positional)
        new.exported = dict(self.exported)
        new.files = self.files  # shared on purpose: a file written in a subshell exists after it
        new.git_aliases = self.git_aliases  # git config writes a file: it outlives the subshell too
        new.removed = self.removed  # so does a deletion
        new.cloned = self.cloned  # and a clone
        new.namerefs = dict(self.namerefs)
        new.arg0 = self.arg0
        new.noglob = self.noglob
        new.failed = False
        new.cd_target = ""
        new.links = self.links
        new.hashed = dict(self.hashed)
        new.renamed = self.renamed
        new.given = self.given
        new.made = self.made
        new.ran = self.ran
        return new


_new_state = object.__new__


def home_of(st: State) -> str:
    """``$HOME`` as the command has it (``~`` expands to it)."""
    h = st.vars.get("HOME")
    return h if isinstance(h, str) else "/root"


def relink(arg: str, st: State) -> str:
    """A path through a symlink ``ln -s`` made earlier in the command, as the target it names
    (``ln -sfn /workspace/app /tmp/wa && git -C /tmp/wa commit``); other words unchanged."""
    if "/" not in arg or UNKNOWN in arg:
        return arg
    full = paths.join(st.cwd, arg, home_of(st)) if not arg.startswith("-") else None
    if full is None:
        return arg
    for link, target in st.links.items():
        if full == link or full.startswith(link + "/"):
            return target + full[len(link):]
    return arg


WALK_BUDGET = 10_000


class Sink:
    """Where the walk puts what it finds. Limits keep hostile input bounded.

    ``budget``: nodes visited at most: the shared corpus's largest command visits about 510, so
    ten thousand is twenty times that, and costs at most about a second on the worst input
    found. ``max_depth``: nested re-parses (bash -c, eval, alias, function calls) at most.
    ``reparse_budget``: characters of nested shell code parsed at most. A plain slotted class:
    one is made per command.
    """

    __slots__ = ("invocations", "unresolved", "budget", "max_depth", "reparse_budget")

    def __init__(self, invocations: list[Invocation] | None = None, unresolved: list[str] | None = None,
                 budget: int = WALK_BUDGET, max_depth: int = 24, reparse_budget: int = 128 * 1024) -> None:
        self.invocations = [] if invocations is None else invocations
        self.unresolved = [] if unresolved is None else unresolved
        self.budget = budget
        self.max_depth = max_depth
        self.reparse_budget = reparse_budget

    def note(self, text: str) -> None:
        if text not in self.unresolved and len(self.unresolved) < 50:
            self.unresolved.append(text)

    def spend(self) -> bool:
        self.budget -= 1
        if self.budget == 0:
            self.note(f"command too large: analysis stopped after {WALK_BUDGET} nodes")
        return self.budget > 0
