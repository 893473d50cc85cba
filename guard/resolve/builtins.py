"""Shell builtins that change the state later commands see: cd, pushd, popd, export, declare
(arrays, associative arrays, namerefs), alias, unalias, unset, set, shift, and the builtins that
assign what they read or print: read, mapfile/readarray, printf -v."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from guard.ir import UNKNOWN
from guard.resolve import paths
from guard.resolve.state import Assoc, State, relink_path
from guard.resolve.state import home_of as _home
from guard.resolve.variables import resolve_name, set_element
from guard.resolve.words import DEFAULT_IFS

DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})

# Reads ``(…)`` text again as an array literal (``declare -a c='(a b)'``); the walker provides it.
CompoundFn = Callable[[str], "list[str] | dict | None"]


class _Call:
    """One builtin call: its argv, the state, what it reads on stdin, its prefix assignments."""

    __slots__ = ("argv", "st", "stdin", "env", "compound")

    def __init__(self, argv: list[str], st: State, stdin: str | None, env: dict, compound: CompoundFn | None):
        self.argv = argv
        self.st = st
        self.stdin = stdin
        self.env = env
        self.compound = compound

    def ifs(self) -> str:
        v = self.env["IFS"] if "IFS" in self.env else self.st.vars.get("IFS", DEFAULT_IFS)
        return v if isinstance(v, str) else DEFAULT_IFS


def apply(argv: list[str], st: State, stdin: str | None = None, env: dict | None = None,
          compound: CompoundFn | None = None) -> None:
    handler = _HANDLERS.get(argv[0])
    if handler is not None:
        handler(_Call(argv, st, stdin, env or {}, compound))


def _cd(c: _Call) -> None:
    """``cd``: the shell's folder (``st.cwd``, physical: where the programs it starts are) and
    ``$PWD`` (logical: through the links named, which ``cd ..`` climbs back out of, as bash's
    default ``cd -L`` does; ``cd -P`` is physical both ways)."""
    argv, st = c.argv, c.st
    physical = "-P" in argv[1:argv.index("--")] if "--" in argv else "-P" in argv
    args = [a for a in argv[1:] if a not in ("-P", "-L", "-e", "-@", "--")]
    old = _logical(st)
    if not args:
        new = logical = _home(st)
    elif args[0] == "-":
        prev = st.vars.get("OLDPWD")
        logical = prev if isinstance(prev, str) else UNKNOWN
        new = _physical(logical, st)
    else:
        got = _cd_target(args[0], c, physical)
        if got is None:  # bash says "No such file or directory" and stays where it was
            st.failed = True
            st.cd_target = paths.real(paths.join(st.cwd, args[0], _home(st)))
            return
        logical, new = got
    st.cwd = new
    st.vars["OLDPWD"] = old
    st.vars["PWD"] = logical


def _physical(path: str, st: State) -> str:
    """Where a ``chdir`` to ``path`` lands: through a link the command made, then the links on disk."""
    if st.fx.links:
        path = relink_path(path, st) or path
    return paths.real(path)


def _logical(st: State) -> str:
    """The shell's logical folder: ``$PWD`` when it names the folder the shell is in, else that folder."""
    pwd = st.vars.get("PWD")
    if isinstance(pwd, str) and pwd != st.cwd and pwd.startswith("/") and UNKNOWN not in pwd \
            and _physical(pwd, st) == st.cwd:
        return pwd
    return st.cwd


def _cd_target(arg: str, c: _Call, physical: bool = False) -> tuple[str, str] | None:
    """Where ``cd arg`` goes, (logical, physical): through ``CDPATH`` for a relative name (bash
    tries each entry, then the name itself), None when the folder is known not to exist."""
    st = c.st
    home = _home(st)
    base = st.cwd if physical else _logical(st)
    cdpath = c.env.get("CDPATH") if "CDPATH" in c.env else st.vars.get("CDPATH")
    if isinstance(cdpath, str) and cdpath and not arg.startswith(("/", "./", "../", "~")) and arg not in (".", ".."):
        for entry in cdpath.split(":"):
            logical = paths.join(base if not entry else paths.join(base, entry, home), arg, home)
            cand = _physical(logical, st)
            if _exists(cand, st) is True:
                return (cand if physical else logical), cand
    logical = paths.join(base, arg, home)
    local = _physical(logical, st)
    if _exists(local, st) is False:
        return None
    return (local if physical else logical), local


