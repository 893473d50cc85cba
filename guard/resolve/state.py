"""The shell state the resolver tracks while it walks a command: cwd, variables, aliases,
functions, files the command wrote. Subshells work on a copy."""

from __future__ import annotations

from guard import paths
from guard.ir import UNKNOWN, FunctionDef, Invocation
from guard.record import dataclass, field

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


@dataclass(frozen=True)
class Frame:
    """Where the walk is: the indirections that led here, how many re-parses deep, the language.

    Defined here rather than in ``walk`` so that ``programs``, which ``walk`` imports, can
    import it at module level instead of once per command.
    """

    via: tuple[str, ...] = ()
    depth: int = 0
    lang: str = "sh"


@dataclass
class State:
    cwd: str
    vars: dict[str, Value]
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FunctionDef | str] = field(default_factory=dict)
    dirstack: list[str] = field(default_factory=list)
    positional: list[str] | None = None  # None: unknown ($1… of the outer shell)
    exported: dict[str, str | None] = field(default_factory=dict)  # assigned+exported in the command
    files: dict[str, str] = field(default_factory=dict)  # path → content written by the command
    git_aliases: dict[str, str] = field(default_factory=dict)  # defined by `git config alias.X`
    removed: set[str] = field(default_factory=set)  # paths rm'd earlier in the command
    cloned: set[str] = field(default_factory=set)  # repositories git clone/init made earlier
    namerefs: dict[str, str] = field(default_factory=dict)  # declare -n NAME=TARGET
    arg0: str = "bash"  # $0
    noglob: bool = False  # set -f
    failed: bool = False  # the last builtin is known to have failed (cd to a missing folder)
    cd_target: str = ""  # where that cd meant to go
    links: dict[str, str] = field(default_factory=dict)  # symlinks ln -s made earlier: path → target
    hashed: dict[str, str] = field(default_factory=dict)  # hash -p PATH NAME: NAME runs PATH
    renamed: dict[str, str] = field(default_factory=dict)  # path → program copied or linked there
    given: tuple[str, ...] = ()  # folders known to exist: the tree roots and the starting cwd
    made: set[str] = field(default_factory=set)  # folders mkdir made earlier in the command
    ran: list[tuple[str, ...]] = field(default_factory=list)  # argv of the commands run so far

    def copy(self) -> State:
        return State(
            cwd=self.cwd,
            vars=dict(self.vars),  # arrays are never changed in place: a shallow copy is enough
            aliases=dict(self.aliases),
            functions=dict(self.functions),
            dirstack=list(self.dirstack),
            positional=None if self.positional is None else list(self.positional),
            exported=dict(self.exported),
            files=self.files,  # shared on purpose: a file written in a subshell exists after it
            git_aliases=self.git_aliases,  # git config writes a file: it outlives the subshell too
            removed=self.removed,  # so does a deletion
            cloned=self.cloned,  # and a clone
            namerefs=dict(self.namerefs),
            arg0=self.arg0,
            noglob=self.noglob,
            made=self.made,
            given=self.given,
            renamed=self.renamed,
            hashed=dict(self.hashed),
            links=self.links,
            ran=self.ran,
        )


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


@dataclass
class Sink:
    """Where the walk puts what it finds. Limits keep hostile input bounded."""

    invocations: list[Invocation] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    # nodes visited at most: the shared corpus's largest command visits about 510, so ten
    # thousand is twenty times that, and costs at most about a second on the worst input found
    budget: int = WALK_BUDGET
    max_depth: int = 24  # nested re-parses (bash -c, eval, alias, function calls) at most
    reparse_budget: int = 128 * 1024  # characters of nested shell code parsed at most

    def note(self, text: str) -> None:
        if text not in self.unresolved and len(self.unresolved) < 50:
            self.unresolved.append(text)

    def spend(self) -> bool:
        self.budget -= 1
        if self.budget == 0:
            self.note(f"command too large: analysis stopped after {WALK_BUDGET} nodes")
        return self.budget > 0
