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
    argv: tuple[str, ...], i: int, with_arg: set[str], long_with_arg: set[str] = frozenset()
) -> int:
    """Index of the first operand after options starting at ``i``."""
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            i += 2 if (name in long_with_arg and "=" not in a) else 1
            continue
        # clustered short options: -nu USER: the first option taking an argument ends the cluster
        for j, ch in enumerate(a[1:], start=1):
            if "-" + ch in with_arg:
                i += 1 if j < len(a) - 1 else 2
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


def _short_value(argv: tuple[str, ...], letter: str, with_arg: str = "", long_names: tuple[str, ...] = ()) -> str | None:
    """The value of option ``-letter`` wherever it stands: alone (``-c X``), at the end of a
    cluster (``-lc X``, ``-qc X``) or attached (``-cX``); or of a long form (``--command=X``)."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return None
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if name in long_names:
                return val if eq else (argv[i + 1] if i + 1 < len(argv) else None)
        elif a.startswith("-") and len(a) > 1:
            for j, ch in enumerate(a[1:], start=1):
                if ch == letter:
                    return a[j + 1 :] or (argv[i + 1] if i + 1 < len(argv) else None)
                if ch in with_arg:
                    if j == len(a) - 1:
                        i += 1  # its value is the next word
                    break
        i += 1
    return None


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


def _multicall(argv: tuple[str, ...]) -> Inner | None:
    """``busybox APPLET ARGS`` / ``toybox APPLET ARGS``: the applet runs."""
    i = _skip_opts(argv, 1, set())
    return Inner(basename(argv[0]), argv[i:]) if i < len(argv) and i == 1 else None


def _sudo(argv: tuple[str, ...]) -> Inner | None:
    with_arg = {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"}
    long_arg = {"--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role",
                "--type", "--other-user", "--command-timeout", "--chroot"}
    i = _skip_opts(argv, 1, with_arg, long_arg)
    cwd = _short_value(argv[:i], "D", with_arg="ughpCrtUTR", long_names=("--chdir",))
    env = {}
    while i < len(argv) and "=" in argv[i] and not argv[i].startswith("="):
        k, v = argv[i].split("=", 1)
        env[k] = v
        i += 1
    return Inner(basename(argv[0]), argv[i:], env=env, cwd=cwd) if i < len(argv) else None


def _su(argv: tuple[str, ...]) -> Inner | None:
    code = _short_value(argv, "c", with_arg="sgGw", long_names=("--command", "--session-command"))
    return Inner("su -c", shell=code) if code is not None else None


def _taskset(argv: tuple[str, ...]) -> Inner | None:
    """taskset [-c] [-a] MASK|LIST CMD…; with -p it acts on a pid and runs nothing."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if "p" in argv[i][1:] and not argv[i].startswith("--"):
            return None
        i += 1
    i += 1  # the mask or CPU list
    return Inner("taskset", argv[i:]) if i < len(argv) else None


def _timeout(argv: tuple[str, ...]) -> Inner | None:
    i = _skip_opts(argv, 1, {"-s", "-k"}, {"--signal", "--kill-after"})
    i += 1  # the duration
    return Inner("timeout", argv[i:]) if i < len(argv) else None


def _flock(argv: tuple[str, ...]) -> Inner | None:
    code = _short_value(argv, "c", with_arg="wE", long_names=("--command",))
    if code is not None:
        return Inner("flock -c", shell=code)
    i = _skip_opts(argv, 1, {"-w", "-E"}, {"--timeout", "--conflict-exit-code"})
    i += 1  # the lock file
    return Inner("flock", argv[i:]) if i < len(argv) else None


def _watch(argv: tuple[str, ...]) -> Inner | None:
    i = _skip_opts(argv, 1, {"-n", "-q"}, {"--interval", "--equexit"})
    rest = argv[i:]
    if not rest:
        return None
    if any(a in ("-x", "--exec") for a in argv[1:i]):
        return Inner("watch", rest)
    return Inner("watch", shell=" ".join(rest))


def _script(argv: tuple[str, ...]) -> Inner | None:
    code = _short_value(argv, "c", with_arg="ETIOBmo", long_names=("--command",))
    return Inner("script -c", shell=code) if code is not None else None


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


