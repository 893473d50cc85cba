"""Word expansion without running anything, in bash's order.

``expand_word`` takes one parsed word and gives the fields bash would make of it: brace
expansion, then tilde, parameter, arithmetic and command substitution left to right, then word
splitting on ``IFS``, then pathname expansion against the real file system, then quote removal.
Values may be partly unknown: an unknown piece is ``ir.UNKNOWN`` inside the field's text, and it
never splits, never globs and never matches a pattern.

The expander never parses shell code. It takes its environment (a ``State``) and two handlers:
``subst`` walks a command substitution and returns its output when that can be known, and
``lex`` turns text bash re-reads as a word (``${x@P}``, an arithmetic subscript) into a ``Word``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from guard.ir import UNKNOWN, Arith, CmdSub, Lit, Param, ProcSub, Script, Word
from guard.resolve.arith import ArithUnknown, evaluate_arith
from guard.resolve.state import Assoc, State
from guard.resolve.variables import array_items, element, resolve_name

# Literal patterns, compiled at import (before the analysis server forks its workers).
_BACKSLASH_ESCAPE = re.compile(r"\\(.)")


PROCSUB_PATH = "/dev/fd/63"
DEFAULT_IFS = " \t\n"
MAX_FIELDS = 4096  # brace and glob results at most, per word
WORD_CAP = 1 << 20  # characters the expansions in one word may add (as much as a compute stage outputs)
MAX_BRACE_DEPTH = 8

# A callback the walker provides: walk a substitution's script (so the commands inside it are
# seen) and return its stdout when it can be known, else None.
SubstFn = Callable[[Script, State], str | None]
LexFn = Callable[[str], Word]

_GLOB_CHARS = re.compile(r"[*?\[]")
_NEEDS_WORK = re.compile(r"[~{*?\[]")

# A field under construction: segments of (text, protected). Protected text came from quotes
# or a quoted expansion: it is neither split nor globbed.
Seg = tuple[str, bool]


class Dirs:
    """How pathname expansion sees the file system: the real one, read-only. A test or a caller
    that knows better (a tree that exists only elsewhere) passes its own."""

    __slots__ = ()

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def lexists(self, path: str) -> bool:
        return os.path.lexists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)


REAL_DIRS = Dirs()


class Hooks:
    """What the expander is configured with beyond the shell state it reads: the handler that
    runs a command substitution, the lexer for code inside a word, and the directory reader
    pathname expansion uses. The walker provides real ones; tests may pass lambdas."""

    __slots__ = ("subst", "lex", "dirs", "note")

    def __init__(self, subst: SubstFn, lex: LexFn | None = None, dirs: Dirs = REAL_DIRS,
                 note: Callable[[str], None] | None = None) -> None:
        self.subst = subst
        self.lex = lex
        self.dirs = dirs
        self.note = note  # says in ``unresolved`` what was not expanded and why


def _hooks(subst: SubstFn | Hooks, lex: LexFn | None = None) -> Hooks:
    return subst if isinstance(subst, Hooks) else Hooks(subst, lex)


# --------------------------------------------------------------------------- variables


def ifs_of(st: State) -> str:
    v = st.vars.get("IFS", DEFAULT_IFS) if "IFS" in st.vars else DEFAULT_IFS
    return v if isinstance(v, str) else DEFAULT_IFS


class _Val:
    """An expansion's value: one string, or a list of fields (``"$@"``, ``"${a[@]}"``).

    ``multi`` marks the lists that stay separate fields even when quoted; ``unset`` is True when
    the parameter is known to be unset (``${x-default}`` takes the default)."""

    __slots__ = ("text", "items", "unset", "star")

    def __init__(self, text: str | None = None, items: list[str] | None = None, unset: bool = False,
                 star: bool = False) -> None:
        self.text = text
        self.items = items
        self.unset = unset
        self.star = star  # came from [*] / $*: joined with IFS[0] when quoted

    def joined(self, st: State) -> str:
        if self.items is None:
            return self.text or ""
        ifs = ifs_of(st)
        return (ifs[:1] if self.star else " ").join(self.items)

    def is_empty(self) -> bool:
        return (not self.items) if self.items is not None else not self.text


_UNKNOWN_VAL = _Val(UNKNOWN)


class Expander:
    """Expands the words of one command in state ``st`` with handlers ``hooks``."""

    def __init__(self, st: State, hooks: Hooks, refs: list[str]) -> None:
        self.st = st
        self.hooks = hooks
        self.refs = refs

    # ------------------------------------------------------------------ parameters

    def lookup(self, p: Param) -> _Val:
        st = self.st
        name = p.name
        self.refs.append(name)
        if name in ("@", "*"):
            if st.positional is None:
                return _UNKNOWN_VAL
            return _Val(items=list(st.positional), star=name == "*")
        if name.isdigit():
            n = int(name)
            if n == 0:
                return _Val(st.arg0)
            if st.positional is None:
                return _UNKNOWN_VAL
            return _Val(st.positional[n - 1]) if n <= len(st.positional) else _Val("", unset=True)
        if name == "#":
            return _UNKNOWN_VAL if st.positional is None else _Val(str(len(st.positional)))
        if name in ("?", "$", "!", "-", "RANDOM", "SECONDS", "LINENO", "BASHPID", "SRANDOM", "EPOCHREALTIME"):
            return _UNKNOWN_VAL
        if name == "PWD" and "PWD" not in st.vars:
            return _Val(st.cwd)
        name = resolve_name(name, st)
        if name not in st.vars:
            return _UNKNOWN_VAL  # unset here may be set where the command runs: unknown, not empty
        val = st.vars[name]
        if val is None:
            return _UNKNOWN_VAL
        index = p.index
        items = array_items(val)
        if index in ("@", "*"):
            if items is None:
                return _Val(items=[val], star=index == "*")  # type: ignore[list-item]
            return _Val(items=[v for _, v in items], star=index == "*")
        if index is None:
            key = "0"
        elif isinstance(val, Assoc):
            key = self.string_of(index)
        else:
            key = self.arith_text(index)
        if UNKNOWN in key:
            return _UNKNOWN_VAL
        try:
            elem = element(val, key)
        except ValueError:
            return _UNKNOWN_VAL
        return _Val("", unset=True) if elem is None else _Val(elem)

    def is_set(self, p: Param) -> bool | None:
        """Whether the parameter is set (None: cannot tell)."""
        st = self.st
        name = p.name
        if name.isdigit() and name != "0":
            return None if st.positional is None else int(name) <= len(st.positional)
        if name in ("@", "*"):
            return None if st.positional is None else bool(st.positional)
        if not (name[:1].isalpha() or name[:1] == "_"):
            return None
        name = resolve_name(name, st)
        return True if name in st.vars else None

    def string_of(self, text: str) -> str:
        """Text bash expands as if double-quoted (an associative subscript)."""
        if "$" not in text and "`" not in text:
            return text
        if self.hooks.lex is None:
            return UNKNOWN
        return self.one(self.hooks.lex('"' + text.replace('"', '\\"') + '"'))

    def arith_text(self, text: str) -> str:
        """The value of an arithmetic expression as text, or UNKNOWN; substitutions inside it
        are walked (bash runs them)."""
        try:
            return str(evaluate_arith(text, self.st, self.string_of))
        except ArithUnknown:
            return UNKNOWN

    def param(self, p: Param) -> _Val:
        op = p.op
        if op == "!" and p.arg is None:
            if p.index in ("@", "*"):  # ${!a[@]}: the keys
                self.refs.append(p.name)
                val = self.st.vars.get(resolve_name(p.name, self.st))
                items = array_items(val)
                if p.name not in self.st.vars or val is None:
                    return _UNKNOWN_VAL
                return _Val(items=[k for k, _ in items] if items is not None else ["0"], star=p.index == "*")
            if p.name in self.st.namerefs:  # ${!ref} of a nameref is the name it refers to
                return _Val(self.st.namerefs[p.name])
            target = self.lookup(Param(p.name, p.quoted)).text
            if target is None or not target or UNKNOWN in target:
                return _UNKNOWN_VAL
            return self.lookup(self.indirect(target, p.quoted))
        if op in ("!*", "!@"):
            self.refs.append(p.name + "*")
            names = sorted(k for k in self.st.vars if k.startswith(p.name))
            return _Val(items=names, star=op == "!*")
        if p.length:
            base = self.lookup(p)
            if base.text == UNKNOWN:
                return _UNKNOWN_VAL
            if base.items is not None:
                return _Val(str(len(base.items)))
            if UNKNOWN in (base.text or ""):
                return _UNKNOWN_VAL
            return _Val(str(len(base.text or "")))
        if not op:
            return self.lookup(p)
        base = self.lookup(p)
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            return self.test_op(p, base)
        if base.text == UNKNOWN and base.items is None:
            if p.arg is not None:
                self.fields(p.arg, split=False)  # walk the substitutions inside
            return _UNKNOWN_VAL
        if base.items is not None:
            if op == ":":  # ${a[@]:1:2} slices the array
                return self.slice_items(p, base)
            return _Val(items=[self.transform(p, v) for v in base.items], star=base.star)
        return _Val(self.transform(p, base.text or ""))

    def indirect(self, target: str, quoted: bool) -> Param:
        """The parameter ``${!x}`` names when ``x`` holds ``target`` (``a[1]``, ``@``, ``name``)."""
        if "[" in target and target.endswith("]"):
            name, _, idx = target[:-1].partition("[")
            return Param(name, quoted, index=idx)
        return Param(target, quoted, index=target if target in ("@", "*") else None)

    def test_op(self, p: Param, base: _Val) -> _Val:
        op = p.op
        is_set = self.is_set(p)
        if base.unset:
            is_set = False
        unknown = base.text == UNKNOWN and base.items is None
        empty = (not unknown) and base.is_empty()
        if op in (":-", "-", ":=", "="):
            if is_set is None and unknown:
                use_default = True  # unknown and maybe unset: the default is the likelier value
            else:
                use_default = (not is_set) or (op.startswith(":") and empty)
            if use_default:
                val = self.one(p.arg) if p.arg else ""
                if op in (":=", "="):
                    self.st.vars[resolve_name(p.name, self.st)] = val
                return _Val(val)
            return base
        if op in (":+", "+"):
            if unknown:
                if p.arg is not None:
                    self.fields(p.arg, split=False)
                return _UNKNOWN_VAL
            use_alt = is_set and not (op == ":+" and empty)
            if not (use_alt and p.arg):
                return _Val("")
            alt = self.fields(p.arg, split=False, glob=False)
            if len(alt) > 1:  # ${1+"$@"}: the fields of "$@", each its own
                return _Val(items=alt)
            return _Val(alt[0] if alt else "")
        return base  # ${x:?msg}

    def transform(self, p: Param, value: str) -> str:
        """``${x^^}``, ``${x/a/b}``, ``${x#pat}``, ``${x:1:2}``, ``${x@Q}`` … on a known value."""
        op = p.op
        if op in ("^^", ",,", "^", ","):
            pat = self.pattern(p.arg) if p.arg is not None else None
            if pat is None and p.arg is not None:
                return UNKNOWN
            return _case(value, op, pat)
        if op == ":":
            return self.substring(p, value)
        if op == "@":
            return self.at_op(p, value)
        if UNKNOWN in value:
            if p.arg is not None:
                self.fields(p.arg, split=False)
            return UNKNOWN
        try:
            if op in ("#", "##", "%", "%%"):
                pat = self.pattern(p.arg, reverse=op[0] == "%") if p.arg is not None else re.compile("")
                if pat is None:
                    return UNKNOWN
                if op[0] == "%":  # a suffix is a prefix of the reversed value
                    return _strip(value[::-1], pat, "#" * len(op))[::-1]
                return _strip(value, pat, op)
            if op in ("/", "//", "/#", "/%"):
                pat_word, rep_word = _split_slash(p.arg)
                pat = self.pattern(pat_word, reverse=op == "/%") if pat_word is not None else None
                rep = self.one(rep_word) if rep_word is not None else ""
                if pat is None or UNKNOWN in rep:
                    return UNKNOWN
                if op == "/%":
                    return _replace(value[::-1], pat, rep[::-1], "/#")[::-1]
                return _replace(value, pat, rep, op)
        except _OverBudget:
            if self.hooks.note is not None:
                self.hooks.note(f"${{{p.name}{op}…}}: pattern matching past its step budget, value not expanded")
            return UNKNOWN
        return UNKNOWN

    def slice_items(self, p: Param, base: _Val) -> _Val:
        items = base.items or []
        off_text, colon, len_text = _split_colon(self.one(p.arg) if p.arg is not None else "")
        try:
            off = evaluate_arith(off_text, self.st, self.string_of) if off_text.strip() else 0
            length = evaluate_arith(len_text, self.st, self.string_of) if colon else None
        except ArithUnknown:
            return _UNKNOWN_VAL
        if p.name in ("@", "*"):
            items = [self.st.arg0, *items]  # ${@:0} starts at $0
        if off < 0:
            off = max(0, len(items) + off)
        if length is not None and length < 0:
            return _UNKNOWN_VAL
        return _Val(items=items[off:] if length is None else items[off:off + length], star=base.star)

    def substring(self, p: Param, value: str) -> str:
        arg = self.one(p.arg) if p.arg is not None else ""
        off_text, colon, len_text = _split_colon(arg)
        try:
            off = evaluate_arith(off_text, self.st, self.string_of) if off_text.strip() else 0
            length = evaluate_arith(len_text, self.st, self.string_of) if colon else None
        except ArithUnknown:
            return UNKNOWN
        if UNKNOWN in value and not (off >= 0 and UNKNOWN not in value[: off + (length or 0)] and length is not None):
            return UNKNOWN
        n = len(value)
        if off < 0:
            off = max(0, n + off) if -off <= n else n + 1
        if off > n:
            return ""
        if length is None:
            return value[off:]
        end = off + length if length >= 0 else n + length
        return value[off:end] if end >= off else ""

    def at_op(self, p: Param, value: str) -> str:
        flag = p.arg.literal if p.arg is not None else None
        if flag == "U":
            return value.upper()
        if flag == "L":
            return value.lower()
        if flag == "u":
            return value[:1].upper() + value[1:]
        if flag == "Q":
            return "'" + value.replace("'", "'\\''") + "'"
        if flag == "E":
            from guard.parse.words import decode_ansi_c

            return decode_ansi_c(value)
        if flag == "P":
            # prompt expansion: the value's $…, `…` and $(…) are expanded (and run) again
            if UNKNOWN in value or self.hooks.lex is None:
                return UNKNOWN
            return self.one(self.hooks.lex('"' + value.replace('"', '\\"') + '"'))
        return UNKNOWN

    def pattern(self, word: Word | None, reverse: bool = False) -> re.Pattern[str] | None:
        """A bash pattern word (quoted parts literal) as a regex; None when it is unknown.
        ``reverse``: the regex of the pattern read backwards (it matches reversed text)."""
        if word is None:
            return re.compile("")
        segs = self.segments(word)
        if any(UNKNOWN in t for t, _ in segs):
            return None
        return pattern_regex(segs, reverse=reverse)

    # ------------------------------------------------------------------ words

    def one(self, word: Word | None) -> str:
        """A word without splitting or globbing (assignment values, patterns' replacement)."""
        if word is None:
            return ""
        return "".join(t for t, _ in self.segments(word))

    def segments(self, word: Word) -> list[Seg]:
        """The segments of a word expanded as one field (no splitting, no globbing)."""
        out = self.fields(word, split=False, glob=False, keep_segments=True)
        return out[0] if out else []

    def fields(self, word: Word, split: bool = True, glob: bool = True,
               keep_segments: bool = False, brace: bool = True) -> list:
        """The fields of ``word``: strings, or segment lists when ``keep_segments``."""
        variants = brace_expand(word.parts) if brace and split else [word.parts]
        out: list = []
        for parts in variants:
            out.extend(self._fields(parts, split, glob, keep_segments))
            if len(out) > MAX_FIELDS:
                break
        return out

    def _fields(self, parts: tuple, split: bool, glob: bool, keep_segments: bool) -> list:
        st = self.st
        ifs = ifs_of(st) if split else ""
        b = _Builder(ifs)
        n = len(parts)
        i = 0
        size = 0
        while i < n:
            part = parts[i]
            i += 1
            if isinstance(part, Lit):
                text = part.text
                if i == 1 and not part.quoted and text.startswith("~"):
                    text = self.tilde(text, n == 1)
                b.literal(text, part.quoted)
                continue
            if isinstance(part, Param):
                val = self.param(part)
                quoted = part.quoted
            elif isinstance(part, CmdSub):
                out = self.hooks.subst(part.script, st)
                val = _Val(UNKNOWN if out is None else out.rstrip("\n"))
                quoted = part.quoted
            elif isinstance(part, ProcSub):
                out = self.hooks.subst(part.script, st)
                if out is not None and part.direction == "<":
                    st.fx.files[PROCSUB_PATH] = out
                val, quoted = _Val(PROCSUB_PATH), True
            elif isinstance(part, Arith):
                # the command substitutions inside it follow it as parts: walk them, and the
                # value is unknown when it depends on them
                inner_subs = False
                while i < n and isinstance(parts[i], CmdSub) and parts[i].script.source in part.text:
                    self.hooks.subst(parts[i].script, st)
                    inner_subs = True
                    i += 1
                val = _Val(UNKNOWN if inner_subs else self.arith_text(_arith_body(part.text)))
                quoted = True
            else:  # pragma: no cover - future part kinds
                val, quoted = _UNKNOWN_VAL, True
            size += len(val.text or "") if val.items is None else sum(map(len, val.items))
            if size > WORD_CAP:  # past the cap the value is unknown: ``a=$a$a`` thirty times stays small
                val = _UNKNOWN_VAL
            if val.items is not None:
                if quoted and val.star:
                    b.literal(val.joined(st), True)
                elif quoted:
                    b.multi(val.items)
                elif split:
                    b.multi_split(val.items)
                else:
                    b.literal(val.joined(st), False, expansion=True)
                continue
            text = val.text or ""
            if quoted or not split:
                b.literal(text, True if quoted else False, expansion=not quoted)
            else:
                b.split(text)
        fields = b.finish()
        if keep_segments:
            return fields
        if glob and split and not st.noglob:
            return self.globbed(fields)
        return ["".join(t for t, _ in f) for f in fields]

    def globbed(self, fields: list[list[Seg]]) -> list[str]:
        out: list[str] = []
        for f in fields:
            text = "".join(t for t, _ in f)
            if UNKNOWN not in text and any(not q and _GLOB_CHARS.search(t) for t, q in f):
                matches = glob_fields(f, self.st.cwd, self.hooks.dirs)
                if matches:
                    out.extend(matches)
                    continue
            out.append(text)
        return out

    def tilde(self, text: str, whole: bool) -> str:
        """``~``, ``~/x``, ``~user/x``, ``~+``, ``~-`` at the start of a word."""
        slash = text.find("/")
        if slash < 0 and not whole:
            return text  # ~$x: the prefix runs into an expansion, bash leaves it
        prefix = text[1:] if slash < 0 else text[1:slash]
        rest = "" if slash < 0 else text[slash:]
        home = expand_user(prefix, self.st)
        return text if home is None else home.rstrip("/") + rest if rest else home


def expand_user(prefix: str, st: State) -> str | None:
    """The directory ``~prefix`` names, or None when bash would leave it as it is."""
    if prefix == "":
        h = st.vars.get("HOME")
        return h if isinstance(h, str) else "/root"
    if prefix == "+":
        return st.cwd
    if prefix == "-":
        old = st.vars.get("OLDPWD")
        return old if isinstance(old, str) else None
    if not all(c.isalnum() or c in "._-" for c in prefix):
        return None
    try:
        import pwd

        return pwd.getpwnam(prefix).pw_dir
    except (KeyError, ImportError, OSError):
        return None


def _arith_body(text: str) -> str:
    if text.startswith("$((") and text.endswith("))"):
        return text[3:-2]
    if text.startswith("$[") and text.endswith("]"):
        return text[2:-1]
    return text


# --------------------------------------------------------------------------- field building


class _Builder:
    """Collects segments into fields, splitting unquoted expansions on IFS as bash does."""

    __slots__ = ("ifs", "ws", "fields", "cur", "content")

    def __init__(self, ifs: str) -> None:
        self.ifs = ifs
        self.ws = "".join(c for c in ifs if c in " \t\n")
        self.fields: list[list[Seg]] = []
        self.cur: list[Seg] = []
        self.content = False  # quoted text or literal text makes a field even when empty

    def literal(self, text: str, protected: bool, expansion: bool = False) -> None:
        if text or not expansion:
            if text:
                self.cur.append((text, protected))
            if protected or text:
                self.content = True

    def end(self, force: bool = False) -> None:
        if self.content or self.cur or force:
            self.fields.append(self.cur)
        self.cur = []
        self.content = False

    def multi(self, items: list[str]) -> None:
        """``"$@"``: each item a field; the first joins what precedes, the last what follows."""
        if not items:
            return
        self.literal(items[0], True)
        self.content = True
        for item in items[1:]:
            self.end()
            self.literal(item, True)
            self.content = True

    def multi_split(self, items: list[str]) -> None:
        """Unquoted ``$@``: each item split on its own, items never joined."""
        for k, item in enumerate(items):
            if k:
                self.end()
            self.split(item)

    def split(self, text: str) -> None:
        if not text:
            return
        ifs = self.ifs
        if not ifs:
            self.literal(text, False, expansion=True)
            return
        ws = self.ws
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c not in ifs:
                j = i
                while j < n and text[j] not in ifs:
                    j += 1
                self.cur.append((text[i:j], False))
                self.content = True
                i = j
                continue
            # a delimiter: IFS white space around at most one other IFS character
            j = i
            while j < n and text[j] in ws:
                j += 1
            hard = False
            if j < n and text[j] in ifs and text[j] not in ws:
                hard = True
                j += 1
                while j < n and text[j] in ws:
                    j += 1
            if hard:
                self.end(force=True)
            elif self.content or self.cur:
                self.end()
            i = j

    def finish(self) -> list[list[Seg]]:
        self.end()
        return self.fields


# --------------------------------------------------------------------------- patterns


_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "xdigit": "0-9A-Fa-f", "word": "a-zA-Z0-9_", "cntrl": "\\x00-\\x1f\\x7f", "print": "\\x20-\\x7e",
    "graph": "\\x21-\\x7e",
}