def _exists(path: str, st: State) -> bool | None:
    """Whether a folder exists: True or False when the file system (or the command, which may
    have made it) says so, None when that cannot be known (a parent that is not there either,
    as for a tree that is not on this machine)."""
    if UNKNOWN in path:
        return None
    if os.path.isdir(path):
        return True
    for g in st.fx.given:  # the tree and the starting folder exist even when not on this machine
        if g == path or g.startswith(path.rstrip("/") + "/"):
            return True
        if path.startswith(g.rstrip("/") + "/") and not os.path.isdir(g):
            return None
    if any(path == m or path.startswith(m.rstrip("/") + "/") for m in st.fx.cloned | st.fx.made):
        return True
    if any(m.startswith(path) for m in st.fx.made):
        return None
    # the folders from the nearest one that exists down to ``path``: missing unless a command
    # run earlier may have made one of them (``mkdir -p a/b``, ``tar -C …``)
    missing = [path]
    while (parent := missing[-1].rsplit("/", 1)[0] or "/") != "/" and not os.path.isdir(parent):
        missing.append(parent)
    return None if any(_mentioned(m, st) for m in missing) else False


def _mentioned(path: str, st: State) -> bool:
    """Whether a command run earlier named the folder (``cmake -B /tmp/b``, ``tar -C …``): it
    may have made it, so it is not known to be missing."""
    base = path.rsplit("/", 1)[-1]
    return any(base and base in a for argv in st.fx.ran for a in argv)


def _pushd(c: _Call) -> None:
    argv, st = c.argv, c.st
    args = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    if not args or args[0].startswith("+"):
        st.cwd = UNKNOWN if not st.dirstack else st.dirstack[-1]
        return
    got = _cd_target(args[0], c)
    if got is None:  # as cd: a folder known to be missing leaves the shell where it was
        st.failed = True
        st.cd_target = paths.real(paths.join(st.cwd, args[0], _home(st)))
        return
    st.dirstack.append(st.cwd)
    st.cwd = got[1]


def _popd(c: _Call) -> None:
    st = c.st
    st.cwd = st.dirstack.pop() if st.dirstack else UNKNOWN


def _declare(c: _Call) -> None:
    argv, st = c.argv, c.st
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and a != "--")
    export = argv[0] == "export" or "x" in flags
    if "f" in flags or "F" in flags or "p" in flags:
        return
    for a in argv[1:]:
        if a.startswith(("-", "+")):
            continue
        k, eq, v = a.partition("=")
        append = k.endswith("+")
        k = k.rstrip("+")
        index = None
        if k.endswith("]") and "[" in k:
            k, _, index = k[:-1].partition("[")
        if not k.isidentifier():
            continue
        if "n" in flags:
            if eq and v.replace("_", "a").isalnum():
                st.namerefs[k] = v
            continue
        k = resolve_name(k, st)
        if "A" in flags and not isinstance(st.vars.get(k), Assoc):
            st.vars[k] = Assoc()
        elif "a" in flags and k not in st.vars and not eq:
            st.vars[k] = []
        if eq:
            if index is not None:
                set_element(st, k, index if isinstance(st.vars.get(k), Assoc) else (index if index.lstrip("-").isdigit() else None), v)
            elif v.startswith("(") and v.endswith(")") and ("a" in flags or "A" in flags or isinstance(st.vars.get(k), list | dict)):
                if isinstance(st.vars.get(k), Assoc) and c.compound is not None:
                    st.vars["__guard_a"] = Assoc()
                value = c.compound(v) if c.compound is not None else v[1:-1].split()
                st.vars.pop("__guard_a", None)
                st.vars[k] = value
            elif append and isinstance(st.vars.get(k), str):
                st.vars[k] = st.vars[k] + v  # type: ignore[operator]
            elif isinstance(st.vars.get(k), list | dict):
                set_element(st, k, "0", v)
            else:
                st.vars[k] = v
            if export:
                st.exported[k] = v
        elif export and a.isidentifier():
            val = st.vars.get(k)
            st.exported[k] = val if isinstance(val, str) else None


