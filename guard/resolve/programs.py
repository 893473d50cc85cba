"""What a program does with its argv once the argv is known: wrappers run another program, shells
and ``eval`` run code, interpreters run inline programs, scripts run their contents."""

from __future__ import annotations

import os
import re
import shlex
from functools import lru_cache

import guard.resolve.files as files
import guard.resolve.sourced as sourced
from guard.ir import ENV_READ, HTTP, KIND_NAMES, UNKNOWN, Invocation
from guard.resolve import paths
from guard.resolve.inline import analyze_inline  # not an import per command
from guard.resolve.inline.launch import interpreter, source_of
from guard.resolve.projects import parse_makefile, shell_calls
from guard.resolve.sedscript import sed_commands
from guard.resolve.state import Call, Frame, State
from guard.resolve.state import home_of as _home
from guard.resolve.words import PROCSUB_PATH as FAKE_PROCSUB
from guard.resolve.wrappers import SHELLS, WRAPPERS, Inner, basename, from_spec

TYPE_CHECKING = False  # typing costs ~2-7 ms to import on the command path

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from guard.context import Context
    from guard.resolve.state import Walker

SCRIPT_CAP = 512 * 1024


def run(w: Walker, call: Call) -> tuple[str, ...] | None:
    """Unwrap ``call``'s argv, follow what it runs, and emit the invocations. Returns the final argv.

    Each emit passes the basename of ``argv[0]`` already taken here as the program.
    """
    argv, st, fr, env, stdin, writes, refs, pos = (call.argv, call.st, call.fr, call.env, call.stdin, call.writes,
                                                   call.refs, call.pos)
    cwd = call.cwd or st.cwd
    name = argv[0] if argv else ""
    if "/" not in name and not st.fx.renamed and name not in st.hashed:
        plain = plain_name(name, w.ctx)
        if plain:
            # most commands (ls, cat, grep, pytest): a name nothing below would act on, run as it is
            w.emit(call, plain)
            return argv
    env = dict(env)
    for _ in range(16):
        if not argv:
            return None
        renamed = identity(argv, st, cwd, env)
        if renamed is not None:
            argv, label = renamed
            fr = Frame(fr.via + (label,), fr.depth, fr.lang)
        prog = basename(argv[0])
        handler = WRAPPERS.get(prog) or (_catalogued(prog, w.ctx.runs) if prog in w.ctx.runs else None)
        inner = handler(argv) if handler else None
        if inner is None:
            break  # ``prog`` names what runs
        if inner.keep_outer:
            w.emit(Call(argv, st, fr, env, stdin, writes, refs, pos, cwd), prog)
        env.update(inner.env)
        if inner.cwd:
            cwd = paths.real(paths.join(cwd, inner.cwd, _home(st)))
        if inner.shell is not None:
            sub = _child(st, cwd, env)
            spec = w.ctx.runs.get(prog)
            w.string(inner.shell, sub, fr, inner.via, stdin, prog if spec is not None and "assigns" in spec else "sh")
            return None
        fr = Frame(fr.via + (inner.via,), fr.depth, fr.lang)
        argv = _feed_xargs(inner.argv, stdin) if inner.via == "xargs" and stdin is not None else inner.argv
    else:
        prog = basename(argv[0])  # sixteen wrappers deep: what the last one runs
    if prog in SHELLS and _shell(w, argv, st, fr, cwd, env, stdin):
        return argv
    if prog == "eval":
        w.string(" ".join(argv[1:]), st, fr, "eval")
        return argv
    if prog == "trap":
        _trap(w, argv, st, fr)
    elif prog in ("mapfile", "readarray"):
        _mapfile_callback(w, argv, st, fr)
    if prog == "curl" and any(a in ("-K", "--config") or a.startswith(("--config=", "-K")) for a in argv[1:]):
        argv = curl_config(argv, st, cwd, stdin)
    if prog in _READS_COMMANDS:
        for label, code in commands_read(argv, st, cwd, stdin):
            w.string(code, _child(st, cwd, env), fr, label)
    if prog in ("source", ".") and len(argv) > 1:
        text, why = read_script(argv[1], st, cwd, stdin, w.fds_used)
        if text is None:
            w.sink.note(f"{prog} {_show(argv[1])}: {why}, not analysed")
        else:
            sourced.source(w, text, st, fr, f"{prog} {_show(argv[1])}")
        return argv
    for label, code in embedded_commands(argv, stdin):
        if code is None:
            w.sink.note(f"{label}: runs text built at run time, not analysed")
        else:
            w.string(code, _child(st, cwd, env), fr, label)
    if prog == "git" and _git_alias(w, Call(argv, st, fr, env, stdin, writes, refs, pos, cwd)):
        return argv
    if prog in w.ctx.recipes and _recipe_runner(w, argv, st, fr, cwd, env):
        w.emit(Call(argv, st, fr, env, stdin, writes, refs, pos, cwd), prog)
        return argv
    if _interpreter(w, argv, st, fr, cwd, env, stdin):
        w.emit(Call(argv, st, fr, env, stdin, writes, refs, pos, cwd), prog)
        return argv
    if "/" in argv[0] and _executable_script(w, argv, st, fr, cwd, env):
        return argv
    w.emit(Call(argv, st, fr, env, stdin, writes, refs, pos, cwd), prog)
    return argv


def _catalogued(prog: str, runs: Mapping[str, Mapping[str, object]]) -> Callable[[tuple[str, ...]], Inner | None]:
    """The handler the catalogue describes for ``prog`` (``wrappers.from_spec``), made once per
    spec: a rule set keeps its specs while it is current."""
    spec = runs[prog]
    got = _CATALOGUED.get(prog)
    if got is None or got[0] is not spec:
        if len(_CATALOGUED) > 4096:
            _CATALOGUED.clear()
        got = _CATALOGUED[prog] = (spec, from_spec(prog, spec))
    return got[1]


