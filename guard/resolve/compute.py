"""Evaluate deterministic command substitutions without running anything.

``evaluate`` takes a pipeline of fully static argvs (``[("echo", "Z2l0"), ("base64", "-d")]``)
and returns the stdout it would produce, or ``None`` when any stage has side effects, reads
input from outside (files, the terminal, the environment), or is not one of the small set of
commands modelled here. Input and output are capped at ``MAX_BYTES``.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Callable

# Literal patterns, compiled at import (before the analysis server forks its workers).
_SHELL_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_BASE64_WRAP_FLAG = re.compile(r"-w\d+")
_BASE64_DECODE_FLAGS = re.compile(r"-[di]+")
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=]")
_LINE_BREAKS = re.compile(r"[\n\r]")
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_XXD_REVERSE_FLAGS = re.compile(r"-[rp]+")
_NOT_HEX = re.compile(r"[^0-9a-fA-F]")
_TR_FLAGS = re.compile(r"-[dscC]+")
_CUT_RANGE = re.compile(r"(\d*)-(\d*)|(\d+)")
_CUT_SHORT_OPTION = re.compile(r"-([bcfd])(.*)")
_CUT_LONG_OPTION = re.compile(r"--(bytes|characters|fields|delimiter)=(.*)")
_COUNT_SHORT_OPTION = re.compile(r"-([nc])(.*)")
_COUNT_LONG_OPTION = re.compile(r"--(lines|bytes)=(.*)")
_COUNT_OLD_STYLE = re.compile(r"-\d+")
_SIGNED_COUNT = re.compile(r"[+-]?\d+")
_PROGRAM_NAME = re.compile(r"[\w.+-]+")


MAX_BYTES = 1 << 20  # 1 MiB of input or output per stage

# Names `command -v` reports as themselves (builtins and keywords of bash).
_BUILTINS = frozenset(
    "alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs "
    "disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let "
    "local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt "
    "source suspend test times trap true type typeset ulimit umask unalias unset wait if then else "
    "elif fi case esac for select while until do done in function time coproc : . [ [[ ]] { }".split()
)

_Stage = Callable[[list[str], "str | None"], "str | None"]


class _Fail(Exception):
    """The stage cannot be evaluated statically."""


def evaluate(pipeline: list[tuple[str, ...]], stdin: str | None = None) -> str | None:
    """The stdout of a static pipeline, or None when it cannot be known without running it."""
    data = stdin
    if data is not None and len(data) > MAX_BYTES:
        return None
    if not pipeline:
        return None
    for argv in pipeline:
        if not argv:
            return None
        name = argv[0].rsplit("/", 1)[-1]
        fn = _COMMANDS.get(name)
        if fn is None:
            return None
        try:
            data = fn(list(argv[1:]), data)
        except (_Fail, ValueError, IndexError, OverflowError, UnicodeError, MemoryError, RecursionError):
            return None
        if data is None or len(data) > MAX_BYTES:
            return None
    return data


# --------------------------------------------------------------------------- escapes


_SIMPLE_ESC = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
               "t": "\t", "v": "\v", "\\": "\\"}


_HEX2 = re.compile(r"[0-9a-fA-F]{1,2}")
_HEX4 = re.compile(r"[0-9a-fA-F]{1,4}")
_HEX8 = re.compile(r"[0-9a-fA-F]{1,8}")
_OCT3 = re.compile(r"[0-7]{0,3}")
_OCT2 = re.compile(r"[0-7]{0,2}")


def _unescape(s: str, *, echo: bool, any_octal: bool = False) -> tuple[str, bool]:
    """Backslash escapes of ``echo -e`` / printf ``%b`` (echo=True) or a printf format.

    Returns the text and whether ``\\c`` asked to stop all further output.
    """
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        i += 2
        if e in _SIMPLE_ESC:
            out.append(_SIMPLE_ESC[e])
        elif e == "c":
            return "".join(out), True
        elif e == '"' and not echo:
            out.append('"')
        elif e == "'" and not echo:
            out.append("'")
        elif e == "x":
            m = _HEX2.match(s, i)
            if m:
                out.append(chr(int(m.group(), 16)))
                i = m.end()
            else:
                out.append("\\x")
        elif e in "uU":
            m = (_HEX4 if e == "u" else _HEX8).match(s, i)
            if m and int(m.group(), 16) < 0x110000:
                out.append(chr(int(m.group(), 16)))
                i = m.end()
            else:
                out.append("\\" + e)
        elif e == "0" and echo:
            m = _OCT3.match(s, i)
            out.append(chr(int(m.group() or "0", 8)))  # type: ignore[union-attr]
            i = m.end()  # type: ignore[union-attr]
        elif e in "01234567" and (not echo or any_octal):
            m = _OCT2.match(s, i)
            out.append(chr(int(e + m.group(), 8) & 0xFF))  # type: ignore[union-attr]
            i = m.end()  # type: ignore[union-attr]
        else:
            out.append("\\" + e)
    return "".join(out), False


# --------------------------------------------------------------------------- echo / printf


_ECHO_FLAGS = re.compile(r"-[neE]+")


def _echo(args: list[str], _stdin: str | None) -> str:
    newline, escapes = True, False
    while args and _ECHO_FLAGS.fullmatch(args[0]):
        for flag in args[0][1:]:
            if flag == "n":
                newline = False
            elif flag == "e":
                escapes = True
            else:
                escapes = False
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text, stop = _unescape(text, echo=True)
        if stop:
            return text
    return text + ("\n" if newline else "")


_SPEC_RE = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*)?)?([diouxXcsbqfeEgG%])")


def _printf(args: list[str], _stdin: str | None) -> str:
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise _Fail
    if args[0].startswith("-") and args[0] != "-":
        raise _Fail  # -v VAR assigns a variable: a side effect
    fmt, rest = args[0], args[1:]
    out: list[str] = []
    total = 0
    start = 0
    while True:
        consumed, text, stop = _printf_once(fmt, rest, start)
        out.append(text)
        total += len(text)
        if total > MAX_BYTES:
            raise _Fail
        if stop:
            break
        start += consumed
        if consumed == 0 or start >= len(rest):
            break
    return "".join(out)


def _printf_once(fmt: str, args: list[str], start: int) -> tuple[int, str, bool]:
    """One pass of the format over args[start:]: (arguments used, text, stop requested)."""
    out: list[str] = []
    used = 0
    pos = 0

    def take() -> str | None:
        nonlocal used
        if start + used < len(args):
            used += 1
            return args[start + used - 1]
        return None

    for m in _SPEC_RE.finditer(fmt):
        lit, stop = _unescape(fmt[pos : m.start()], echo=False)
        out.append(lit)
        if stop:
            return used, "".join(out), True
        pos = m.end()
        flags, width, prec, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if width == "*":
            width = str(_int(take() or "0"))
        if prec == "*":
            prec = str(_int(take() or "0"))
        if abs(int(width or 0)) > MAX_BYTES or int(prec or 0) > MAX_BYTES:
            raise _Fail  # printf '%0900000000d': more output than a stage may give
        arg = take()
        spec = "%" + flags + (width or "") + ("." + prec if prec is not None else "")
        if conv == "s":
            out.append((spec + "s") % (arg or ""))
        elif conv == "b":
            text, stop = _unescape(arg or "", echo=True, any_octal=True)
            out.append((spec + "s") % text)
            if stop:
                return used, "".join(out), True
        elif conv == "q":
            out.append((spec + "s") % _shell_quote(arg if arg is not None else ""))
        elif conv == "c":
            out.append((spec + "s") % (arg or "")[:1])
        elif conv in "diouxX":
            value = _int(arg or "0")
            c = "d" if conv in "iu" else conv
            out.append((spec + c) % value)
        else:
            try:
                value_f = float(arg or "0")
            except ValueError:
                raise _Fail from None
            out.append((spec + conv) % value_f)
        if sum(len(x) for x in out) > MAX_BYTES:
            raise _Fail
    lit, stop = _unescape(fmt[pos:], echo=False)
    out.append(lit)
    return used, "".join(out), stop


def _int(text: str) -> int:
    t = text.strip()
    if len(t) >= 2 and t[0] in "'\"":
        return ord(t[1])  # printf '%d' "'A" → 65
    m = _SHELL_INT.fullmatch(t)
    if not m:
        raise _Fail  # bash prints an error: not deterministic output we model
    sign, digits = m.groups()
    if digits.lower().startswith("0x"):
        v = int(digits, 16)
    elif digits.startswith("0") and len(digits) > 1:
        v = int(digits, 8)
    else:
        v = int(digits)
    if abs(v) >= 1 << 64:
        raise _Fail
    return -v if sign == "-" else v


_SAFE_Q = set(string.ascii_letters + string.digits + "@%_-+=:,./")


def _shell_quote(s: str) -> str:
    """bash's ``printf %q``: backslash-escape, ``''`` for empty, ``$'…'`` for control chars."""
    if s == "":
        return "''"
    if any(ord(c) < 32 or ord(c) == 127 for c in s):
        body = []
        for c in s:
            if c in "\\'":
                body.append("\\" + c)
            elif c == "\n":
                body.append("\\n")
            elif c == "\t":
                body.append("\\t")
            elif c == "\r":
                body.append("\\r")
            elif c == "\x1b":
                body.append("\\E")
            elif ord(c) < 32 or ord(c) == 127:
                body.append(f"\\{ord(c):03o}")
            else:
                body.append(c)
        return "$'" + "".join(body) + "'"
    out = []
    for i, c in enumerate(s):
        if c in _SAFE_Q or ord(c) > 127:
            out.append(c)
        elif c == "~" and i != 0:
            out.append(c)
        else:
            out.append("\\" + c)
    return "".join(out)


