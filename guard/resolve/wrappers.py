"""Programs that run another program: strip their options and say what runs inside.

Each handler takes the argv (static strings) and returns an ``Inner`` or None when no command
follows (``env`` alone prints the environment, ``command -v git`` runs nothing).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guard.ir import UNKNOWN
from guard.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


@dataclass(frozen=True, slots=True)
class Inner:
    via: str
    argv: tuple[str, ...] = ()
    shell: str | None = None  # a string the wrapper hands to a shell
    env: dict[str, str | None] = field(default_factory=dict)
    cwd: str | None = None
    keep_outer: bool = False  # the wrapper is a program in its own right (find, xargs)


def basename(prog: str) -> str:
    name = prog.rsplit("/", 1)[-1] if "/" in prog else prog
    if name[-4:].lower() == ".exe":  # lower() of the last four characters, not the whole name
        name = name[:-4]
    return name


def _skip_opts(
    argv: tuple[str, ...], i: int, with_arg: set[str], long_with_arg: set[str] = frozenset(),
    counts: Mapping[str, int] | None = None,
) -> int:
    """Index of the first operand after options starting at ``i``; an option in ``counts`` takes
    that many words (bwrap --bind SRC DEST), not one."""
    counts = counts or {}
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            i += 1 + counts.get(name, 1) if (name in long_with_arg and "=" not in a) else 1
            continue
        # clustered short options: -nu USER: the first option taking an argument ends the cluster
        for j, ch in enumerate(a[1:], start=1):
            if "-" + ch in with_arg:
                i += 1 if j < len(a) - 1 else 1 + counts.get("-" + ch, 1)
                break
        else:
            i += 1
    return i


def _simple(via: str, with_arg: set[str] = frozenset(), long_with_arg: set[str] = frozenset()):
    def h(argv: tuple[str, ...]) -> Inner | None:
        i = _skip_opts(argv, 1, set(with_arg), set(long_with_arg))
        return Inner(via, argv[i:]) if i < len(argv) else None

    return h


def _env(argv: tuple[str, ...]) -> Inner | None:
    i, env, cwd = 1, {}, None
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            takes = name in ("--unset", "--chdir", "--split-string")
            if takes and not eq:
                val = argv[i + 1] if i + 1 < len(argv) else ""
                i += 1
            i += 1
            if name == "--unset":
                env[val] = None
            elif name == "--chdir":
                cwd = val
            elif name == "--split-string":
                return Inner("env -S", shell=" ".join([val, *map(_q, argv[i:])]), env=env, cwd=cwd)
            continue
        if a.startswith("-") and a != "-":
            # a cluster of short options: -i, -0, -v take nothing; -u, -C, -S take the rest of
            # the word or the next word (-iS "git push", -C/tmp)
            i += 1
            for j, ch in enumerate(a[1:], start=1):
                if ch in "uCS":
                    val = a[j + 1 :]
                    if not val:
                        val = argv[i] if i < len(argv) else ""
                        i += 1
                    if ch == "u":
                        env[val] = None
                    elif ch == "C":
                        cwd = val
                    else:
                        return Inner("env -S", shell=" ".join([val, *map(_q, argv[i:])]), env=env, cwd=cwd)
                    break
            continue
        if a == "-":
            i += 1
        elif "=" in a and not a.startswith("="):
            k, v = a.split("=", 1)
            env[k] = v
            i += 1
        else:
            break
    if i >= len(argv):
        return None
    return Inner("env", argv[i:], env=env, cwd=cwd)


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _command(argv: tuple[str, ...]) -> Inner | None:
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        if any(c in argv[i] for c in "vV"):
            return None  # command -v X: a lookup, runs nothing
        i += 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    return Inner("command", argv[i:]) if i < len(argv) else None


# Names a multi-call binary answers to when started with that argv[0]: Claude Code's shell snapshot
# shadows grep and find with functions running its own executable as ugrep and bfs.
ARGV0_PERSONAS = frozenset({"ugrep", "ug", "bfs", "grep", "egrep", "fgrep", "find", "rg"})


def _exec(argv: tuple[str, ...]) -> Inner | None:
    i = _skip_opts(argv, 1, {"-a"})
    if i >= len(argv):
        return None
    name = next((argv[k + 1] for k in range(1, i - 1) if argv[k] == "-a"), None)
    if name and basename(argv[i]) == "git" and basename(name).startswith("git-"):
        return Inner("exec -a", (name, *argv[i + 1:]))  # git dispatches on a dashed argv[0]
    if name and basename(name) in ARGV0_PERSONAS:
        return Inner("exec -a", (name, *argv[i + 1:]))  # a multi-call binary, run as that program
    return Inner("exec", argv[i:])


def _xargs(argv: tuple[str, ...]) -> Inner | None:
    with_arg = {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "-e"}
    long_arg = {"--arg-file", "--delimiter", "--eof", "--max-lines", "--max-args", "--max-procs",
                "--max-chars", "--process-slot-var"}
    repl = None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-"):
            break
        if a == "-I" and i + 1 < len(argv):
            repl = argv[i + 1]
        elif a.startswith("-I") and len(a) > 2:
            repl = a[2:]
        elif a.startswith("--replace"):
            repl = a.split("=", 1)[1] if "=" in a else "{}"
        elif a == "-i":
            repl = "{}"
        i = _skip_one(argv, i, with_arg, long_arg)
    inner = argv[i:] or ("echo",)
    if repl:
        inner = tuple(a.replace(repl, UNKNOWN) for a in inner)
    else:
        inner = (*inner, UNKNOWN)
    return Inner("xargs", inner, keep_outer=True)


def _skip_one(argv: tuple[str, ...], i: int, with_arg: set[str], long_arg: set[str]) -> int:
    a = argv[i]
    if a.startswith("--"):
        return i + (2 if a.split("=", 1)[0] in long_arg and "=" not in a else 1)
    if a[:2] in with_arg and len(a) == 2:
        return i + 2
    return i + 1


def _parallel(argv: tuple[str, ...]) -> Inner | None:
    with_arg = {"-j", "-S", "-a", "-d", "-I", "-n", "-N", "-L", "-P", "-E"}
    long_arg = {"--jobs", "--sshlogin", "--arg-file", "--delimiter", "--colsep", "--max-args",
                "--workdir", "--results", "--joblog", "--tmpdir", "--timeout", "--delay"}
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in (":::", "::::"):
        i = _skip_one(argv, i, with_arg, long_arg)
    cmd: list[str] = []
    while i < len(argv) and argv[i] not in (":::", "::::", ":::+"):
        cmd.append(argv[i])
        i += 1
    args = [a for a in argv[i + 1 :] if a not in (":::", "::::", ":::+")] if i < len(argv) else []
    if not cmd:
        return None
    fill = args[0] if args and ":::" in argv else UNKNOWN
    text = " ".join(cmd)
    text = text.replace("{}", fill) if "{}" in text else f"{text} {fill if fill != UNKNOWN else ''}".strip()
    return Inner("parallel", shell=text, keep_outer=True)


def _find(argv: tuple[str, ...]) -> Inner | None:
    # start points: operands before the first expression token
    starts: list[str] = []
    i = 1
    while i < len(argv) and (argv[i] in ("-H", "-L", "-P") or argv[i].startswith("-O")):
        i += 1
    while i < len(argv) and not argv[i].startswith("-") and argv[i] not in ("(", "!", ")", ","):
        starts.append(argv[i])
        i += 1
    for j in range(i, len(argv)):
        if argv[j] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = j + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            inner = argv[j + 1 : end]
            if not inner:
                return None
            base = starts[0] if starts else "."
            found = base.rstrip("/") + "/" + UNKNOWN
            if argv[j] in ("-exec", "-ok"):
                return Inner("find " + argv[j], tuple(a.replace("{}", found) for a in inner), keep_outer=True)
            # -execdir runs in the directory of each match, somewhere under the start point
            inner = tuple(a.replace("{}", "./" + UNKNOWN) for a in inner)
            return Inner("find " + argv[j], inner, keep_outer=True, cwd=found)
    return None


def _tmux(argv: tuple[str, ...]) -> Inner | None:
    """``tmux new-session -d 'CMD'`` (and new-window, split-window, respawn-pane) runs CMD in a
    shell; ``tmux send-keys 'CMD' Enter`` types it into one."""
    i = _skip_opts(argv, 1, {"-L", "-S", "-f", "-T"})
    if i >= len(argv):
        return None
    sub = argv[i]
    if sub in ("new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp",
               "respawn-window", "respawnw"):
        j = _skip_opts(argv, i + 1, {"-c", "-e", "-F", "-n", "-s", "-t", "-x", "-y", "-l", "-f"})
        rest = argv[j:]
        if not rest:
            return None
        return Inner(f"tmux {sub}", shell=rest[0] if len(rest) == 1 else " ".join(_q(a) for a in rest))
    if sub in ("send-keys", "send"):
        j = _skip_opts(argv, i + 1, {"-t", "-N"})
        typed = []
        for k in argv[j:]:
            typed.append("\n" if k in ("Enter", "C-m", "KPEnter") else k)
        text = "".join(t if t == "\n" else t + ("" if t.endswith(" ") else " ") for t in typed)
        return Inner("tmux send-keys", shell=text) if text.strip() else None
    return None


def _screen(argv: tuple[str, ...]) -> Inner | None:
    """``screen -dm CMD ARGS``, ``screen -S s -X stuff 'CMD\n'``: CMD runs."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-X" and i + 2 < len(argv) and argv[i + 1] == "stuff":
            typed = argv[i + 2].replace("\\r", "\n").replace("\\n", "\n").replace("^M", "\n")
            return Inner("screen stuff", shell=typed)
        if a in ("-S", "-c", "-e", "-h", "-p", "-T", "-t", "-s", "-Logfile", "-r", "-x", "-X") or (
                len(a) > 2 and a[0] == "-" and a[-1] in "ScehpTts"):
            i += 2
            continue
        if not a.startswith("-"):
            return Inner("screen", argv[i:])
        i += 1
    return None