_CATALOGUED: dict[str, tuple[object, Callable[[tuple[str, ...]], Inner | None]]] = {}


# Programs whose identity matters when they are copied, linked or found under another name.
NAMED = frozenset({"git", "gh", "curl", "wget", "scalar", *SHELLS, "python", "python3", "node", "perl", "ruby", "php"})

# Every name ``run`` acts on by name, beyond emitting the invocation: the tables its branches
# test, and the names those branches compare with.
_ACTED_ON = frozenset({*NAMED, *WRAPPERS, *SHELLS, "eval", "trap", "mapfile", "readarray", "curl", "source", "."})


def plain_name(name: str, ctx: Context) -> str:
    """``_plain_name``, and no runner or interpreter of the catalogue ``ctx`` was filled from."""
    plain = _plain_name(name)
    if plain and (plain in ctx.runs or plain in ctx.recipes or interpreter(plain, ctx.interpreters) is not None):
        return ""
    return plain


@lru_cache(maxsize=4096)
def _plain_name(name: str) -> str:
    """The program's basename when ``run`` does nothing for a program of this name (written
    without a ``/``, with no ``hash`` or copy of a program earlier in the command) but emit it:
    no wrapper, shell, interpreter, git program, project runner, or program that runs commands
    from its options or its input; else "". Asked per name once (every corpus command's
    programs are a few hundred names), and the basename with it, which the emit needs."""
    base = basename(name)
    if not base or base.startswith("git-") or base in _ACTED_ON or base in _READS_COMMANDS or base in _RUNS_PROGRAMS:
        return ""
    return base
_PROC_EXE = re.compile(r"^/proc/(?:self|\d+|" + UNKNOWN + r")/exe$")


def identity(argv: tuple[str, ...], st: State, cwd: str, env: dict[str, str | None]) -> tuple[tuple[str, ...], str] | None:
    """The program that really runs when ``argv[0]`` names it under another name: git's dashed
    programs (``git-push``, ``/usr/lib/git-core/git-push``: git dispatches on them), a copy or
    link of git or a shell made earlier in the command (also found through ``PATH``), a symlink
    on disk, ``/proc/self/exe`` (the shell itself). Returns the new argv and the via label."""
    name = argv[0]
    base = basename(name)
    if base.startswith("git-") and len(base) > 4 and UNKNOWN not in base[4:]:
        return ("git", base[4:], *argv[1:]), base
    if base == "scalar" and argv[1:2] == ("clone",):
        return ("git", *argv[1:]), "scalar clone"  # a clone with its .git, under DIR/src
    if base in NAMED or not name:
        return None
    full = None
    if "/" not in name and name in st.hashed:
        name = st.hashed[name]  # hash -p /usr/bin/git g: g runs git
        if basename(name) in NAMED:
            return (basename(name), *argv[1:]), f"hash {argv[0]}"
    if "/" in name:
        full = paths.join(cwd, name, _home(st))
    elif st.fx.renamed:
        pathvar = env.get("PATH") if "PATH" in env else st.vars.get("PATH")
        for d in (pathvar.split(":") if isinstance(pathvar, str) else []):
            cand = paths.join(cwd, d or ".", _home(st)) .rstrip("/") + "/" + name
            if cand in st.fx.renamed:
                full = cand
                break
    if full is None:
        return None
    if full in st.fx.renamed:
        return (st.fx.renamed[full], *argv[1:]), f"{st.fx.renamed[full]} as {_show(name)}"
    if _PROC_EXE.match(full):
        return ("bash", *argv[1:]), f"shell as {_show(name)}"
    if UNKNOWN not in full:
        real = basename(paths.real(full))
        if real in NAMED and real != base:
            return (real, *argv[1:]), f"{real} as {_show(name)}"
    return None


def archive_copy(left: Invocation, right: Invocation, home: str, ctx: Context) -> tuple[list[str], str] | None:
    """(sources, destination) when ``left | right`` copies files: tar create to stdout into tar
    extract from stdin, or find's start points into ``cpio -p DEST``."""
    lp, rp = left.program, right.program
    if _leaves_out_vcs(left.argv, ctx):
        return None  # what arrives is plain files: the repository's .git stays behind
    if lp == "tar" and rp == "tar":
        c, x = _tar(left.argv), _tar(right.argv)
        if c is None or x is None or c[0] != "c" or x[0] != "x" or c[1] != "-" or x[1] != "-":
            return None
        src_dir = paths.join(left.cwd, c[2], home) if c[2] else left.cwd
        dest = paths.real(paths.join(right.cwd, x[2], home)) if x[2] else right.cwd
        return [paths.join(src_dir, o, home) for o in c[3]], dest
    if lp == "find" and rp == "cpio":
        flags = [a for a in right.argv[1:] if a.startswith("-")]
        ops = [a for a in right.argv[1:] if not a.startswith("-")]
        if not any("p" in f[1:] for f in flags if not f.startswith("--")) and "--pass-through" not in flags or not ops:
            return None
        starts = [a for a in left.argv[1:] if not a.startswith("-") and not a.startswith(("(", "!"))][:1] or ["."]
        srcs = []
        for a in left.argv[1:]:
            if a.startswith("-") or a in ("(", "!"):
                break
            srcs.append(paths.join(left.cwd, a, home))
        return srcs or [paths.join(left.cwd, starts[0], home)], paths.real(paths.join(right.cwd, ops[-1], home))
    return None