def pattern_regex(segs: list[Seg], slash: bool = True, reverse: bool = False) -> re.Pattern[str]:
    """A bash pattern (``*``, ``?``, ``[…]``; protected text literal) as a compiled regex.
    ``slash`` False makes the wildcards stop at ``/`` (pathname expansion). ``reverse``: the
    pattern read backwards, one atom at a time (it matches the reversed strings)."""
    any_char = "." if slash else "[^/]"
    out: list[str] = []
    for text, protected in segs:
        if protected:
            if reverse:
                out.extend(re.escape(c) for c in text)
            else:
                out.append(re.escape(text))
            continue
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c == "*":
                out.append(any_char + "*")
            elif c == "?":
                out.append(any_char)
            elif c == "\\" and i + 1 < n:
                out.append(re.escape(text[i + 1]))
                i += 1
            elif c == "[":
                cls, end = _bracket(text, i)
                if cls is None:
                    out.append(re.escape(c))
                else:
                    out.append(cls)
                    i = end
                    continue
            else:
                out.append(re.escape(c))
            i += 1
    if reverse:
        out.reverse()
    try:
        return re.compile("".join(out), re.S)
    except re.error:
        text = "".join(t for t, _ in segs)
        return re.compile(re.escape(text[::-1] if reverse else text), re.S)