def _runner(via: str, skip: int = 2, with_arg: set[str] = frozenset(), long_arg: set[str] = frozenset()):
    """``uv run``, ``poetry run`` …: the command follows the sub-command and its options."""

    def h(argv: tuple[str, ...]) -> Inner | None:
        if len(argv) < skip or argv[skip - 1] != "run":
            return None
        i = _skip_opts(argv, skip, set(with_arg), set(long_arg))
        return Inner(via, argv[i:]) if i < len(argv) else None

    return h


def _npm_exec(argv: tuple[str, ...]) -> Inner | None:
    """``npx -c CMD``, ``npm exec -c CMD`` (a shell line), ``npm exec -- CMD``, ``npx CMD``,
    ``pnpm exec CMD``, ``pnpm dlx CMD``, ``yarn exec CMD``, ``bunx CMD``: CMD runs."""
    prog = basename(argv[0])
    i = 1
    if prog in ("npm", "pnpm", "yarn", "bun"):
        if len(argv) < 2 or argv[1] not in ("exec", "x", "dlx"):
            return None
        i = 2
    via = f"{prog} {argv[1]}" if i == 2 else prog
    with_arg = {"-p", "--package", "-w", "--workspace", "--call", "-c", "--filter", "-C", "--dir"}
    while i < len(argv):
        a = argv[i]
        if a in ("-c", "--call") and i + 1 < len(argv):
            return Inner(f"{via} -c", shell=argv[i + 1])
        if a.startswith("--call="):
            return Inner(f"{via} -c", shell=a.split("=", 1)[1])
        if a == "--":
            i += 1
            break
        if not a.startswith("-"):
            break
        i += 2 if (a in with_arg and "=" not in a) else 1
    return Inner(via, argv[i:]) if i < len(argv) else None


def _tool_runner(via: str, sub: str | None, with_arg: set[str]):
    """``uvx [--from P] CMD``, ``pipx run [--spec P] CMD``: the named command runs."""

    def h(argv: tuple[str, ...]) -> Inner | None:
        start = 1
        if sub is not None:
            if argv[1:2] != (sub,):
                return None
            start = 2
        i = _skip_opts(argv, start, with_arg, with_arg)
        return Inner(via, argv[i:]) if i < len(argv) else None

    return h


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


WRAPPERS: dict[str, Callable[[tuple[str, ...]], Inner | None]] = {
    "npx": _npm_exec,
    "npm": _npm_exec,
    "pnpm": _npm_exec,
    "yarn": _npm_exec,
    "bun": _npm_exec,
    "bunx": _npm_exec,
    "uvx": _tool_runner("uvx", None, {"--from", "--with", "--python", "-p", "--index-url"}),
    "pipx": _tool_runner("pipx run", "run", {"--spec", "--python", "--index-url", "--pip-args"}),
    "strace": _simple("strace", {"-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X"}),
    "ltrace": _simple("ltrace", {"-e", "-o", "-p", "-s", "-u", "-n", "-a", "-A", "-D", "-F", "-l", "-x"}),
    "ssh-agent": _simple("ssh-agent", {"-a", "-E", "-t", "-P", "-O"}),
    "tmux": _tmux,
    "screen": _screen,
    "command": _command,
    "builtin": _simple("builtin"),
    "exec": _exec,
    "busybox": _multicall,
    "toybox": _multicall,
    "env": _env,
    "sudo": _sudo,
    "doas": _sudo,
    "su": _su,
    "nice": _simple("nice", {"-n"}, {"--adjustment"}),
    "nohup": _simple("nohup"),
    "timeout": _timeout,
    "gtimeout": _timeout,
    "time": _simple("time", {"-f", "-o"}, {"--format", "--output"}),
    "stdbuf": _simple("stdbuf", {"-i", "-o", "-e"}, {"--input", "--output", "--error"}),
    "setsid": _simple("setsid"),
    "flock": _flock,
    "ionice": _simple("ionice", {"-c", "-n", "-p"}, {"--class", "--classdata"}),
    "taskset": _taskset,
    "chronic": _simple("chronic"),
    "unbuffer": _simple("unbuffer"),
    "caffeinate": _simple("caffeinate", {"-t", "-w"}),
    "xvfb-run": _simple("xvfb-run", {"-n", "-s", "-e", "-f", "-p"}, {"--server-args", "--server-num"}),
    "watch": _watch,
    "script": _script,
    "xargs": _xargs,
    "parallel": _parallel,
    "find": _find,
    "uv": _runner("uv run", with_arg={"--with", "--python", "-p", "--project", "--directory", "--env-file", "--group", "--extra"},
                  long_arg={"--with", "--python", "--project", "--directory", "--env-file", "--group", "--extra", "--package", "--index-url"}),
    "poetry": _runner("poetry run"),
    "pipenv": _runner("pipenv run"),
    "pdm": _runner("pdm run"),
    "hatch": _runner("hatch run"),
    "rye": _runner("rye run"),
    "conda": _runner("conda run", with_arg={"-n", "-p"}, long_arg={"--name", "--prefix"}),
}

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "yash", "busybox", "rbash", "guard-shell"})


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