def _leaves_out_vcs(argv: tuple[str, ...], ctx: Context) -> bool:
    """Whether the producing side of a copy leaves version-control folders out, as the program's
    catalogue entry says: an archiver's ``archive:`` (tar --exclude-vcs, --exclude=.git), or a
    ``finds:`` entry's pruned or negated .git test (find -name .git -prune)."""
    from guard.resolve import archives

    prog = basename(argv[0]) if argv else ""
    archive = ctx.archives.get(prog)
    if archive is not None:
        return archives.read(argv, archive).leaves_vcs
    finds = getattr(ctx.catalogue.get(prog), "finds", None)
    return finds is not None and bool(finds.leaves_vcs(argv[1:]))


def _tar(argv: tuple[str, ...]) -> tuple[str, str, str, list[str]] | None:
    """(mode c/x, archive file, -C dir, operands) of a tar command line."""
    mode = file = ""
    cdir = ""
    ops: list[str] = []
    i = 1
    first = True
    while i < len(argv):
        a = argv[i]
        val = argv[i + 1] if i + 1 < len(argv) else ""
        if a in ("--create", "--extract", "--get"):
            mode = "c" if a == "--create" else "x"
        elif a in ("-C", "--directory"):
            cdir, i = val, i + 1
        elif a.startswith("--directory="):
            cdir = a.split("=", 1)[1]
        elif a in ("--file",):
            file, i = val, i + 1
        elif a.startswith("--file="):
            file = a.split("=", 1)[1]
        elif a.startswith("--"):
            pass
        elif a.startswith("-") or (first and a[:1].isalpha() and set(a) <= set("cxtrufvzjJpPoOhkCaSWGmq")):
            letters = a.lstrip("-")
            for k, ch in enumerate(letters):
                if ch in "cx":
                    mode = ch
                elif ch == "f":
                    file = letters[k + 1:] or val
                    if not letters[k + 1:]:
                        i += 1
                    break
                elif ch == "C":
                    cdir = letters[k + 1:] or val
                    if not letters[k + 1:]:
                        i += 1
                    break
        else:
            ops.append(a)
        first = False
        i += 1
    if not mode:
        return None
    return mode, file or "-", cdir, ops


def remember_copies(argv: tuple[str, ...], st: State) -> None:
    """``cp /usr/bin/git /tmp/g``, ``ln -s $(which git) /tmp/bin/g``, ``install``, ``mv``: the
    destination runs the same program, so a later ``/tmp/g push`` is git push."""
    ops: list[str] = []
    target_dir = None
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-t", "--target-directory") and i + 1 < len(argv):
            target_dir = argv[i + 1]
            i += 2
            continue
        if a.startswith("--target-directory="):
            target_dir = a.split("=", 1)[1]
        elif a in ("-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix") and i + 1 < len(argv):
            i += 2
            continue
        elif not a.startswith("-") or a == "-":
            ops.append(a)
        i += 1
    if target_dir is None:
        if len(ops) < 2:
            return
        *sources, dest = ops
    else:
        sources, dest = ops, target_dir
    home = _home(st)
    dest_full = paths.join(st.cwd, dest, home)
    no_deref = any(a in ("-n", "-T", "--no-dereference", "--no-target-directory") or
                   (a.startswith("-") and not a.startswith("--") and set(a[1:]) & {"n", "T"}) for a in argv[1:])
    many = len(sources) > 1 or target_dir is not None or dest.endswith("/") or (
        os.path.isdir(dest_full) and not no_deref)
    symlink = basename(argv[0]) == "ln" and any(
        a == "--symbolic" or (a.startswith("-") and not a.startswith("--") and "s" in a[1:]) for a in argv[1:])
    for src in sources:
        if symlink and UNKNOWN not in dest_full:
            where = dest_full.rstrip("/") + "/" + basename(src) if many else dest_full
            target = paths.real(paths.join(where.rsplit("/", 1)[0] or "/", src, home)) if not src.startswith("/") else paths.real(src)
            if UNKNOWN not in target:
                st.fx.links[where] = target
        src_full = paths.join(st.cwd, src, home)
        ident = st.fx.renamed.get(src_full) or basename(src)
        if UNKNOWN in ident or ident not in NAMED:
            real = basename(paths.real(src_full)) if UNKNOWN not in src_full else ""
            if real not in NAMED:
                continue
            ident = real
        where = dest_full.rstrip("/") + "/" + basename(src) if many else dest_full
        if UNKNOWN not in where:
            st.fx.renamed[where] = ident


_READS_COMMANDS = frozenset({"at", "batch", "ed", "red", "ex", "vim", "vi", "nvim", "view", "make", "gmake"})
_EDITOR_SHELL = re.compile(r"^\s*:?\s*[.,$%'a-z0-9+-]*\s*(?:r|read|w|write)?\s*!(?!!)(.+)$")