def _bracket(text: str, i: int) -> tuple[str | None, int]:
    """``text[i] == '['``: the regex class and the index after ``]``, or (None, i)."""
    j = i + 1
    neg = False
    if j < len(text) and text[j] in "!^":
        neg = True
        j += 1
    items: list[str] = []
    first = True
    while j < len(text):
        c = text[j]
        if c == "]" and not first:
            body = "".join(items)
            return f"[{'^' if neg else ''}{body}]", j + 1
        first = False
        if c == "[" and text.startswith("[:", j):
            k = text.find(":]", j + 2)
            if k > 0 and text[j + 2:k] in _CLASSES:
                items.append(_CLASSES[text[j + 2:k]])
                j = k + 2
                continue
        if c == "-" and items and j + 1 < len(text) and text[j + 1] != "]":
            items.append("-")
        elif c == "\\" and j + 1 < len(text):
            items.append(re.escape(text[j + 1]))
            j += 1
        else:
            items.append(re.escape(c) if c not in "-" else "\\-")
        j += 1
    return None, i


def _case(value: str, op: str, pat: re.Pattern[str] | None) -> str:
    def ok(ch: str) -> bool:
        return pat is None or pat.pattern == "" or pat.fullmatch(ch) is not None

    conv = str.upper if op.startswith("^") else str.lower
    if len(op) == 2:
        return "".join(conv(c) if ok(c) else c for c in value)
    return (conv(value[0]) if ok(value[0]) else value[0]) + value[1:] if value else value


