"""Word expansion without running anything: parameters, arrays, tilde, and the command
substitutions whose output is deterministic. Unknown parts become ``ir.UNKNOWN``."""

from __future__ import annotations

from collections.abc import Callable

from guard.ir import UNKNOWN, Arith, CmdSub, Lit, Param, ProcSub, Script, Word
from guard.paths import expand_tilde
from guard.resolve.state import State

PROCSUB_PATH = "/dev/fd/63"

# A callback the walker provides: walk a substitution's script (so the commands inside it are
# seen) and return its stdout when it can be known, else None.
SubstFn = Callable[[Script, State], str | None]


def _lookup(p: Param, st: State, refs: list[str]) -> list[str] | str:
    """Value of a parameter: a string, or a list of fields for ``[@]``/``[*]``/``$@``."""
    name = p.name
    refs.append(name)
    if name in ("@", "*"):
        if st.positional is None:
            return UNKNOWN
        return list(st.positional) if (name == "@" and p.quoted) else " ".join(st.positional)
    if name.isdigit():
        n = int(name)
        if n == 0:
            return "bash"
        if st.positional is None:
            return UNKNOWN
        return st.positional[n - 1] if n <= len(st.positional) else ""
    if name == "#":
        return UNKNOWN if st.positional is None else str(len(st.positional))
    if name in ("?", "$", "!", "-", "RANDOM", "SECONDS", "LINENO", "BASHPID"):
        return UNKNOWN
    if name == "PWD":
        return st.cwd
    if name not in st.vars:
        return UNKNOWN  # unset here may be set where the command runs: unknown, not empty
    val = st.vars[name]
    if val is None:
        return UNKNOWN
    if isinstance(val, list):
        if p.index in ("@", "*"):
            return list(val) if (p.index == "@" and p.quoted) else " ".join(val)
        if p.index and p.index.isdigit():
            i = int(p.index)
            return val[i] if i < len(val) else ""
        if p.index:
            return UNKNOWN
        return val[0] if val else ""
    if p.index in ("@", "*", "0"):
        return val
    if p.index:
        return UNKNOWN
    return val


def param_value(p: Param, st: State, subst: SubstFn, refs: list[str]) -> list[str] | str:
    if p.op == "!" and p.index is None and p.arg is None:
        # ${!v}: the variable named by v's value
        target = _lookup(Param(p.name, p.quoted), st, refs)
        if isinstance(target, str) and target and UNKNOWN not in target:
            return _lookup(Param(target, p.quoted), st, refs)
        return UNKNOWN
    if p.length:
        refs.append(p.name)
        return UNKNOWN
    if p.op in ("", None):
        return _lookup(p, st, refs)
    base = _lookup(p, st, refs)
    is_set = p.name in st.vars or p.name == "PWD"
    empty = base == "" or base == []
    if p.op in (":-", "-", ":=", "="):
        use_default = (not is_set) or (p.op.startswith(":") and empty)
        if base == UNKNOWN and not is_set:
            use_default = True
        if use_default:
            val = expand_one(p.arg, st, subst, refs) if p.arg else ""
            if p.op in (":=", "="):
                st.vars[p.name] = val
            return val
        return base
    if p.op in (":+", "+"):
        if base == UNKNOWN:
            return UNKNOWN
        use_alt = is_set and not (p.op == ":+" and empty)
        return (expand_one(p.arg, st, subst, refs) if p.arg else "") if use_alt else ""
    if p.op in (":?", "?"):
        return base
    if p.arg is not None:
        expand_word(p.arg, st, subst, refs, split=False)  # walk substitutions inside
    return UNKNOWN


def literal_field(word: Word) -> str | None:
    """The one field ``word`` expands to when it is a single literal that needs nothing looked
    up (no leading unquoted ``~``), else None. Most words are (``-la``, ``src/x.py``, ``'a b'``);
    the walker takes them as they are instead of going through ``expand_word``."""
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Lit:
        lit = parts[0]
        if lit.quoted or not lit.text.startswith("~"):
            return lit.text
    return None


def expand_word(
    word: Word, st: State, subst: SubstFn, refs: list[str] | None = None, split: bool = True
) -> list[str]:
    """The fields a word expands to. ``split`` applies word splitting to unquoted expansions.

    An unquoted expansion that yields nothing removes the field, as bash does.
    """
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Lit:
        # Most words are one literal (``-la``, ``src/x.py``): one field, nothing to look up.
        lit = parts[0]
        text = lit.text
        if not lit.quoted and text.startswith("~"):
            text = expand_tilde(text, str(st.vars.get("HOME") or "/root"))
        return [text]
    if refs is None:
        refs = []
    fields: list[str] = []
    cur: list[str] = []
    has_content = False  # quoted text or a literal makes a field even when empty
    for i, part in enumerate(word.parts):
        if isinstance(part, Lit):
            text = part.text
            if i == 0 and not part.quoted and text.startswith("~"):
                text = expand_tilde(text, str(st.vars.get("HOME") or "/root"))
            cur.append(text)
            has_content = has_content or part.quoted or bool(text)
            continue
        if isinstance(part, Param):
            val = param_value(part, st, subst, refs)
            quoted = part.quoted
        elif isinstance(part, CmdSub):
            out = subst(part.script, st)
            val = UNKNOWN if out is None else out.rstrip("\n")
            quoted = part.quoted
        elif isinstance(part, ProcSub):
            out = subst(part.script, st)
            if out is not None and part.direction == "<":
                st.files[PROCSUB_PATH] = out
            val, quoted = PROCSUB_PATH, True
        elif isinstance(part, Arith):
            val, quoted = UNKNOWN, True
        else:  # pragma: no cover - future part kinds
            val, quoted = UNKNOWN, True
        if isinstance(val, list):
            # "${a[@]}": each element its own field
            if not val:
                continue
            cur.append(val[0])
            for extra in val[1:]:
                fields.append("".join(cur))
                cur = [extra]
            has_content = True
            continue
        if quoted or not split or val == UNKNOWN:
            cur.append(val)
            has_content = has_content or quoted or bool(val)
            continue
        pieces = val.split()
        if not pieces:
            continue
        if val[:1].isspace() and (cur or has_content):
            fields.append("".join(cur))
            cur = []
        cur.append(pieces[0])
        for extra in pieces[1:]:
            fields.append("".join(cur))
            cur = [extra]
        has_content = True
        if val[-1:].isspace():
            fields.append("".join(cur))
            cur, has_content = [], False
    if cur or has_content:
        fields.append("".join(cur))
    return fields


def expand_one(word: Word, st: State, subst: SubstFn, refs: list[str] | None = None) -> str:
    """A word expanded without splitting, as in an assignment or a redirect target."""
    out = expand_word(word, st, subst, refs, split=False)
    return out[0] if out else ""