def _printf(c: _Call) -> None:
    """``printf -v NAME FORMAT ARGS``: NAME gets what printf would print."""
    argv, st = c.argv, c.st
    if len(argv) < 4 or argv[1] != "-v":
        return
    from guard.resolve.compute import evaluate

    name = argv[2]
    out = evaluate([("printf", *argv[3:])]) if not any(UNKNOWN in a for a in argv[3:]) else None
    _assign(st, name, UNKNOWN if out is None else out)


def _assign(st: State, name: str, value: str | None) -> None:
    if "[" in name and name.endswith("]"):
        base, _, idx = name[:-1].partition("[")
        set_element(st, base, idx if (isinstance(st.vars.get(base), Assoc) or idx.isdigit()) else None, value)
    elif name.isidentifier():
        st.vars[resolve_name(name, st)] = value


def _read(c: _Call) -> None:
    """``read [-r] [-a ARR] [-d DELIM] NAME…``: one line of stdin split on IFS into the names."""
    argv, st = c.argv, c.st
    raw, array, delim = False, None, "\n"
    names: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a.startswith("-") and len(a) > 1 and not names:
            for j, f in enumerate(a[1:], start=1):
                if f == "r":
                    raw = True
                elif f in "adpntuNi":
                    val = a[j + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
                    if not a[j + 1:]:
                        i += 1
                    if f == "a":
                        array = val
                    elif f == "d":
                        delim = val[:1] or "\0"
                    break
        else:
            names.append(a)
        i += 1
    targets = [array] if array else (names or ["REPLY"])
    text = c.stdin
    if text is None:
        for t in targets:
            st.vars[resolve_name(t, st)] = None
        return
    line = text.split("\0" if delim == "\0" else delim, 1)[0]
    if not raw:
        line = line.replace("\\\n", "")
    ifs = c.ifs()
    if array:
        fields = _ifs_split(line, ifs, raw)
        st.vars[resolve_name(array, st)] = fields
        return
    if not names:
        st.vars["REPLY"] = line if raw else _unbackslash(line)
        return
    fields = _ifs_split(line, ifs, raw, len(names))
    for k, name in enumerate(names):
        _assign(st, name, fields[k] if k < len(fields) else "")


def _unbackslash(s: str) -> str:
    import re

    return re.sub(r"\\(.)", r"\1", s)


def _ifs_split(line: str, ifs: str, raw: bool, limit: int = 0) -> list[str]:
    """``read``'s splitting: fields on IFS; with ``limit`` names the last takes the rest."""
    ws = "".join(ch for ch in ifs if ch in " \t\n")
    line = line.strip(ws) if ws else line
    fields: list[str] = []
    i, n = 0, len(line)
    cur: list[str] = []
    while i < n:
        if limit and len(fields) == limit - 1:
            rest = line[i:]
            rest = rest.rstrip(ws) if ws else rest
            cur.append(rest)
            break
        ch = line[i]
        if ch == "\\" and not raw and i + 1 < n:
            cur.append(line[i + 1])
            i += 2
            continue
        if ch in ifs:
            j = i
            while j < n and line[j] in ws:
                j += 1
            if j < n and line[j] in ifs and line[j] not in ws:
                j += 1
                while j < n and line[j] in ws:
                    j += 1
            fields.append("".join(cur))
            cur = []
            i = j
            continue
        cur.append(ch)
        i += 1
    if cur:
        fields.append("".join(cur))
    return fields


def _mapfile(c: _Call) -> None:
    """``mapfile [-t] [-d DELIM] [ARR]`` / ``readarray``: the lines of stdin into an array."""
    argv, st = c.argv, c.st
    strip, delim, name = False, "\n", "MAPFILE"
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-t":
            strip = True
        elif a in ("-d", "-n", "-O", "-s", "-u", "-C", "-c") and i + 1 < len(argv):
            if a == "-d":
                delim = argv[i + 1][:1] or "\0"
            i += 1
        elif not a.startswith("-"):
            name = a
        i += 1
    if c.stdin is None:
        st.vars[resolve_name(name, st)] = None
        return
    pieces = c.stdin.split(delim)
    lines = [p + ("" if strip else delim) for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    st.vars[resolve_name(name, st)] = lines


def _alias(c: _Call) -> None:
    argv, st = c.argv, c.st
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        if "=" in a:
            k, v = a.split("=", 1)
            st.aliases[k] = v


def _unalias(c: _Call) -> None:
    argv, st = c.argv, c.st
    for a in argv[1:]:
        if a == "-a":
            st.aliases.clear()
        else:
            st.aliases.pop(a, None)


def _unset(c: _Call) -> None:
    argv, st = c.argv, c.st
    funcs = "-f" in argv[1:]
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        if funcs:
            st.functions.pop(a, None)
        else:
            st.vars.pop(a, None)
            st.exported.pop(a, None)


def _set(c: _Call) -> None:
    argv, st = c.argv, c.st
    for k, a in enumerate(argv[1:], start=1):
        if a == "--":
            break
        if a[:1] in "-+" and "f" in a[1:] and a[1:2] != "o":
            st.noglob = a[0] == "-"
        if a[:1] in "-+" and a[1:2] != "-":
            letters = a[1:].split("o", 1)[0]  # -euo pipefail: the letters before the o
            if "e" in letters or ("o" in a[1:] and k + 1 < len(argv) and argv[k + 1] == "errexit"):
                st.errexit = a[0] == "-"
    if "--" in argv:
        st.positional = list(argv[argv.index("--") + 1 :])
    elif len(argv) > 1 and not argv[1].startswith(("-", "+")):
        st.positional = list(argv[1:])


def assign_list(argv: list[str], st: State, spec: Mapping[str, object]) -> None:
    """A shell whose variables are lists set by a command (fish: ``set [-gx] NAME VALUE…``):
    NAME holds the values joined by spaces, so ``$NAME`` splits into them again as fish's list
    does. ``spec`` (a catalogue runner's ``assigns:``) names the options that set nothing
    (erase, query) and those that take a value."""
    skip = set(spec.get("no_assign") or ())  # type: ignore[arg-type]
    takes = set(spec.get("with_value") or ())  # type: ignore[arg-type]
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        if argv[i] in skip or (len(argv[i]) > 1 and argv[i][1] != "-" and set(argv[i][1:]) & {o[1] for o in skip
                                                                                              if len(o) == 2}):
            return
        i += 2 if argv[i] in takes else 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    if i >= len(argv) or not argv[i].replace("_", "a").isalnum():
        return  # set NAME[1] x, set without a name: not followed
    st.vars[argv[i]] = " ".join(argv[i + 1 :])


def _shift(c: _Call) -> None:
    argv, st = c.argv, c.st
    if st.positional:
        n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
        st.positional = st.positional[n:]


def _hash(c: _Call) -> None:
    """``hash -p PATH NAME``: NAME now runs PATH."""
    argv, st = c.argv, c.st
    if "-r" in argv[1:]:
        st.hashed.clear()
    for k, a in enumerate(argv[1:-1], start=1):
        if a == "-p" and k + 2 < len(argv):
            st.hashed[argv[k + 2]] = argv[k + 1]


_HANDLERS = {
    "cd": _cd,
    "pushd": _pushd,
    "popd": _popd,
    "alias": _alias,
    "unalias": _unalias,
    "unset": _unset,
    "set": _set,
    "shift": _shift,
    "printf": _printf,
    "hash": _hash,
    "read": _read,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    **{k: _declare for k in DECLARE},
}

# The names ``apply`` acts on: the walker calls it only for these.
CHANGES_STATE = frozenset(_HANDLERS)