def commands_read(argv: tuple[str, ...], st: State, cwd: str, stdin: str | None) -> list[tuple[str, str]]:
    """Shell code a program runs from what it reads: ``at``/``batch`` run their input (or
    ``-f FILE``), ``ed``/``ex``/``vim -es`` run ``!cmd`` lines (from stdin or ``-c``), and
    ``make -f -`` / ``make --eval`` run the recipes of the makefile text they are given."""
    prog = basename(argv[0])
    out: list[tuple[str, str]] = []
    if prog in ("at", "batch"):
        if any(a in ("-l", "-r", "-d", "-c", "-V") for a in argv[1:]):
            return out
        code = stdin
        for k, a in enumerate(argv[1:-1], start=1):
            if a == "-f":
                code = read_script(argv[k + 1], st, cwd, stdin)[0]
        if code:
            out.append((prog, code))
        return out
    if prog in ("make", "gmake"):
        texts: list[str] = []
        for k, a in enumerate(argv[1:], start=1):
            if a in ("-f", "--file", "--makefile") and argv[k + 1:k + 2] == ("-",) and stdin:
                texts.append(stdin)
            elif a.startswith("--eval="):
                texts.append(a.split("=", 1)[1])
            elif a == "--eval" and k + 1 < len(argv):
                texts.append(argv[k + 1])
        for text in texts:  # read as any makefile is: every rule's recipe may run, and every $(shell …)
            rules, _ = parse_makefile(text)
            out.extend((f"{prog} $(shell)", code) for code in shell_calls(text))
            out.extend((f"{prog} recipe", line.strip()) for _, recipe in rules.values() for _, line in recipe
                       if line.strip())
        return out
    lines: list[str] = []
    for k, a in enumerate(argv[1:], start=1):
        if (a == "-c" or (a[:1] == "-" and a[1:2] != "-" and a.endswith("c"))) and k + 1 < len(argv):
            lines.append(argv[k + 1])  # -c CMD, also clustered (ex -sc CMD)
        elif a.startswith("+") and len(a) > 1:
            lines.append(a[1:])
    scripted = prog in ("ed", "red", "ex") or any(a[:1] == "-" and a[1:2] != "-" and set(a[1:]) & set("esE")
                                                   for a in argv[1:])
    if scripted and stdin:
        lines.extend(stdin.split("\n"))
    for line in lines:
        out.extend(_editor_line(prog, line, 0))
    return out


def _editor_line(prog: str, line: str, depth: int) -> list[tuple[str, str]]:
    """The shell code one ex/vim command line runs: ``:!cmd`` and ``:r !cmd``, and in vim's own
    script the functions that start a program (``call system("cmd")``, ``jobstart([…])``) and
    ``execute "!cmd"``, their string or list arguments read when they are literals."""
    line = _VIM_SILENT_BANG.sub("", line, count=1)  # :silent! CMD runs CMD (no shell); :silent !CMD is a shell
    m = _EDITOR_SHELL.match(line) if "!" in line else None  # the pattern needs a !: most lines have none
    if m and m.group(1).strip():
        return [(f"{prog} !", m.group(1))]
    out: list[tuple[str, str]] = []
    if ("(" not in line and "exe" not in line) or not _VIM_EVALUATES.match(line):
        return out  # a substitute's pattern or a normal-mode key that reads system( is text
    i = 0
    while i < len(line):
        if line[i] in "\"'":  # a string's text is data: echo "call system('x')" prints it
            _, j = _vim_literal(line, i)
            i = j if j > i else i + 1
            continue
        m = _VIM_CALL.match(line, i) if not (i and (line[i - 1].isalnum() or line[i - 1] == "_")) else None
        e = _VIM_EXECUTE.match(line, i) if m is None else None
        if m is None and e is None:
            i += 1
            continue
        value, j = _vim_literal(line, (m or e).end())  # type: ignore[union-attr]
        if m is not None and isinstance(value, str) and value.strip():
            out.append((f"{prog} {m.group(1)}()", value))
        elif m is not None and isinstance(value, list) and value:
            out.append((f"{prog} {m.group(1)}()", shlex.join(value)))
        elif e is not None and isinstance(value, str) and depth < 4:
            out.extend(_editor_line(prog, value, depth + 1))
        i = max(j, (m or e).end())  # type: ignore[union-attr]
    return out


_VIM_SILENT_BANG = re.compile(r"^[\s:]*sil(?:ent)?!\s+")
# ex commands that evaluate an expression (after :silent! and the like), where a call can run
_VIM_EVALUATES = re.compile(r"^[\s:]*(?:(?:sil(?:ent)?!?|uns(?:ilent)?|noa(?:utocmd)?|keep\w*)\s+)*"
                            r"(?:cal|call|echo\w*|let|exe\w*|if|elsei\w*|wh\w*|retu\w*|eval|for)\b")
# vim's functions that run a program: a string is a shell command ('shell'), a list an argv
_VIM_CALL = re.compile(r"(system|systemlist|jobstart|job_start|termopen|term_start)\s*\(\s*")
_VIM_EXECUTE = re.compile(r"exe(?:c|cu|cut|cute)?\s+")
_VIM_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\']|\'\')*)\'')
_VIM_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "\\": "\\", '"': '"'}


def _vim_literal(text: str, i: int) -> tuple[str | list[str] | None, int]:
    """A vim string literal (``"…"`` with backslash escapes, ``'…'`` with ``''``) or a list of
    them at ``text[i]``; None for anything else."""
    m = _VIM_STRING.match(text, i)
    if m:
        if m.group(1) is not None:
            return re.sub(r"\\(.)", lambda e: _VIM_ESCAPES.get(e.group(1), e.group(1)), m.group(1)), m.end()
        return m.group(2).replace("''", "'"), m.end()
    if text[i : i + 1] != "[":
        return None, i
    items: list[str] = []
    i += 1
    while True:
        while text[i : i + 1].isspace():
            i += 1
        if text[i : i + 1] == "]":
            return items, i + 1
        value, j = _vim_literal(text, i)
        if not isinstance(value, str):
            return None, i
        items.append(value)
        i = j
        while text[i : i + 1].isspace():
            i += 1
        if text[i : i + 1] == ",":
            i += 1


def curl_config(argv: tuple[str, ...], st: State, cwd: str, stdin: str | None) -> tuple[str, ...]:
    """``curl -K FILE`` with the options FILE holds put in its place: a file the command wrote,
    a heredoc or here-string (``-K -``), a ``<(…)``, or one on disk."""
    out: list[str] = [argv[0]]
    i = 1
    while i < len(argv):
        a = argv[i]
        path = None
        if a in ("-K", "--config") and i + 1 < len(argv):
            path, i = argv[i + 1], i + 2
        elif a.startswith("--config="):
            path, i = a.split("=", 1)[1], i + 1
        elif a.startswith("-K") and len(a) > 2 and not a.startswith("--"):
            path, i = a[2:], i + 1
        else:
            out.append(a)
            i += 1
            continue
        text = stdin if path == "-" else read_script(path, st, cwd, stdin)[0]
        if text is None:
            out.extend(("--config", path))
            continue
        out.extend(_curl_config_options(text))
    return tuple(out)