# --------------------------------------------------------------------------- stdin filters


def _need(stdin: str | None) -> str:
    if stdin is None:
        raise _Fail  # would read the terminal or an unknown stream
    return stdin


def _no_files(args: list[str]) -> None:
    if any(a != "-" for a in args):
        raise _Fail  # reads a file


def _base64(args: list[str], stdin: str | None) -> str:
    decode = False
    ignore_garbage = False
    wrap = 76
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in {"-d", "--decode", "-D"}:
            decode = True
        elif a in {"-i", "--ignore-garbage"}:
            ignore_garbage = True
        elif a == "-w" and i + 1 < len(args):
            wrap = int(args[i + 1])
            i += 1
        elif a.startswith("--wrap="):
            wrap = int(a.split("=", 1)[1])
        elif _BASE64_WRAP_FLAG.fullmatch(a):
            wrap = int(a[2:])
        elif _BASE64_DECODE_FLAGS.fullmatch(a):
            decode = decode or "d" in a
            ignore_garbage = ignore_garbage or "i" in a
        elif a.startswith("-") and a != "-":
            raise _Fail
        else:
            rest.append(a)
        i += 1
    _no_files(rest)
    text = _need(stdin)
    if decode:
        if ignore_garbage:
            data = _NOT_BASE64.sub("", text)
        else:
            data = _LINE_BREAKS.sub("", text)
            if not _BASE64_TEXT.fullmatch(data):
                raise _Fail  # base64: invalid input
        try:
            raw = base64.b64decode(data + "=" * (-len(data) % 4) if ignore_garbage else data, validate=True)
        except (binascii.Error, ValueError):
            raise _Fail from None
        return _text(raw)
    enc = base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")
    if wrap > 0:
        enc = "\n".join(enc[i : i + wrap] for i in range(0, len(enc), wrap))
    return enc + "\n" if enc else ""


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Fail from None  # binary output: not a command text we can use