# The wrappers that need code, not a catalogue entry (rules/programs/runners.yaml holds the rest):
# bash's own builtins, which run in this shell (command -v runs nothing; exec -a renames what
# runs); env, whose -S splits a string into words and whose -u/-C change the environment and the
# folder; tmux and screen, which type keys (Enter, C-m, ^M) into a shell; xargs and parallel,
# which fill the command from their input or ::: lists; find, whose {} is a path under its start
# points and whose -execdir runs in each match's folder.
WRAPPERS: dict[str, Callable[[tuple[str, ...]], Inner | None]] = {
    "tmux": _tmux,
    "screen": _screen,
    "command": _command,
    "builtin": _simple("builtin"),
    "exec": _exec,
    "env": _env,
    "xargs": _xargs,
    "parallel": _parallel,
    "find": _find,
}

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ksh93", "pdksh", "oksh", "lksh", "ash", "mksh", "posh", "yash",
                    "busybox", "rbash", "guard-shell"})


# --------------------------------------------------------------------------- the catalogue


def _skip_words(argv: tuple[str, ...], i: int, takes: set[str]) -> int:
    """Index of the first operand after whole-word options starting at ``i`` (``-NoProfile``)."""
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        i += 2 if (a in takes and ":" not in a) else 1
    return i


_PLACEHOLDER = re.compile(r"\{(?:/|//|\.|/\.)?\}")


