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
        fds_used: dict[int, str]

        def string(self, text: str, st: State, fr: Frame, via: str, stdin: str | None = None) -> None: ...

        def string_in(self, text: str, st: State, fr: Frame, stdin: str | None = None) -> None: ...

        def emit(self, call: Call, program: str | None = None, facts: dict | None = None) -> None: ...


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


class Call:
    """One program about to run, as the walk hands it from stage to stage: its argv, the shell
    state and frame it runs in, the environment its prefix assignments add, its stdin (when
    known), the files its redirections write, the variables it referenced, its position in the
    command text, and its cwd when that differs from the state's (``git -C``, ``env -C``).

    ``programs.run`` takes one and the walker's ``emit`` turns one into an ``Invocation``. A
    plain class with slots, never changed once made, for the reason ``Frame`` is one.
    """

    __slots__ = ("argv", "st", "fr", "env", "stdin", "writes", "refs", "pos", "cwd")

    def __init__(self, argv: tuple[str, ...], st: State, fr: Frame, env: dict[str, str | None],
                 stdin: str | None = None, writes: tuple[str, ...] = (), refs: list[str] | None = None,
                 pos: tuple[int, int] = (0, 0), cwd: str | None = None) -> None:
        self.argv = argv
        self.st = st
        self.fr = fr
        self.env = env
        self.stdin = stdin
        self.writes = writes
        self.refs = refs if refs is not None else []
        self.pos = pos
        self.cwd = cwd

    def __repr__(self) -> str:
        return f"Call(argv={self.argv!r}, cwd={self.cwd or self.st.cwd!r}, via={self.fr.via!r})"


class Effects:
    """What the command has done to the disk so far, as the walk follows it: files written (path
    → content), git aliases defined by ``git config alias.X`` (a config file written), paths
    removed, repositories cloned or initialised, symlinks made (path → target), programs copied
    or linked under another name (path → program), folders known to exist (``given``: the tree
    roots and the starting cwd) and made, the argv of every command run, and archives packed
    (archive path → the folders and files it holds, by absolute path).

    One is shared by a state and every subshell copy of it: a file written in a subshell exists
    after it. A plain class with slots, for the reason ``State`` is one.
    """

    __slots__ = ("files", "git_aliases", "removed", "cloned", "links", "renamed", "given", "made", "ran", "archives")

    def __init__(self, given: tuple[str, ...] = ()) -> None:
        self.files: dict[str, str] = {}
        self.git_aliases: dict[str, str] = {}
        self.removed: set[str] = set()
        self.cloned: set[str] = set()
        self.links: dict[str, str] = {}
        self.renamed: dict[str, str] = {}
        self.given = given
        self.made: set[str] = set()
        self.ran: list[tuple[str, ...]] = []
        self.archives: dict[str, tuple[str, ...]] = {}

    def __repr__(self) -> str:
        return "Effects(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


_STATE_SLOTS = ("cwd", "vars", "aliases", "functions", "dirstack", "positional", "exported", "namerefs", "arg0",
                "noglob", "errexit", "failed", "cd_target", "hashed", "inherited", "fds", "fx")