# Pattern removal and substitution (``${x#p}``, ``${x//p/r}``) on a known value: a pattern of one
# width is tried once per place (linear); otherwise the regex's own match at the start is the
# answer, greedy for the longest (for a glob, fixed-width atoms and ``.*``, that is the longest)
# and lazy for the shortest, and a suffix is matched as a prefix of the reversed value with the
# reversed pattern. Only ``/`` and ``//`` with a pattern of varying width try place after place:
# they stop once the places tried add up to STEP_BUDGET characters, and say so (``_OverBudget``).
STEP_BUDGET = 20_000_000


class _OverBudget(Exception):
    pass


_widths: dict[tuple[str, int], tuple[int, int]] = {}
_lazy: dict[tuple[str, int], re.Pattern[str]] = {}


def _width(pat: re.Pattern[str]) -> tuple[int, int]:
    """The least and most characters ``pat`` can match (most: a large number for ``.*``)."""
    key = (pat.pattern, pat.flags)
    w = _widths.get(key)
    if w is None:
        from re import _parser  # type: ignore[attr-defined]

        try:
            lo, hi = _parser.parse(pat.pattern, pat.flags).getwidth()
        except Exception:  # noqa: BLE001 - unknown: treated as variable
            lo, hi = 0, 1 << 30
        w = _widths[key] = (lo, min(hi, 1 << 30))
        if len(_widths) > 256:
            _widths.clear()
    return w