def _option_value(words: tuple[str, ...], names: tuple[str, ...], takes: set[str],
                  counts: Mapping[str, int] | None = None) -> str | None:
    """The value of the first of the options ``names`` in ``words``, as getopt reads them, up to
    ``--``: ``-c X``, ``-cX``, at the end of a cluster (``-lc X``: letters before it that take
    no value), ``--command X`` or ``--command=X``. Options in ``takes`` hide their value."""
    letters = {n[1] for n in names if len(n) == 2 and n[0] == "-" and n[1] != "-"}
    i = 0
    while i < len(words):
        a = words[i]
        if a == "--":
            return None
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if name in names:
                return val if eq else (words[i + 1] if i + 1 < len(words) else None)
            i += 1 + (counts or {}).get(name, 1) if (name in takes and not eq) else 1
            continue
        if a.startswith("-") and len(a) > 1:
            for j, ch in enumerate(a[1:], start=1):
                if ch in letters:
                    return a[j + 1 :] or (words[i + 1] if i + 1 < len(words) else None)
                if "-" + ch in takes:
                    i += 1 if j < len(a) - 1 else 0  # its value is the rest, or the next word
                    break
        i += 1
    return None


def _given(words: tuple[str, ...], names: tuple[str, ...]) -> bool:
    """Whether one of the options ``names`` is among ``words`` (alone or in a cluster)."""
    letters = {n[1] for n in names if len(n) == 2 and n[0] == "-" and n[1] != "-"}
    for a in words:
        if a.startswith("--"):
            if a.split("=", 1)[0] in names:
                return True
        elif a.startswith("-") and any(ch in letters for ch in a[1:]):
            return True
    return False


