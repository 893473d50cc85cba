"""Shell builtins that change the state later commands see: cd, pushd, popd, export, declare,
alias, unalias, unset, set --, shift."""

from __future__ import annotations

from guard import paths
from guard.ir import UNKNOWN
from guard.resolve.state import State

DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})


def apply(argv: list[str], st: State) -> None:
    name = argv[0]
    handler = _HANDLERS.get(name)
    if handler is not None:
        handler(argv, st)


def _home(st: State) -> str:
    h = st.vars.get("HOME")
    return h if isinstance(h, str) else "/root"


def _cd(argv: list[str], st: State) -> None:
    args = [a for a in argv[1:] if a not in ("-P", "-L", "-e", "-@", "--")]
    if not args:
        st.cwd = _home(st)
    elif args[0] == "-":
        old = st.vars.get("OLDPWD")
        st.cwd = old if isinstance(old, str) else UNKNOWN
    else:
        old = st.cwd
        st.cwd = paths.real(paths.join(st.cwd, args[0], _home(st)))
        st.vars["OLDPWD"] = old


def _pushd(argv: list[str], st: State) -> None:
    args = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    if not args or args[0].startswith("+"):
        st.cwd = UNKNOWN if not st.dirstack else st.dirstack[-1]
        return
    st.dirstack.append(st.cwd)
    st.cwd = paths.real(paths.join(st.cwd, args[0], _home(st)))


def _popd(argv: list[str], st: State) -> None:
    st.cwd = st.dirstack.pop() if st.dirstack else UNKNOWN


def _declare(argv: list[str], st: State) -> None:
    export = argv[0] == "export" or any(a.startswith("-") and "x" in a for a in argv[1:])
    functions = any(a.startswith("-") and "f" in a for a in argv[1:])
    for a in argv[1:]:
        if a.startswith("-") or a.startswith("+"):
            continue
        if "=" in a:
            k, v = a.split("=", 1)
            k = k.rstrip("+")
            if not k.isidentifier():
                continue
            if v.startswith("(") and v.endswith(")"):
                st.vars[k] = v[1:-1].split()
            else:
                st.vars[k] = v
            if export:
                st.exported[k] = v
        elif export and not functions and a.isidentifier():
            val = st.vars.get(a)
            st.exported[a] = val if isinstance(val, str) else None


def _alias(argv: list[str], st: State) -> None:
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        if "=" in a:
            k, v = a.split("=", 1)
            st.aliases[k] = v


def _unalias(argv: list[str], st: State) -> None:
    for a in argv[1:]:
        if a == "-a":
            st.aliases.clear()
        else:
            st.aliases.pop(a, None)


def _unset(argv: list[str], st: State) -> None:
    funcs = "-f" in argv[1:]
    for a in argv[1:]:
        if a.startswith("-"):
            continue
        if funcs:
            st.functions.pop(a, None)
        else:
            st.vars.pop(a, None)
            st.exported.pop(a, None)


def _set(argv: list[str], st: State) -> None:
    if "--" in argv:
        st.positional = list(argv[argv.index("--") + 1 :])


def _shift(argv: list[str], st: State) -> None:
    if st.positional:
        n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
        st.positional = st.positional[n:]


_HANDLERS = {
    "cd": _cd,
    "pushd": _pushd,
    "popd": _popd,
    "alias": _alias,
    "unalias": _unalias,
    "unset": _unset,
    "set": _set,
    "shift": _shift,
    **{k: _declare for k in DECLARE},
}