def _xxd(args: list[str], stdin: str | None) -> str:
    flags = set()
    rest = []
    for a in args:
        if a in {"-r", "-revert"}:
            flags.add("r")
        elif a in {"-p", "-ps", "-postscript", "-plain"}:
            flags.add("p")
        elif _XXD_REVERSE_FLAGS.fullmatch(a):
            flags.update(a[1:])
        elif a.startswith("-") and a != "-":
            raise _Fail
        else:
            rest.append(a)
    _no_files(rest)
    text = _need(stdin)
    if flags == {"r", "p"}:
        hexdigits = _NOT_HEX.sub("", text)
        if len(hexdigits) % 2:
            hexdigits = hexdigits[:-1]
        return _text(bytes.fromhex(hexdigits))
    if flags == {"p"}:
        h = text.encode("utf-8", "surrogateescape").hex()
        return "".join(h[i : i + 60] + "\n" for i in range(0, len(h), 60))
    raise _Fail


def _lines(text: str) -> list[str]:
    """Split keeping the fact of a trailing newline: 'a\\nb\\n' → ['a\\n', 'b\\n']."""
    return text.splitlines(keepends=True) if text else []


def _rev(args: list[str], stdin: str | None) -> str:
    _no_files(args)
    out = []
    for line in _lines(_need(stdin)):
        body = line.rstrip("\n")
        out.append(body[::-1] + line[len(body) :])
    return "".join(out)