def _shortest(pat: re.Pattern[str]) -> re.Pattern[str]:
    """``pat`` with every ``.*`` lazy: its first match at a place is the shortest there."""
    key = (pat.pattern, pat.flags)
    lazy = _lazy.get(key)
    if lazy is None:
        lazy = _lazy[key] = re.compile(pat.pattern.replace(".*", ".*?"), pat.flags)
        if len(_lazy) > 256:
            _lazy.clear()
    return lazy


class _Steps:
    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = STEP_BUDGET

    def spend(self, n: int) -> None:
        self.left -= n + 1
        if self.left < 0:
            raise _OverBudget


def _strip(value: str, pat: re.Pattern[str], op: str) -> str:
    n = len(value)
    lo, hi = _width(pat)
    if lo == hi:  # one width: one place to try
        if lo > n:
            return value
        if op in ("#", "##"):
            return value[lo:] if pat.fullmatch(value, 0, lo) else value
        return value[: n - lo] if pat.fullmatch(value, n - lo, n) else value
    if op == "##":
        m = pat.match(value)
        return value[m.end():] if m else value
    if op == "#":
        m = _shortest(pat).match(value)
        return value[m.end():] if m else value
    steps = _Steps()
    rng = range(n - lo, -1, -1) if op == "%" else range(n - lo + 1)
    for k in rng:
        steps.spend(n - k)
        if pat.fullmatch(value, k, n):
            return value[:k]
    return value