_CURL_CFG = re.compile(r"""^\s*(-{0,2}[A-Za-z0-9][\w-]*)\s*(?:[=:]\s*|\s+|$)(.*?)\s*$""")


def _curl_config_options(text: str) -> list[str]:
    opts: list[str] = []
    for line in text.splitlines()[:500]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _CURL_CFG.match(line)
        if not m:
            continue
        name, value = m.group(1), m.group(2)
        if not name.startswith("-"):
            name = ("-" if len(name) == 1 else "--") + name
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        opts.append(name)
        if value:
            opts.append(value)
    return opts


def _trap(w: Walker, argv: tuple[str, ...], st: State, fr: Frame) -> None:
    """``trap 'CMD' EXIT ERR DEBUG …``: bash runs CMD later in the same shell."""
    i = 1
    while i < len(argv) and argv[i] in ("-p", "-l", "-P", "--"):
        if argv[i] != "--":
            return  # prints, runs nothing
        i += 1
        break
    if len(argv) - i < 2 or argv[i] in ("", "-"):
        return  # trap SIG resets; trap '' SIG ignores
    if UNKNOWN in argv[i]:
        w.sink.note("trap: runs code built at run time, not analysed")
        return
    w.string(argv[i], st.copy(), fr, "trap")


def _mapfile_callback(w: Walker, argv: tuple[str, ...], st: State, fr: Frame) -> None:
    """``mapfile -C CALLBACK [-c N]``: bash evaluates CALLBACK (with the index and the line
    appended) in this shell, every N lines read."""
    for k, a in enumerate(argv[1:], start=1):
        code = a[2:] if a.startswith("-C") and len(a) > 2 else argv[k + 1] if a == "-C" and k + 1 < len(argv) else None
        if code is None:
            continue
        if UNKNOWN in code:
            w.sink.note(f"{argv[0]} -C: runs code built at run time, not analysed")
        else:
            w.string(code + " 0 line", st, fr, f"{argv[0]} -C")
        return


def _git_alias(w: Walker, call: Call) -> bool:
    """Expand a git alias into what it runs; remember ``git config alias.X …`` for later."""
    import guard.resolve.gitalias as gitalias

    argv, st, fr, env, cwd = call.argv, call.st, call.fr, call.env, call.cwd or call.st.cwd

    defined = gitalias.defined_by(argv)
    if defined:
        st.fx.git_aliases[defined[0]] = defined[1]
        return False
    hit = gitalias.lookup(argv, gitalias.ShellEnv(env, st.vars), st.fx.git_aliases)
    if hit is None or fr.depth >= w.sink.max_depth or f"git alias {hit[0]}" in fr.via:
        return False
    name, value, i = hit
    inner_fr = Frame(fr.via + (f"git alias {name}",), fr.depth + 1, fr.lang)
    rest = argv[i + 1 :]
    if value.startswith("!"):
        code = value[1:] + "".join(" " + _quote(a) for a in rest)
        w.string_in(code, _child(st, cwd, env), Frame(inner_fr.via, inner_fr.depth, "sh"))
        return True
    import shlex

    try:
        expansion = shlex.split(value)
    except ValueError:
        expansion = value.split()
    run(w, Call((*argv[:i], *expansion, *rest), st, inner_fr, env, call.stdin, call.writes, call.refs, call.pos,
               cwd))
    return True


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _recipe_runner(
    w: Walker, argv: tuple[str, ...], st: State, fr: Frame, cwd: str, env: dict[str, str | None]
) -> bool:
    """A task runner the catalogue describes (a program spec's ``recipes:``): analyse the recipes
    it would run, read from the file the command wrote earlier or from disk, in their folder."""
    from guard.resolve.recipes import recipes

    got = recipes(w.ctx.recipes[basename(argv[0])], argv, cwd, st.fx.files)
    if got is None:
        return False
    for n in got.notes[:5]:
        w.sink.note(n)
    for label, code in got.steps:
        w.string_in(code, _child(st, got.cwd, env), Frame(fr.via + (label,), fr.depth + 1, "sh"))
    return True