_CLASSES = {
    "alpha": string.ascii_letters,
    "upper": string.ascii_uppercase,
    "lower": string.ascii_lowercase,
    "digit": string.digits,
    "alnum": string.ascii_letters + string.digits,
    "space": " \t\n\r\v\f",
    "blank": " \t",
    "punct": string.punctuation,
    "xdigit": string.hexdigits,
    "cntrl": "".join(map(chr, range(32))) + "\x7f",
    "print": "".join(map(chr, range(32, 127))),
    "graph": "".join(map(chr, range(33, 127))),
}


_OCT13 = re.compile(r"[0-7]{1,3}")
_TR_CLASS = re.compile(r"\[:(\w+):\]")
_TR_REPEAT = re.compile(r"\[.\*\d*\]|\[=.=\]")


def _tr_set(spec: str) -> str:
    out: list[str] = []
    i, n = 0, len(spec)

    def one(j: int) -> tuple[str, int]:
        if spec[j] == "\\" and j + 1 < n:
            m = _OCT13.match(spec, j + 1)
            if m:
                return chr(int(m.group(), 8)), m.end()
            e = spec[j + 1]
            return _SIMPLE_ESC.get(e, e), j + 2
        return spec[j], j + 1

    while i < n:
        m = _TR_CLASS.match(spec, i)
        if m:
            if m.group(1) not in _CLASSES:
                raise _Fail
            out.append(_CLASSES[m.group(1)])
            i = m.end()
            continue
        if _TR_REPEAT.match(spec, i):
            raise _Fail  # repeats and equivalence classes: not modelled
        c, j = one(i)
        if j < n - 1 and spec[j] == "-":
            hi, k = one(j + 1)
            if ord(hi) < ord(c):
                raise _Fail  # tr: range-endpoints in reverse order
            if ord(hi) - ord(c) > 0x10000:
                raise _Fail
            out.append("".join(chr(x) for x in range(ord(c), ord(hi) + 1)))
            i = k
            continue
        out.append(c)
        i = j
    return "".join(out)


def _tr(args: list[str], stdin: str | None) -> str:
    delete = squeeze = complement = False
    sets: list[str] = []
    opts_done = False
    for a in args:
        if not opts_done and a == "--":
            opts_done = True
        elif not opts_done and _TR_FLAGS.fullmatch(a):
            delete = delete or "d" in a
            squeeze = squeeze or "s" in a
            complement = complement or "c" in a or "C" in a
        elif not opts_done and a.startswith("--"):
            long = {"--delete": "d", "--squeeze-repeats": "s", "--complement": "c"}.get(a)
            if long is None:
                raise _Fail
            delete, squeeze, complement = delete or long == "d", squeeze or long == "s", complement or long == "c"
        else:
            sets.append(a)
    text = _need(stdin)
    if not sets or len(sets) > 2:
        raise _Fail
    set1 = _tr_set(sets[0])
    set2 = _tr_set(sets[1]) if len(sets) == 2 else None
    if complement:
        if set2 is not None or not (delete or squeeze):
            raise _Fail
        keep = set(set1)
        if delete:
            text = "".join(c for c in text if c in keep)
        if squeeze:
            text = _squeeze(text, None, keep)
        return text
    if delete:
        text = text.translate({ord(c): None for c in set1})
        if squeeze:
            if set2 is None:
                raise _Fail
            text = _squeeze(text, set(set2), None)
        return text
    if set2 is None:
        if not squeeze:
            raise _Fail  # tr: missing operand
        return _squeeze(text, set(set1), None)
    if not set2:
        raise _Fail
    padded = set2 + set2[-1] * max(0, len(set1) - len(set2))
    table: dict[int, str] = {}
    for a, b in zip(set1, padded, strict=False):
        table[ord(a)] = b
    text = text.translate(table)
    if squeeze:
        text = _squeeze(text, set(set2), None)
    return text