def _replace(value: str, pat: re.Pattern[str], rep: str, op: str) -> str:
    n = len(value)
    lo, hi = _width(pat)
    steps = _Steps()
    if op == "/#":
        if lo == hi:
            return rep + value[lo:] if lo <= n and pat.fullmatch(value, 0, lo) else value
        m = pat.match(value)
        return rep + value[m.end():] if m else value
    if op == "/%":
        if lo == hi:
            return value[: n - lo] + rep if lo <= n and pat.fullmatch(value, n - lo, n) else value
        for k in range(n - lo + 1):
            steps.spend(n - k)
            if pat.fullmatch(value, k, n):
                return value[:k] + rep
        return value
    if n == 0:  # bash replaces an empty value that the pattern matches
        return rep if pat.fullmatch("") else value
    if hi == 0:  # only the empty string: bash replaces nothing
        return value
    out: list[str] = []
    i = start = 0
    fixed = lo == hi
    while i < n:
        if fixed:
            hit = i + lo if i + lo <= n and pat.fullmatch(value, i, i + lo) else None
        else:
            steps.spend(n - i)
            m = pat.match(value, i)  # greedy: the longest match at i
            hit = m.end() if m else None
        if hit is None or hit == i:  # no match here, or an empty one (bash does not replace it)
            i += 1
            continue
        out.append(value[start:i])
        out.append(rep)
        i = start = hit
        if op == "/":
            break
    out.append(value[start:])
    return "".join(out)