def from_spec(name: str, runs: Mapping[str, Any]) -> Callable[[tuple[str, ...]], Inner | None]:
    """The handler a program spec's ``runs:`` describes (rules/programs/*.yaml), for a program
    that runs a command given on its own command line:

    - ``subcommands``: it runs one only after one of these words (``perf record``, ``uv run``);
      the via chain then names both (``uv run``) unless ``via`` says otherwise;
    - ``with_value``: its options that take the next word (or ``=VALUE``) before the command;
    - ``operands``: how many operands come before the command (``chrt PRIORITY CMD``); options
      may follow them too (``flock FILE -c CMD``), or follow ``shell_option_after`` operands
      (``runuser USER -c CMD``, where ``runuser -u USER CMD`` has none);
    - ``command_option``: the command follows this option, to the end or to ``;`` (``fd -x``);
    - ``shell_option``: this option's value is a shell command line (``sg GROUP -c 'CMD'``);
    - ``runs_operands: false``: only the shell option runs a command, found anywhere before
      ``--`` (``su USER -c CMD``, ``script -c CMD FILE``); the operands are not one;
    - ``shell_line``: the words after the options are joined into one shell line (``watch``),
      unless one of the ``argv_option`` options is given (``watch -x``);
    - ``no_command``: with one of these options it runs nothing (``taskset -p``);
    - ``assignments``: ``NAME=VALUE`` words before the command are its environment (``sudo``);
    - ``cwd_option``: this option's value is the folder the command runs in;
    - ``cwd_operand``: the folder the command runs in is this operand (1: the first; chroot
      NEWROOT CMD runs CMD at the new root), unless one of ``keep_cwd`` is given;
    - ``with_values``: options that take more than one word (bwrap ``--bind SRC DEST``: 2);
    - ``shell_line_option``: with one of these the words after the options are one shell line
      (``entr -s``), as ``shell_line`` makes them always;
    - ``whole_word_options``: an option is one word, never a cluster of letters (PowerShell's
      ``-NoProfile``), and one named in ``with_value`` takes the next word.

    Nothing here runs the program; the handler only reads its argv.
    """
    via = str(runs.get("via") or name)
    subs = tuple(runs.get("subcommands") or ())
    with_value = {str(o) for o in runs.get("with_value") or () if not str(o).startswith("--")}
    long_value = {str(o) for o in runs.get("with_value") or () if str(o).startswith("--")}
    operands = int(runs.get("operands") or 0)
    shell_after = int(runs.get("shell_option_after") or operands)
    command_option = tuple(runs.get("command_option") or ())
    shell_option = tuple(runs.get("shell_option") or ())
    cwd_option = tuple(runs.get("cwd_option") or ())
    no_command = tuple(runs.get("no_command") or ())
    argv_option = tuple(runs.get("argv_option") or ())
    runs_operands = runs.get("runs_operands") is not False
    shell_line = bool(runs.get("shell_line"))
    assignments = bool(runs.get("assignments"))
    counts = {str(k): int(v) for k, v in (runs.get("with_values") or {}).items()}
    cwd_operand = int(runs.get("cwd_operand") or 0)
    keep_cwd = tuple(runs.get("keep_cwd") or ())
    shell_line_option = tuple(runs.get("shell_line_option") or ())
    bad = [f"{k}: {v}" for k, v in counts.items() if not k.startswith("-") or not 2 <= v <= 4]
    if bad:
        raise ValueError(f"with_values takes options and counts from 2 to 4, not {', '.join(bad)}")
    if cwd_operand > operands:
        raise ValueError(f"cwd_operand {cwd_operand} is not one of its {operands} operands")
    with_value |= {o for o in counts if not o.startswith("--")}
    long_value |= {o for o in counts if o.startswith("--")}
    takes = with_value | long_value | set(shell_option) | set(cwd_option)
    words = bool(runs.get("whole_word_options"))
    short_takes = {o for o in takes if not o.startswith("--")}
    long_takes = {o for o in takes if o.startswith("--")}

    def value_of(argv: tuple[str, ...], names: tuple[str, ...]) -> str | None:
        if not words:
            return _option_value(argv, names, takes, counts)
        for k, a in enumerate(argv):
            for n in names:
                if a == n:
                    return argv[k + 1] if k + 1 < len(argv) else None
                if n.startswith("--") and a.startswith(n + "="):
                    return a[len(n) + 1:]
                if not n.startswith("--") and a.startswith(n) and len(a) > len(n):
                    return a[len(n):]
        return None

    def skip(argv: tuple[str, ...], i: int) -> int:
        return _skip_words(argv, i, takes) if words else _skip_opts(argv, i, short_takes, long_takes, counts)

    def handler(argv: tuple[str, ...]) -> Inner | None:
        start, label = 1, via
        if subs:
            if len(argv) < 2 or argv[1] not in subs:
                return None
            start = 2
            label = via if runs.get("via") else f"{name} {argv[1]}"
        if command_option:
            for k in range(start, len(argv)):
                if argv[k] in command_option:
                    end = k + 1
                    while end < len(argv) and argv[end] != ";":
                        end += 1
                    # each match's path stands where {} (and fd's {/}, {//}, {.}, {/.}) is written
                    inner = tuple(_PLACEHOLDER.sub("./" + UNKNOWN, a) for a in argv[k + 1:end])
                    return Inner(f"{label} {argv[k]}", inner, keep_outer=True) if inner else None
            return None
        if not runs_operands:
            code = value_of(argv[start:], shell_option)
            return Inner(f"{label} {shell_option[0]}", shell=code) if code is not None else None
        i = skip(argv, start)
        if no_command and _given(argv[start:i], no_command):
            return None
        cwd = value_of(argv[:i], cwd_option) if cwd_option else None
        code = value_of(argv[start:i], shell_option) if shell_option else None
        if code is None and shell_option and shell_after and i + shell_after < len(argv):
            # options after the operands (sg GROUP -c CMD, flock FILE -c CMD, runuser USER -c CMD)
            after = skip(argv, i + shell_after)
            code = value_of(argv[i + shell_after:after], shell_option)
        if code is not None:
            return Inner(f"{label} {shell_option[0]}", shell=code, cwd=cwd)
        if cwd_operand and cwd_operand <= operands and i + cwd_operand <= len(argv) \
                and not _given(argv[start:i], keep_cwd):
            cwd = argv[i + cwd_operand - 1]
        i += operands
        env: dict[str, str | None] = {}
        while assignments and i < len(argv) and "=" in argv[i] and not argv[i].startswith("="):
            k, v = argv[i].split("=", 1)
            env[k] = v
            i += 1
        if i >= len(argv):
            return None
        if (shell_line and not _given(argv[start:i], argv_option)) or _given(argv[start:i], shell_line_option):
            return Inner(label, shell=" ".join(argv[i:]), env=env, cwd=cwd)
        return Inner(label, argv[i:], env=env, cwd=cwd)

    return handler