def _squeeze(text: str, members: set[str] | None, not_members: set[str] | None) -> str:
    out: list[str] = []
    for c in text:
        inside = (members is not None and c in members) or (not_members is not None and c not in not_members)
        if out and inside and out[-1] == c:
            continue
        out.append(c)
    return "".join(out)


def _ranges(spec: str) -> list[tuple[int, int]]:
    out = []
    for part in spec.split(","):
        m = _CUT_RANGE.fullmatch(part)
        if not m or part == "-":
            raise _Fail
        if m.group(3):
            lo = hi = int(m.group(3))
        else:
            lo = int(m.group(1)) if m.group(1) else 1
            hi = int(m.group(2)) if m.group(2) else 1 << 30
        if lo < 1 or hi < lo:
            raise _Fail
        out.append((lo, hi))
    return out


def _selected(n: int, ranges: list[tuple[int, int]]) -> list[int]:
    return [i for i in range(1, n + 1) if any(lo <= i <= hi for lo, hi in ranges)]


def _cut(args: list[str], stdin: str | None) -> str:
    mode = None
    spec = ""
    delim = "\t"
    only_delimited = False
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        m = _CUT_SHORT_OPTION.fullmatch(a) or _CUT_LONG_OPTION.fullmatch(a)
        if a == "-s" or a == "--only-delimited":
            only_delimited = True
        elif m:
            key = m.group(1)[0]
            value = m.group(2)
            if value == "":
                if i + 1 >= len(args):
                    raise _Fail
                value = args[i + 1]
                i += 1
            if key == "d":
                if len(value) != 1:
                    raise _Fail
                delim = value
            else:
                if mode is not None:
                    raise _Fail
                mode, spec = ("c" if key in "bc" else "f"), value
        elif a.startswith("-") and a != "-":
            raise _Fail
        else:
            rest.append(a)
        i += 1
    _no_files(rest)
    if mode is None:
        raise _Fail
    ranges = _ranges(spec)
    out = []
    for line in _lines(_need(stdin)):
        body = line.rstrip("\n")
        if mode == "c":
            out.append("".join(body[j - 1] for j in _selected(len(body), ranges)) + "\n")
        else:
            if delim not in body:
                if not only_delimited:
                    out.append(body + "\n")
                continue
            fields = body.split(delim)
            out.append(delim.join(fields[j - 1] for j in _selected(len(fields), ranges)) + "\n")
    return "".join(out)


def _cat(args: list[str], stdin: str | None) -> str:
    _no_files(args)
    return _need(stdin)


def _count_arg(args: list[str]) -> tuple[str, str, list[str]]:
    """Parse head/tail options into (unit 'n'|'c', count text, other args)."""
    unit, count = "n", "10"
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        m = _COUNT_SHORT_OPTION.fullmatch(a) or _COUNT_LONG_OPTION.fullmatch(a)
        if m:
            unit = m.group(1)[0] if m.group(1) != "bytes" else "c"
            value = m.group(2)
            if value == "":
                if i + 1 >= len(args):
                    raise _Fail
                value = args[i + 1]
                i += 1
            count = value
        elif _COUNT_OLD_STYLE.fullmatch(a):
            unit, count = "n", a[1:]
        elif a in {"-q", "-s", "--quiet", "--silent"}:
            pass
        elif a.startswith("-") and a != "-":
            raise _Fail
        else:
            rest.append(a)
        i += 1
    if not _SIGNED_COUNT.fullmatch(count):
        raise _Fail
    return unit, count, rest


