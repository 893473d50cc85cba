"""bash's command line as guard-shell reads it: enough to find the command text.

Imported on every guard-shell command: nothing but the builtins.
"""

# No `from __future__ import annotations`: that import reads a file on every analysed command;
# annotations that name typing-only types are strings instead.
# bash options that take the next argument as their value.
_LONG_WITH_ARG = {"--rcfile", "--init-file"}
_SHORT_WITH_ARG = {"o", "O"}
# Long options after which bash prints something and exits without running a command.
_LONG_INFO = {"--help", "--version", "--dump-strings", "--dump-po-strings"}


# --------------------------------------------------------------------------- argv


class ShellArgs:
    """bash's command line, understood just enough to find the command text.

    ``mode`` is ``"command"`` (``-c``: ``operand`` is the command string), ``"script"``
    (``operand`` is the script path), ``"stdin"`` (read commands from standard input) or
    ``"passthrough"`` (``--version``/``--help``, or ``-c`` without its string: bash reports it).
    ``rest`` holds the positional arguments after the operand. ``options`` are the option words
    as given, so an interactive session can start its real shell with the same ones.
    """

    # A plain class, not a dataclass: importing dataclasses costs ~7 ms on every command.
    __slots__ = ("mode", "operand", "rest", "options", "flags", "long_flags")

    def __init__(
        self,
        mode: str,
        operand: str | None = None,
        rest: tuple[str, ...] = (),
        options: tuple[str, ...] = (),
        flags: frozenset[str] = frozenset(),
        long_flags: frozenset[str] = frozenset(),
    ) -> None:
        self.mode, self.operand, self.rest, self.options = mode, operand, tuple(rest), tuple(options)
        self.flags, self.long_flags = frozenset(flags), frozenset(long_flags)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShellArgs) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return "ShellArgs(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def parse_args(args: list[str]) -> ShellArgs:
    """Split bash's arguments into options, the command/script operand and positional args."""
    flags: set[str] = set()
    long_flags: set[str] = set()
    options: list[str] = []
    i = 0
    n = len(args)
    # Long options come first in bash; accept them anywhere before the first operand.
    while i < n:
        a = args[i]
        if a in ("--", "-"):
            options.append(a)
            i += 1
            break
        if a.startswith("--"):
            options.append(a)
            long_flags.add(a.split("=", 1)[0])
            if a in _LONG_WITH_ARG and i + 1 < n:
                options.append(args[i + 1])
                i += 1
            i += 1
            continue
        if len(a) > 1 and a[0] in "-+" and a[1] != "-":
            options.append(a)
            takes = 0
            for ch in a[1:]:
                if a[0] == "-":
                    flags.add(ch)
                if ch in _SHORT_WITH_ARG:
                    takes += 1
            for _ in range(takes):
                if i + 1 < n:
                    options.append(args[i + 1])
                    i += 1
            i += 1
            continue
        break
    operands = args[i:]
    frozen = dict(options=tuple(options), flags=frozenset(flags), long_flags=frozenset(long_flags))
    if long_flags & _LONG_INFO:
        return ShellArgs("passthrough", **frozen)
    if "c" in flags:
        if not operands:
            return ShellArgs("passthrough", **frozen)
        return ShellArgs("command", operands[0], tuple(operands[1:]), **frozen)
    if "s" in flags or not operands:
        return ShellArgs("stdin", None, tuple(operands), **frozen)
    return ShellArgs("script", operands[0], tuple(operands[1:]), **frozen)