def _split_slash(word: Word | None) -> tuple[Word | None, Word | None]:
    """``${x/pat/rep}``'s argument split at its first unquoted ``/`` (outside brackets)."""
    if word is None:
        return None, None
    pat: list = []
    rep: list = []
    found = False
    for part in word.parts:
        if found:
            rep.append(part)
            continue
        if isinstance(part, Lit) and not part.quoted:
            k = _first_slash(part.text)
            if k >= 0:
                if k:
                    pat.append(Lit(part.text[:k]))
                if part.text[k + 1:]:
                    rep.append(Lit(part.text[k + 1:]))
                found = True
                continue
        pat.append(part)
    return (Word(word.raw, tuple(pat), word.pos),
            Word(word.raw, tuple(rep), word.pos) if found else None)


def _first_slash(text: str) -> int:
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "/":
            return i
        i += 1
    return -1


def _split_colon(text: str) -> tuple[str, bool, str]:
    """``1:2`` → ("1", True, "2"); a ``?:`` inside the offset is left to arithmetic."""
    depth = 0
    for k, c in enumerate(text):
        if c == "?":
            depth += 1
        elif c == ":":
            if depth:
                depth -= 1
            else:
                return text[:k], True, text[k + 1:]
    return text, False, ""


# --------------------------------------------------------------------------- brace expansion


def brace_expand(parts: tuple) -> list[tuple]:
    """Bash's brace expansion over a word's parts: only unquoted literal ``{``, ``,`` and ``}``
    count, everything else (quotes, ``$x``, ``$(…)``) is carried along as it is."""
    if not any(isinstance(p, Lit) and not p.quoted and "{" in p.text and "}" in p.text for p in parts):
        if not _braces_across(parts):
            return [parts]
    toks: list = []
    for p in parts:
        if isinstance(p, Lit) and not p.quoted:
            toks.extend(p.text)
        else:
            toks.append(p)
    results = _brace(toks, 0)
    if len(results) == 1 and results[0] == toks:
        return [parts]
    return [_regroup(r) for r in results[:MAX_FIELDS]]


def _braces_across(parts: tuple) -> bool:
    opened = False
    for p in parts:
        if isinstance(p, Lit) and not p.quoted:
            if "{" in p.text:
                opened = True
            if opened and "}" in p.text:
                return True
    return False


def _regroup(toks: list) -> tuple:
    out: list = []
    buf: list[str] = []
    for t in toks:
        if isinstance(t, str):
            buf.append(t)
            continue
        if buf:
            out.append(Lit("".join(buf)))
            buf = []
        out.append(t)
    if buf:
        out.append(Lit("".join(buf)))
    return tuple(out)


def _brace(toks: list, depth: int) -> list[list]:
    if depth > MAX_BRACE_DEPTH:
        return [toks]
    start = 0
    while True:
        i = _find(toks, "{", start)
        if i < 0:
            return [toks]
        if i > 0 and toks[i - 1] == "$":
            start = i + 1
            continue
        close, commas = _match_brace(toks, i)
        if close < 0:
            return [toks]
        pre, body, post = toks[:i], toks[i + 1:close], toks[close + 1:]
        if commas:
            alts: list[list] = []
            last = 0
            for c in commas:
                alts.append(body[last:c - i - 1])
                last = c - i
            alts.append(body[last:])
        else:
            seq = _sequence(body)
            if seq is None:
                start = i + 1
                continue
            alts = [list(s) for s in seq]
        posts = _brace(post, depth + 1)
        out: list[list] = []
        for alt in alts:
            for a in (_brace(alt, depth + 1) if commas else [alt]):
                for p in posts:
                    out.append(pre + a + p)
                    if len(out) > MAX_FIELDS:
                        return out
        return out


def _find(toks: list, ch: str, start: int) -> int:
    for k in range(start, len(toks)):
        if toks[k] == ch and (k == 0 or toks[k - 1] != "\\"):
            return k
    return -1


def _match_brace(toks: list, i: int) -> tuple[int, list[int]]:
    depth = 0
    commas: list[int] = []
    for k in range(i, len(toks)):
        t = toks[k]
        if t == "{" and not (k > 0 and toks[k - 1] == "$"):
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return k, commas
        elif t == "," and depth == 1:
            commas.append(k)
    return -1, []


_SEQ = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")


def _sequence(body: list) -> list[str] | None:
    if not all(isinstance(t, str) for t in body):
        return None
    m = _SEQ.match("".join(body))
    if not m:
        return None
    a, b, step_s = m.group(1), m.group(2), m.group(3)
    step = abs(int(step_s)) if step_s else 1
    step = step or 1
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        x, y = int(a), int(b)
        if abs(y - x) // step > MAX_FIELDS:
            return None
        width = max(len(a), len(b)) if (a.lstrip("-").startswith("0") and len(a.lstrip("-")) > 1) or (
            b.lstrip("-").startswith("0") and len(b.lstrip("-")) > 1) else 0
        rng = range(x, y + 1, step) if y >= x else range(x, y - 1, -step)
        return [str(v).zfill(width) if width and v >= 0 else
                ("-" + str(-v).zfill(width - 1) if width else str(v)) for v in rng]
    if len(a) == 1 and len(b) == 1 and a.isalpha() and b.isalpha():
        x, y = ord(a), ord(b)
        rng = range(x, y + 1, step) if y >= x else range(x, y - 1, -step)
        return [chr(v) for v in rng]
    return None