def _head(args: list[str], stdin: str | None) -> str:
    unit, count, rest = _count_arg(args)
    _no_files(rest)
    text = _need(stdin)
    n = int(count.lstrip("+"))
    items: list[str] = list(text) if unit == "c" else _lines(text)
    if count.startswith("-"):
        items = items[: max(0, len(items) - abs(n))]
    else:
        items = items[:n]
    return "".join(items)


def _tail(args: list[str], stdin: str | None) -> str:
    unit, count, rest = _count_arg(args)
    _no_files(rest)
    text = _need(stdin)
    items: list[str] = list(text) if unit == "c" else _lines(text)
    if count.startswith("+"):
        n = int(count[1:])
        return "".join(items[max(0, n - 1) :])
    n = abs(int(count))
    return "".join(items[len(items) - n :]) if n else ""


def _which(args: list[str], _stdin: str | None) -> str:
    names = [a for a in args if not a.startswith("-")]
    if any(a not in {"-a", "-s"} for a in args if a.startswith("-")) or not names:
        raise _Fail
    return "".join(_lookup(n, builtins=False) for n in names)


def _command(args: list[str], _stdin: str | None) -> str:
    if not args or args[0] not in {"-v", "-V"} or args[0] == "-V":
        raise _Fail  # plain `command X` runs X
    names = args[1:]
    if names and names[0] == "--":
        names = names[1:]
    if not names:
        raise _Fail
    return "".join(_lookup(n, builtins=True) for n in names)


def _lookup(name: str, *, builtins: bool) -> str:
    if "/" in name:
        return name + "\n"
    if not name or not _PROGRAM_NAME.fullmatch(name):
        raise _Fail
    if builtins and name in _BUILTINS:
        return name + "\n"
    return f"/usr/bin/{name}\n"


def _basename(args: list[str], _stdin: str | None) -> str:
    multiple = False
    suffix = ""
    names: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in {"-a", "--multiple"}:
            multiple = True
        elif a == "-s" and i + 1 < len(args):
            suffix, multiple = args[i + 1], True
            i += 1
        elif a.startswith("--suffix="):
            suffix, multiple = a.split("=", 1)[1], True
        elif a == "--":
            names.extend(args[i + 1 :])
            break
        elif a.startswith("-") and len(a) > 1:
            raise _Fail
        else:
            names.append(a)
        i += 1
    if not names:
        raise _Fail
    if not multiple:
        if len(names) > 2:
            raise _Fail
        if len(names) == 2:
            suffix = names[1]
        names = names[:1]
    out = []
    for n in names:
        b = n.rstrip("/") or ("/" if n.startswith("/") else "")
        if b != "/":
            b = b.rsplit("/", 1)[-1]
        if suffix and b.endswith(suffix) and b != suffix:
            b = b[: -len(suffix)]
        out.append(b + "\n")
    return "".join(out)


def _dirname(args: list[str], _stdin: str | None) -> str:
    names = [a for a in args if a != "--"]
    if not names or any(a.startswith("-") and len(a) > 1 for a in names):
        raise _Fail
    out = []
    for n in names:
        s = n.rstrip("/")
        if not s:
            out.append("/" if n.startswith("/") else ".")
        elif "/" not in s:
            out.append(".")
        else:
            d = s.rsplit("/", 1)[0].rstrip("/")
            out.append(d or "/")
    return "".join(x + "\n" for x in out)


def _empty(_args: list[str], _stdin: str | None) -> str:
    return ""


_COMMANDS: dict[str, _Stage] = {
    "echo": _echo,
    "printf": _printf,
    "base64": _base64,
    "xxd": _xxd,
    "rev": _rev,
    "tr": _tr,
    "cut": _cut,
    "cat": _cat,
    "head": _head,
    "tail": _tail,
    "which": _which,
    "command": _command,
    "basename": _basename,
    "dirname": _dirname,
    "true": _empty,
    "false": _empty,
    ":": _empty,
}

SUPPORTED = frozenset(_COMMANDS)