def repository_made(argv: tuple[str, ...], st: State) -> str | None:
    """The folder a ``git clone URL [DIR]`` or ``git init [DIR]`` creates (with its .git), so a
    later copy of it in the same command is known to copy a repository."""
    from guard.resolve.gitalias import split_global

    _, i = split_global(argv)
    if i >= len(argv) or argv[i] not in ("clone", "init"):
        return None
    ops = [a for a in argv[i + 1 :] if not a.startswith("-")]
    if argv[i] == "init":
        target = ops[0] if ops else "."
    elif len(ops) >= 2:
        target = ops[1]
    elif ops:
        name = ops[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        target = name[:-4] if name.endswith(".git") else name
    else:
        return None
    base = st.cwd
    for j, a in enumerate(argv[1:i], start=1):
        if a == "-C" and j + 1 < len(argv):
            base = paths.join(base, argv[j + 1], _home(st))
    return paths.join(base, target, _home(st))


# Options through which a program runs another one: (program, option) → what the value is.
_RUNS_OPTION = {
    ("sort", "--compress-program"): "sort --compress-program",
    ("tar", "--to-command"): "tar --to-command",
    ("tar", "--use-compress-program"): "tar --use-compress-program",
    ("tar", "-I"): "tar -I",
    ("tar", "--info-script"): "tar --info-script",
    ("tar", "--new-volume-script"): "tar --new-volume-script",
    ("rsync", "-e"): "rsync -e",
    ("rsync", "--rsh"): "rsync --rsh",
    ("rg", "--pre"): "rg --pre",
}
_RUNS_PROGRAMS = frozenset({"sed", "gsed", *(p for p, _ in _RUNS_OPTION)})


def embedded_commands(argv: tuple[str, ...], stdin: str | None = None) -> list[tuple[str, str | None]]:
    """Commands a program runs from its own options or script: ``sed 1e CMD``,
    ``sort --compress-program=P``, ``tar --to-command=C``, ``rsync -e C``, ``rg --pre P``.
    None stands for text built at run time (``sed s/x/y/e`` on input that is not known)."""
    prog = basename(argv[0])
    out: list[tuple[str, str | None]] = []
    if prog not in _RUNS_PROGRAMS:  # every command passes here: most leave at once
        return out
    if prog in ("sed", "gsed"):
        return sed_commands(argv, stdin)
    for j, a in enumerate(argv[1:], start=1):
        name, eq, val = a.partition("=")
        key = (prog, name)
        if key in _RUNS_OPTION:
            value = val if eq else (argv[j + 1] if j + 1 < len(argv) else "")
            if value:
                out.append((_RUNS_OPTION[key], value))
        elif prog == "tar" and name.startswith("--checkpoint-action") and "exec=" in val:
            out.append(("tar --checkpoint-action", val.split("exec=", 1)[1]))
    return out


def _feed_xargs(argv: tuple[str, ...], stdin: str) -> tuple[str, ...]:
    """``echo push | xargs git``: the items xargs reads are known, so put them in place."""
    items = stdin.split()
    if not items or len(items) > 64:
        return argv
    if argv and argv[-1] == UNKNOWN:
        return (*argv[:-1], *items)
    return tuple(a.replace(UNKNOWN, items[0]) for a in argv)


def _show(s: str) -> str:
    return s.replace(UNKNOWN, "…")


def _child(st: State, cwd: str, env: dict[str, str | None]) -> State:
    sub = st.copy()
    sub.cwd = cwd
    for k, v in env.items():
        sub.vars[k] = v
    return sub


def read_script(path: str, st: State, cwd: str, stdin: str | None = None,
                fds: Mapping[int, str] | None = None) -> tuple[str | None, str]:
    """The script a command runs or sources, and why it is not known when it is not.

    A script the command wrote itself, what the command is fed on stdin when the path names its
    own standard input (``bash /dev/stdin <<EOF``) or another descriptor the command gave text
    (``source /dev/fd/3 3<<<TEXT``), else the file on disk as far as ``files.read_text``
    allows: regular files only, never blocking, never the terminal.
    """
    if UNKNOWN in path:
        return None, "script path not known"
    if files.names_stdin(path):
        if stdin is None:
            return None, "reads its script from standard input, which the command text does not give"
        return files.strip_nul(stdin), ""
    fd = files.descriptor_number(path)
    if fd is not None and fds and fd in fds:
        return files.strip_nul(fds[fd]), ""
    full = paths.join(cwd, path, _home(st))
    if full in st.fx.files:
        return files.strip_nul(st.fx.files[full]), ""
    if path == FAKE_PROCSUB:
        text = st.fx.files.get(FAKE_PROCSUB)
        return (None, "process substitution output not known") if text is None else (files.strip_nul(text), "")
    text, why = files.read_text(full, SCRIPT_CAP)
    return text, f"script {why}" if why else ""


def _shell(
    w: Walker, argv: tuple[str, ...], st: State, fr: Frame, cwd: str, env: dict[str, str | None], stdin: str | None
) -> bool:
    prog = basename(argv[0])
    if prog == "busybox":
        if len(argv) < 2 or argv[1] not in ("sh", "ash", "bash"):
            return False
        argv = argv[1:]
        prog = argv[0]
    i, has_c, has_s = 1, False, False
    while i < len(argv):
        a = argv[i]
        if a == "--" or a == "-":
            i += 1
            break
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if a[:1] in ("-", "+") and len(a) > 2 and a[1] != "-" and ("o" in a[1:] or "O" in a[1:]):
            has_c = has_c or (a[0] == "-" and "c" in a[1:])
            i += 2  # -euo pipefail: the o in the cluster takes the next word
            continue
        if a.startswith("--"):
            i += 1
            continue
        if a[:1] in ("-", "+") and len(a) > 1:
            if a[0] == "-" and "c" in a[1:]:
                has_c = True
            if "s" in a[1:]:
                has_s = True
            i += 1
            continue
        break
    rest = argv[i:]
    if has_c:
        if not rest:
            return False
        sub = _child(st, cwd, env)
        sub.arg0 = rest[1] if len(rest) > 1 else argv[0]  # bash -c CMD NAME ARGS…: $0 is NAME
        sub.positional = list(rest[2:])
        w.string(rest[0], sub, fr, f"{prog} -c", stdin)  # its standard input is the shell's
        return True
    if rest and not has_s:
        text, why = read_script(rest[0], st, cwd, stdin, w.fds_used)
        if text is None:
            w.sink.note(f"{prog} {_show(rest[0])}: {why}, not analysed")
            return False
        sub = _child(st, cwd, env)
        sub.arg0 = rest[0]
        sub.positional = list(rest[1:])
        w.string(text, sub, fr, f"{prog} {_show(rest[0])}")
        return True
    if stdin is not None:
        sub = _child(st, cwd, env)
        w.string(stdin, sub, fr, f"{prog} stdin")
        return True
    w.sink.note(f"{prog} reads commands from standard input that could not be determined")
    return False


# python -m MODULE that runs code given to it: where the code is.
_PY_TIMEIT_VALUES = ("-n", "--number", "-r", "--repeat", "-u", "--unit")


def _interpreter(
    w: Walker, argv: tuple[str, ...], st: State, fr: Frame, cwd: str, env: dict[str, str | None], stdin: str | None
) -> bool:
    """Analyse the program an interpreter runs (``python -c``, ``perl -e``, a heredoc, a script
    file); the catalogue (a program spec's ``inline:``) says which dialect and where it sits."""
    spec = interpreter(argv[0], w.ctx.interpreters)
    if spec is None:
        return False
    code, label, args = _inline_source(spec, argv, st, cwd, stdin)
    if code is None:
        return False
    inline_findings(w, str(spec["dialect"]), code, label, st, fr, cwd, env, args)
    if spec["dialect"] == "python":
        src = source_of(basename(argv[0]), spec, argv)
        script = src.text if src is not None and src.kind == "script" else None
        folder = paths.join(cwd, script, _home(st)).rsplit("/", 1)[0] or "/" if script else cwd
        _written_imports(w, code, folder, st, fr, cwd, env, set())
    return True


def _written_imports(
    w: Walker, code: str, folder: str, st: State, fr: Frame, cwd: str, env: dict[str, str | None], seen: set[str]
) -> None:
    """Modules the command wrote into the folder first on the interpreter's ``sys.path`` (the cwd
    for ``-c``, the script's folder for a script) and the code imports: their top-level code
    runs at import, so each is analysed as a script, and so are the modules it imports there."""
    base = folder.rstrip("/") + "/"
    if not any(f.startswith(base) and f.endswith(".py") for f in st.fx.files):
        return  # the command wrote no module there: the code is not parsed a second time
    from guard.resolve.inline.python import imported_modules

    for mod in imported_modules(code):
        for path in (f"{folder.rstrip('/')}/{mod}.py", f"{folder.rstrip('/')}/{mod}/__init__.py"):
            if path in seen or path not in st.fx.files or len(seen) >= 16:
                continue
            seen.add(path)
            text = files.strip_nul(st.fx.files[path])
            inline_findings(w, "python", text, f"import {mod}", st, fr, cwd, env)
            _written_imports(w, text, folder, st, fr, cwd, env, seen)
            break


def _inline_source(
    spec: Mapping[str, object], argv: tuple[str, ...], st: State, cwd: str, stdin: str | None
) -> tuple[str | None, str, tuple[str, ...]]:
    """The program text an interpreter runs, a label for it, and the program's own arguments
    (``sys.argv`` for Python)."""
    prog = basename(argv[0])
    src = source_of(prog, spec, argv)
    if src is None:
        return None, "", ()
    if src.kind == "code":
        return src.text, src.label, src.args
    if src.kind == "script":
        return read_script(src.text, st, cwd, stdin)[0], f"{src.label} {_show(src.text)}", src.args
    if src.kind == "module":
        return _python_module(src.args, prog, st, cwd, stdin)
    return stdin, src.label, src.args


def _python_module(
    rest: tuple[str, ...], prog: str, st: State, cwd: str, stdin: str | None
) -> tuple[str | None, str, tuple[str, ...]]:
    """``python -m MODULE …`` for the standard modules that run code they are given:
    ``timeit`` (its setup and statements), ``code`` (reads its standard input as a console),
    ``runpy MODULE``, and ``cProfile``/``profile``/``trace``/``pdb`` (a script or ``-m``); and
    a module the command wrote in the cwd (``M.py``, ``M/__main__.py``)."""
    if not rest:
        return None, "", ()
    mod, args = rest[0], rest[1:]
    label = f"{prog} -m {mod}"
    if mod == "timeit":
        parts: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-s", "--setup") and i + 1 < len(args):
                parts.append(args[i + 1])
                i += 2
                continue
            if a.startswith("--setup="):
                parts.append(a.split("=", 1)[1])
            elif a in _PY_TIMEIT_VALUES:
                i += 1
            elif a == "--":
                parts.extend(args[i + 1 :])
                break
            elif not a.startswith("-"):
                parts.append(a)
            i += 1
        return ("\n".join(parts) if parts else None), label, ()
    if mod == "code":
        return stdin, label, ()
    if mod == "runpy":
        return _python_module(args, prog, st, cwd, stdin)
    if mod in ("cProfile", "profile", "trace", "pdb"):
        i = 0
        while i < len(args):
            a = args[i]
            if a == "-m":
                return _python_module(args[i + 1 :], prog, st, cwd, stdin)
            if a in ("-o", "-s", "-c", "--file", "-C", "--coverdir", "--ignore-module", "--ignore-dir") and not (
                mod == "trace" and a == "-c"
            ):
                i += 2
                continue
            if not a.startswith("-"):
                return read_script(a, st, cwd, stdin)[0], f"{label} {_show(a)}", tuple(args[i:])
            i += 1
    # a module the command wrote in the cwd, first on sys.path for -m
    for name in (f"{mod.replace('.', '/')}.py", f"{mod.replace('.', '/')}/__main__.py"):
        path = paths.join(cwd, name, _home(st))
        if path in st.fx.files:
            return files.strip_nul(st.fx.files[path]), label, args
    return None, "", ()


def inline_findings(
    w: Walker, lang: str, code: str, label: str, st: State, fr: Frame, cwd: str, env: dict[str, str | None],
    args: tuple[str, ...] = (),
) -> None:
    findings, notes = analyze_inline(lang, code, args, w.ctx.dialects)
    for n in notes[:5]:
        w.sink.note(n)
    for f in findings:
        sub_fr = Frame(fr.via + (f"{label}: {f.detail}" if f.detail else label,), fr.depth + 1, lang)
        fcwd = paths.real(paths.join(cwd, f.cwd, _home(st))) if f.cwd else cwd
        if f.kind == "argv" and f.argv:
            run(w, Call(tuple(f.argv), _child(st, fcwd, env), sub_fr, dict(env), cwd=fcwd))
        elif f.kind == "shell" and f.shell:
            w.string_in(f.shell, _child(st, fcwd, env), Frame(sub_fr.via, sub_fr.depth, "sh"))
        elif f.kind == "http":
            w.emit(Call((KIND_NAMES[HTTP], f.method or "GET", f.url), st, sub_fr, env, cwd=fcwd),
                   facts={"http": {"method": f.method or "GET", "url": f.url, "body": f.body}}, kind=HTTP)
        elif f.kind == "token":
            w.emit(Call((KIND_NAMES[ENV_READ], f.var), st, sub_fr, env, refs=[f.var], cwd=fcwd), kind=ENV_READ)
        elif f.kind == "gitlib":
            gitargv = tuple(f.argv) if f.argv else ("git", f.op or UNKNOWN)
            w.emit(Call(gitargv, st, sub_fr, env, cwd=fcwd), "git")


def _executable_script(
    w: Walker, argv: tuple[str, ...], st: State, fr: Frame, cwd: str, env: dict[str, str | None]
) -> bool:
    """``./deploy.sh``: read the shebang and analyse the contents with the right engine."""
    if files.names_descriptor(argv[0]):
        return False
    text, _why = read_script(argv[0], st, cwd)
    if text is None:
        return False
    first = text.split("\n", 1)[0]
    interp = ""
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts:
            interp = basename(parts[0])
            if interp == "env" and len(parts) > 1:
                interp = basename(parts[-1] if parts[1].startswith("-") else parts[1])
    if interp in SHELLS or not interp:
        sub = _child(st, cwd, env)
        sub.positional = list(argv[1:])
        w.string(text, sub, fr, _show(argv[0]))
        return True
    spec = interpreter(interp, w.ctx.interpreters) if interp else None
    lang = str(spec["dialect"]) if spec is not None else None
    if lang:
        inline_findings(w, lang, text, _show(argv[0]), st, fr, cwd, env, tuple(argv))
        return False  # still emit the script itself
    return False


# ---------------------------------------------------------------------------- outputs


_OWN_OUTPUTS = frozenset({"readlink", "realpath", "which", "type", "command", "mktemp", "pwd"})


@lru_cache(maxsize=1)
def _computed() -> tuple[frozenset[str], Callable[..., str | None]]:
    """The programs ``guard.resolve.compute`` evaluates, and its evaluator (loaded on first use)."""
    from guard.resolve.compute import SUPPORTED, evaluate

    return SUPPORTED, evaluate


def output_of(argv: tuple[str, ...] | None, stdin: str | None, st: State | None = None) -> str | None:
    """The stdout of a static command when it is deterministic, else None."""
    if not argv:
        return None
    prog = basename(argv[0])
    supported, evaluate = _computed()
    if prog not in supported and prog not in _OWN_OUTPUTS:
        return None  # most stages of a pipeline (grep, python, pytest): nothing to evaluate
    if prog in ("readlink", "realpath") and argv[-1:] and _PROC_EXE.match(argv[-1]):
        return "/bin/bash\n"  # the shell running the command
    if any(UNKNOWN in a for a in argv):
        return None
    if prog in ("which", "type", "command") and len(argv) >= 2:
        return _which(argv, st)
    if prog == "mktemp":
        return _mktemp(argv, st)
    if prog == "pwd" and st is not None:
        return st.cwd + "\n"
    try:
        return evaluate([argv], stdin)
    except Exception:  # the evaluator is best effort; never let it break the analysis
        return None


def _which(argv: tuple[str, ...], st: State | None) -> str | None:
    """``which git``, ``command -v git``, ``type -P git``: where a program of interest is found
    on this machine (only those: anything else is left unknown)."""
    import shutil

    opts = [a for a in argv[1:] if a.startswith("-")]
    names = [a for a in argv[1:] if not a.startswith("-")]
    prog = basename(argv[0])
    if len(names) != 1 or names[0] not in NAMED:
        return None
    if prog == "command" and opts != ["-v"] or prog == "type" and not set(opts) & {"-P", "-p"}:
        return None
    pathvar = st.vars.get("PATH") if st is not None else None
    found = shutil.which(names[0], path=pathvar if isinstance(pathvar, str) and UNKNOWN not in pathvar else None)
    return found + "\n" if found else None


def _mktemp(argv: tuple[str, ...], st: State | None) -> str:
    base = None
    tmp = "/tmp"
    if st is not None and ("TMPDIR" in st.exported or "TMPDIR" in st.inherited):
        t = st.vars.get("TMPDIR")  # mktemp reads its environment: a TMPDIR set but not exported is not in it
        tmp = t if isinstance(t, str) and t else "/tmp"
    for j, a in enumerate(argv[1:], start=1):
        if a in ("-p", "--tmpdir") and j + 1 < len(argv):
            base = argv[j + 1]
        elif a.startswith("--tmpdir="):
            base = a.split("=", 1)[1]
        elif a.startswith("-p") and len(a) > 2:
            base = a[2:]
    base = base or tmp
    if st is not None:
        base = paths.join(st.cwd, base, _home(st))
    # one new entry named from the template (tmp.XXXXXXXXXX by default)
    template = next((a for a in argv[1:] if not a.startswith("-") and a not in (base,) and "X" in a), "tmp.XXXXXXXXXX")
    if "/" in template and st is not None:  # mktemp -d /srv/build.XXXX: the template names the folder
        base = paths.join(st.cwd, template.rsplit("/", 1)[0] or "/", _home(st))
    name = template.rsplit("/", 1)[-1].rstrip("X")
    return base.rstrip("/") + "/" + name + UNKNOWN + "\n"