# --------------------------------------------------------------------------- pathname expansion


def glob_fields(segs: list[Seg], cwd: str, dirs: Dirs = REAL_DIRS) -> list[str]:
    """The paths a field's pattern matches on the file system ``dirs`` reads, sorted; [] for none."""
    text = "".join(t for t, _ in segs)
    absolute = text.startswith("/")
    # split segments into path components, keeping protection
    comps: list[list[Seg]] = [[]]
    for t, q in segs:
        pieces = t.split("/")
        for k, piece in enumerate(pieces):
            if k:
                comps.append([])
            if piece:
                comps[-1].append((piece, q))
    if absolute:
        comps = comps[1:]
    results = ["/" if absolute else ""]
    for k, comp in enumerate(comps):
        last = k == len(comps) - 1
        lit = "".join(t for t, _ in comp)
        if not any(not q and _GLOB_CHARS.search(t) for t, q in comp):
            results = [_join(r, _unescape(lit, comp)) for r in results]
            if not last:
                continue
            results = [r for r in results if dirs.lexists(_abs(r, cwd))]
            continue
        rx = pattern_regex(comp, slash=False)
        dot = lit.startswith(".") or (comp and comp[0][1] and comp[0][0].startswith("."))
        nxt: list[str] = []
        for r in results:
            try:
                names = dirs.listdir(_abs(r, cwd) if r else cwd)
            except OSError:
                continue
            for name in names:
                if name.startswith(".") and not dot:
                    continue
                if rx.fullmatch(name):
                    full = _join(r, name)
                    if last or dirs.isdir(_abs(full, cwd)):
                        nxt.append(full)
            if len(nxt) > MAX_FIELDS:
                break
        results = nxt
        if not results:
            return []
    return sorted(results)[:MAX_FIELDS] if results != ["/" if absolute else ""] else []


def _unescape(lit: str, comp: list[Seg]) -> str:
    if all(q for _, q in comp) or "\\" not in lit:
        return lit
    return "".join(t if q else _BACKSLASH_ESCAPE.sub(r"\1", t) for t, q in comp)


def _join(base: str, name: str) -> str:
    if not base:
        return name
    return base + name if base.endswith("/") else base + "/" + name


def _abs(path: str, cwd: str) -> str:
    return path if path.startswith("/") else os.path.join(cwd, path)


# --------------------------------------------------------------------------- entry points


def literal_field(word: Word) -> str | None:
    """The one field ``word`` expands to when it is a single literal that needs nothing looked
    up (no leading unquoted ``~``, no unquoted braces or glob characters), else None. Most words
    are (``-la``, ``src/x.py``, ``'a b'``); the walker takes them as they are."""
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Lit:
        lit = parts[0]
        text = lit.text
        if lit.quoted:
            return text
        plain = PLAIN_TEXT.get(text)
        if plain is None:
            plain = _NEEDS_WORK.search(text) is None
            if len(PLAIN_TEXT) < 8192:  # words recur from command to command (-la, head, src/)
                PLAIN_TEXT[text] = plain
        if plain:
            return text
    return None


PLAIN_TEXT: dict[str, bool] = {}  # unquoted literal text → holds none of ``_NEEDS_WORK``'s characters


def expand_word(
    word: Word, st: State, subst: SubstFn | Hooks, refs: list[str] | None = None, split: bool = True,
    lex: LexFn | None = None,
) -> list[str]:
    """The fields a word expands to. ``split`` False expands it as one field (no splitting,
    no brace or pathname expansion), as ``[[ … ]]`` and assignments do."""
    if split:
        field = literal_field(word)
        if field is not None:
            return [field]
    return Expander(st, _hooks(subst, lex), [] if refs is None else refs).fields(word, split=split)


def expand_one(word: Word, st: State, subst: SubstFn | Hooks, refs: list[str] | None = None,
               lex: LexFn | None = None, assign: bool = False) -> str:
    """A word expanded without splitting, as in an assignment or a redirect target. In an
    assignment (``assign``) a ``~`` after ``:`` is expanded too."""
    parts = word.parts
    if len(parts) == 1 and type(parts[0]) is Lit and (parts[0].quoted or "~" not in parts[0].text):
        return parts[0].text
    ex = Expander(st, _hooks(subst, lex), [] if refs is None else refs)
    out = ex.one(word)
    if assign and ":~" in out and parts and isinstance(parts[-1], Lit) and not parts[-1].quoted:
        out = ":".join(ex.tilde(p, True) if p.startswith("~") else p for p in out.split(":"))
    return out


def param_value(p: Param, st: State, subst: SubstFn | Hooks, refs: list[str]) -> list[str] | str:
    """The value of one parameter expansion: a string, or a list for ``"$@"``-like ones."""
    v = Expander(st, _hooks(subst), refs).param(p)
    return v.items if v.items is not None else (v.text or "")
