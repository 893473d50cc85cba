"""The shell's variable store beyond plain names: ``declare -n`` namerefs and indexed, sparse
and associative arrays, as bash keeps them. Shared by the word expander, the arithmetic
evaluator and the builtins that assign."""

from __future__ import annotations

from guard.ir import UNKNOWN
from guard.resolve.state import Assoc, State


def resolve_name(name: str, st: State) -> str:
    """Follow ``declare -n`` namerefs to the variable really meant."""
    for _ in range(8):
        target = st.namerefs.get(name)
        if target is None:
            return name
        name = target
    return name


def array_items(val: object) -> list[tuple[str, str]] | None:
    """(key, value) pairs of an array value in bash's order, or None when it is not an array."""
    if isinstance(val, list):
        return [(str(i), v) for i, v in enumerate(val)]
    if isinstance(val, Assoc):
        return [(str(k), v) for k, v in val.items()]
    if isinstance(val, dict):
        return [(str(k), v) for k, v in sorted(val.items())]
    return None


def element(val: object, key: str) -> str | None:
    """One element of an array (None: unset)."""
    if isinstance(val, list):
        i = int(key)
        if i < 0:
            i += len(val)
        return val[i] if 0 <= i < len(val) else None
    if isinstance(val, Assoc):
        return val.get(key)
    if isinstance(val, dict):
        i = int(key)
        if i < 0 and val:
            i += max(val) + 1
        return val.get(i)
    return val if key in ("0", "-0") else None  # a scalar is element 0


def set_element(st: State, name: str, key: str | None, value: str | None) -> None:
    """``name[key]=value`` (key None: unknown). Arrays are replaced, never changed in place,
    because a subshell's copy of the state shares them."""
    name = resolve_name(name, st)
    cur = st.vars.get(name)
    if isinstance(cur, Assoc):
        if key is None:
            st.vars[name] = None
            return
        new_a = Assoc(cur)
        new_a[key] = UNKNOWN if value is None else value
        st.vars[name] = new_a
        return
    if key is None:
        st.vars[name] = None
        return
    try:
        k = int(key)
    except ValueError:
        st.vars[name] = None
        return
    if not isinstance(cur, list | dict):
        if k == 0:
            st.vars[name] = value
            return
        items: dict[int, str] = {} if not isinstance(cur, str) else {0: cur}
    else:
        items = dict(enumerate(cur)) if isinstance(cur, list) else dict(cur)
    if k < 0:
        k += (max(items) + 1) if items else 0
        if k < 0:
            return
    items[k] = UNKNOWN if value is None else value
    st.vars[name] = _dense(items)


def _dense(items: dict[int, str]) -> list[str] | dict[int, str]:
    keys = sorted(items)
    if keys == list(range(len(keys))):
        return [items[i] for i in keys]
    return dict(sorted(items.items()))