def from_spec(name: str, runs: Mapping[str, Any]) -> Callable[[tuple[str, ...]], Inner | None]:
    """The handler a program spec's ``runs:`` describes (rules/programs/*.yaml), for a program
    that runs a command given on its own command line:

    - ``subcommands``: it runs one only after one of these words (``perf record``);
    - ``with_value``: its options that take the next word (or ``=VALUE``) before the command;
    - ``operands``: how many operands come before the command (``chrt PRIORITY CMD``);
    - ``command_option``: the command follows this option, to the end or to ``;`` (``fd -x``);
    - ``shell_option``: this option's value is a shell command line (``sg GROUP -c 'CMD'``);
    - ``cwd_option``: this option's value is the folder the command runs in;
    - ``whole_word_options``: an option is one word, never a cluster of letters (PowerShell's
      ``-NoProfile``), and one named in ``with_value`` takes the next word.

    Nothing here runs the program; the handler only reads its argv.
    """
    via = str(runs.get("via") or name)
    subs = tuple(runs.get("subcommands") or ())
    with_value = {str(o) for o in runs.get("with_value") or () if not str(o).startswith("--")}
    long_value = {str(o) for o in runs.get("with_value") or () if str(o).startswith("--")}
    operands = int(runs.get("operands") or 0)
    command_option = tuple(runs.get("command_option") or ())
    shell_option = tuple(runs.get("shell_option") or ())
    cwd_option = tuple(runs.get("cwd_option") or ())
    takes = with_value | long_value | set(shell_option) | set(cwd_option)
    words = bool(runs.get("whole_word_options"))
    short_takes = {o for o in takes if not o.startswith("--")}
    long_takes = {o for o in takes if o.startswith("--")}

    def value_of(argv: tuple[str, ...], names: tuple[str, ...]) -> str | None:
        for k, a in enumerate(argv):
            for n in names:
                if a == n:
                    return argv[k + 1] if k + 1 < len(argv) else None
                if n.startswith("--") and a.startswith(n + "="):
                    return a[len(n) + 1:]
                if not n.startswith("--") and a.startswith(n) and len(a) > len(n):
                    return a[len(n):]
        return None

    def handler(argv: tuple[str, ...]) -> Inner | None:
        start = 1
        if subs:
            if len(argv) < 2 or argv[1] not in subs:
                return None
            start = 2
        if command_option:
            for k in range(start, len(argv)):
                if argv[k] in command_option:
                    end = k + 1
                    while end < len(argv) and argv[end] != ";":
                        end += 1
                    # each match's path stands where {} (and fd's {/}, {//}, {.}, {/.}) is written
                    inner = tuple(_PLACEHOLDER.sub("./" + UNKNOWN, a) for a in argv[k + 1:end])
                    return Inner(f"{via} {argv[k]}", inner, keep_outer=True) if inner else None
            return None
        i = _skip_words(argv, start, takes) if words else _skip_opts(argv, start, short_takes, long_takes)
        cwd = value_of(argv[:i], cwd_option) if cwd_option else None
        code = value_of(argv[:i], shell_option) if shell_option else None
        if code is not None:
            return Inner(f"{via} {shell_option[0]}", shell=code, cwd=cwd)
        i += operands
        if shell_option and i < len(argv):  # the option may come after the operands (sg GROUP -c CMD)
            rest = argv[i - operands:]
            code = value_of(rest, shell_option)
            if code is not None:
                return Inner(f"{via} {shell_option[0]}", shell=code, cwd=cwd)
        return Inner(via, argv[i:], cwd=cwd) if i < len(argv) else None

    return handler