class State:
    """The shell's state during one walk: what bash itself keeps (cwd, variables, aliases,
    functions, directory stack, options) and, in ``fx``, what the command has done to the disk.
    A plain class with slots and literal empty containers: one is made per command and copied
    per pipeline stage and substitution, and a record's generated ``__init__`` (a factory call
    per container) made that a tenth of a plain command's resolve time.

    Fields: ``positional`` None means unknown ($1… of the outer shell); ``exported`` holds what
    the command assigned and exported; ``namerefs`` declare -n NAME=TARGET; ``arg0`` $0;
    ``noglob`` set -f; ``errexit`` set -e; ``failed`` the last builtin is known to have failed (cd to a missing
    folder) and ``cd_target`` where that cd meant to go; ``hashed`` hash -p PATH NAME (NAME runs
    PATH); ``inherited`` the names the shell got from its environment (exported from the start);
    ``fds`` the text a read of an open descriptor (3 and up) gives, where the command says it
    (``exec 3<<<'…'``, ``exec 4< FILE`` of a file it wrote); ``fx`` the command's effects
    (``Effects``), shared with every copy.
    """

    __slots__ = _STATE_SLOTS

    def __init__(
        self,
        cwd: str,
        vars: dict[str, Value],
        aliases: dict[str, str] | None = None,
        functions: dict[str, FunctionDef | str] | None = None,
        given: tuple[str, ...] = (),
    ) -> None:
        self.cwd = cwd
        self.vars = vars
        self.aliases = {} if aliases is None else aliases
        self.functions = {} if functions is None else functions
        self.dirstack: list[str] = []
        self.positional: list[str] | None = None
        self.exported: dict[str, str | None] = {}
        self.namerefs: dict[str, str] = {}
        self.arg0 = "bash"
        self.noglob = False
        self.errexit = False
        self.failed = False
        self.cd_target = ""
        self.hashed: dict[str, str] = {}
        self.inherited: frozenset[str] = frozenset()
        self.fds: dict[int, str] = {}
        self.fx = Effects(given)

    @classmethod
    def start(cls, cwd: str, vars: dict[str, Value], aliases: dict[str, str], given: tuple[str, ...],
              inherited: frozenset[str] = frozenset()) -> State:
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
        new.namerefs = {}
        new.arg0 = "bash"
        new.noglob = False
        new.errexit = False
        new.failed = False
        new.cd_target = ""
        new.hashed = {}
        new.inherited = inherited
        new.fds = {}
        new.fx = Effects(given)
        return new

    def __repr__(self) -> str:
        return "State(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in _STATE_SLOTS) + ")"

    def copy(self) -> State:
        """A subshell's state: its own variables, aliases, functions, directory stack and
        options; the effects on disk are shared (they outlive the subshell). ``failed`` and
        ``cd_target`` start over, as a fresh state's do."""
        new = _new_state(State)
        new.cwd = self.cwd
        new.vars = dict(self.vars)  # arrays are never changed in place: a shallow copy is enough
        new.aliases = dict(self.aliases)
        new.functions = dict(self.functions)
        new.dirstack = list(self.dirstack)
        new.positional = None if self.positional is None else list(self.positional)
        new.exported = dict(self.exported)
        new.namerefs = dict(self.namerefs)
        new.arg0 = self.arg0
        new.noglob = self.noglob
        new.errexit = self.errexit
        new.failed = False
        new.cd_target = ""
        new.hashed = dict(self.hashed)
        new.inherited = self.inherited
        new.fds = dict(self.fds)  # a subshell and a child process inherit the open descriptors
        new.fx = self.fx
        return new


_new_state = object.__new__


def home_of(st: State) -> str:
    """``$HOME`` as the command has it (``~`` expands to it)."""
    h = st.vars.get("HOME")
    return h if isinstance(h, str) else "/root"


def relink(arg: str, st: State) -> str:
    """A path through a symlink ``ln -s`` made earlier in the command, as the target it names
    (``ln -sfn /workspace/app /tmp/wa && git -C /tmp/wa commit``), also as an option's attached
    value (``--git-dir=/tmp/wa/.git``); other words unchanged."""
    if "/" not in arg or UNKNOWN in arg:
        return arg
    if arg.startswith("-"):
        name, eq, value = arg.partition("=")
        if not eq or "/" not in value:
            return arg
        got = relink_path(paths.join(st.cwd, value, home_of(st)), st)
        return arg if got is None else name + eq + got
    got = relink_path(paths.join(st.cwd, arg, home_of(st)), st)
    return arg if got is None else got


def relink_path(full: str, st: State) -> str | None:
    """The absolute path ``full`` with a symlink made earlier in the command replaced by its
    target (as the kernel follows it), or None when it passes through none."""
    for link, target in st.fx.links.items():
        if full == link or full.startswith(link + "/"):
            return target + full[len(link) :]
    return None


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
