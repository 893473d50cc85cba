"""The commands a GNU sed script runs: ``e CMD``, ``e`` (the pattern space) and ``s/RE/REPL/e``
(the pattern space after the substitution).

Where sed's input is known (a here-string, a heredoc, a literal pipe) the pattern space is
computed line by line the way sed does: addresses by line number, ``s`` with basic or extended
regular expressions translated to Python's, ``&`` and ``\\1``…``\\9`` in the replacement, the
``g``/``N``/``I`` flags. Where the input is not known, ``s/^.*$/CMD/e`` still runs CMD (the whole
line is replaced), ``s/^/CMD /e`` runs CMD followed by the unknown line, and anything else is text
built at run time (``None``).
"""

from __future__ import annotations

import re

from guard.ir import UNKNOWN

# Literal patterns, compiled at import (before the analysis server forks its workers).
_SED_COMMAND_BREAK = re.compile(r"[;\n]")
_SED_SUBST_FLAGS = re.compile(r"[gpIiMme0-9]*")
_SED_REPLACEMENT_REF = re.compile(r"(?<!\\)(?:&|\\[1-9])")


MAX_LINES = 200

# GNU sed skips the blanks after ``e``, and needs none: ``1e./q.sh`` runs ./q.sh.
_EXEC = re.compile(r"^\s*(?:(\d+|\$|/[^/]*/)(?:\s*,\s*(\d+|\$|/[^/]*/))?)?\s*(!?)\s*e(?:\s*(\S.*)|\s*)$")
_SUBST = re.compile(r"^\s*(?:(\d+|\$|/[^/]*/)\s*)?s(.)")


def sed_commands(argv: tuple[str, ...], stdin: str | None) -> list[tuple[str, str | None]]:
    """(label, command) for each command the sed invocation runs; command None when it is text
    built at run time."""
    scripts, ere = _scripts(argv)
    if not any("e" in script for script in scripts):
        return []  # both ways to run a command (the e command, the s///e flag) spell an e
    lines = None
    if stdin is not None and not _has_file_operand(argv):
        lines = stdin.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = lines[:MAX_LINES]
    out: list[tuple[str, str | None]] = []
    for script in scripts:
        for line in _SED_COMMAND_BREAK.split(script):
            m = _EXEC.match(line)
            if m:
                if m.group(4):
                    out.append(("sed e", m.group(4)))
                elif lines is not None:
                    picked = _addressed(lines, m.group(1), m.group(2), bool(m.group(3)))
                    out.extend(("sed e", x) for x in picked)
                else:
                    out.append(("sed e", None))
                continue
            s = _subst(line) if _may_flag_e(line) else None
            if s is None or "e" not in s[3]:
                continue
            out.extend(("sed s///e", cmd) for cmd in _subst_runs(s, lines, ere))
    return out


def _scripts(argv: tuple[str, ...]) -> tuple[list[str], bool]:
    scripts: list[str] = []
    explicit = False
    ere = False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-e", "--expression") and i + 1 < len(argv):
            scripts.append(argv[i + 1])
            explicit = True
            i += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
            explicit = True
        elif a in ("-f", "--file", "-l", "--line-length"):
            i += 2
            explicit = explicit or a in ("-f", "--file")
            continue
        elif a in ("-E", "-r", "--regexp-extended") or (a.startswith("-") and not a.startswith("--") and
                                                          set(a[1:]) <= set("nsuzEr") and set(a[1:]) & {"E", "r"}):
            ere = True
        elif not a.startswith("-") and not explicit:
            scripts.append(a)
            explicit = True
        i += 1
    return scripts, ere


def _has_file_operand(argv: tuple[str, ...]) -> bool:
    """True when sed reads files rather than its standard input (the script is the first operand
    unless -e/-f gave it)."""
    operands = []
    explicit = False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-e", "--expression", "-f", "--file", "-l", "--line-length"):
            explicit = explicit or a not in ("-l", "--line-length")
            i += 2
            continue
        if a.startswith("--expression=") or a.startswith("--file="):
            explicit = True
        elif not a.startswith("-") or a == "-":
            operands.append(a)
        i += 1
    files = operands if explicit else operands[1:]
    return any(f != "-" for f in files)


def _addressed(lines: list[str], a1: str | None, a2: str | None, negate: bool) -> list[str]:
    def hit(n: int, addr: str) -> bool | None:
        if addr == "$":
            return n == len(lines)
        if addr.isdigit():
            return n == int(addr)
        return None  # a regex address: not followed, every line counts

    picked = []
    inside = False
    for n, text in enumerate(lines, start=1):
        if a1 is None:
            sel = True
        elif a2 is None:
            h = hit(n, a1)
            sel = True if h is None else h
        else:
            h1, h2 = hit(n, a1), hit(n, a2)
            if not inside and (h1 is None or h1):
                inside = True
                sel = True
                if h2 is not None and h2:
                    inside = False
            elif inside:
                sel = True
                if h2 is None or h2 or (a2.isdigit() and n >= int(a2)):
                    inside = False
            else:
                sel = False
        if sel != negate:
            picked.append(text)
    return picked


def _may_flag_e(line: str) -> bool:
    """False when ``line`` is no ``s`` command with an ``e`` among its flags, told without
    ``_subst``'s walk over every character (most s commands: s/foo/bar/g). The flags follow the
    second unescaped delimiter after the first, which is no earlier than the second occurrence
    of the delimiter's character."""
    m = _SUBST.match(line)
    if not m:
        return False
    delim = m.group(2)
    k = line.find(delim, m.end())
    k = line.find(delim, k + 1) if k >= 0 else -1
    return k >= 0 and "e" in line[k + 1 :]


def _subst(line: str) -> tuple[str | None, str, str, str] | None:
    """(address, regex, replacement, flags) of an ``s`` command, None when the line is not one."""
    m = _SUBST.match(line)
    if not m:
        return None
    delim = m.group(2)
    if delim in "\\\n":
        return None
    parts: list[str] = []
    buf: list[str] = []
    i = m.end()
    while i < len(line) and len(parts) < 2:
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            buf.append(line[i + 1] if line[i + 1] == delim else line[i : i + 2])
            i += 2
            continue
        if c == delim:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(c)
        i += 1
    if len(parts) < 2:
        return None
    flags = line[i:].strip()
    if not _SED_SUBST_FLAGS.fullmatch(flags):
        return None
    return m.group(1), parts[0], parts[1], flags


def _subst_runs(s: tuple[str | None, str, str, str], lines: list[str] | None, ere: bool) -> list[str | None]:
    addr, regex, repl, flags = s
    if lines is None:
        return [_unknown_line(regex, repl)]
    pattern = _python_regex(regex, ere)
    if pattern is None:
        return [None]
    try:
        rx = re.compile(pattern, re.I if ("I" in flags or "i" in flags) else 0)
    except re.error:
        return [None]
    nth = int("".join(ch for ch in flags if ch.isdigit()) or "1")
    every = "g" in flags
    picked = _addressed(lines, addr, None, False) if addr else lines
    out: list[str | None] = []
    for text in picked:
        count = 0
        result = []
        pos = 0
        done = False
        for mm in rx.finditer(text):
            count += 1
            if count < nth or (done and not every):
                continue
            result.append(text[pos : mm.start()])
            result.append(_expand(repl, mm))
            pos = mm.end()
            done = True
            if not every:
                break
        if done:
            result.append(text[pos:])
            out.append("".join(result))
    return out


def _unknown_line(regex: str, repl: str) -> str | None:
    """The command ``s/RE/REPL/e`` runs on a line that is not known."""
    if _SED_REPLACEMENT_REF.search(repl):
        return None
    text = repl.replace("\\n", "\n").replace("\\&", "&")
    if regex in ("^.*$", ".*", "^.*", ".*$"):
        return text
    if regex.startswith("^"):
        whole_tail = regex.endswith(".*$") or regex.endswith(".*")
        return text if whole_tail else text + UNKNOWN
    return None


def _python_regex(regex: str, ere: bool) -> str | None:
    """A POSIX basic (or, with -E, extended) regular expression as Python's; None if it uses what
    this translation does not cover (back-references, character classes it cannot map)."""
    out: list[str] = []
    i = 0
    n = len(regex)
    while i < n:
        c = regex[i]
        if c == "\\" and i + 1 < n:
            e = regex[i + 1]
            if e.isdigit():
                return None
            if not ere and e in "(){}+?|":
                out.append(e)
            elif e in "nt":
                out.append({"n": "\n", "t": "\t"}[e])
            else:
                out.append(re.escape(e))
            i += 2
            continue
        if c == "[":
            j = _bracket_end(regex, i)
            if j < 0:
                return None
            body = regex[i + 1 : j]
            neg = body.startswith("^")
            body = body[1:] if neg else body
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            for name, chars in _CLASSES.items():
                body = body.replace(f"\\[:{name}:]", chars)
            if "\\[:" in body or "\\[=" in body or "\\[." in body:
                return None
            out.append("[" + ("^" if neg else "") + body + "]")
            i = j + 1
            continue
        if not ere and c in "(){}+?|":
            out.append("\\" + c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
            "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f", "punct": "!-/:-@\\[-`{-~"}


def _bracket_end(regex: str, i: int) -> int:
    """The index of the ']' closing the bracket expression at regex[i], -1 if none does."""
    j = i + 1
    if regex[j : j + 1] == "^":
        j += 1
    if regex[j : j + 1] == "]":
        j += 1
    while j < len(regex):
        if regex.startswith(("[:", "[=", "[."), j):
            k = regex.find(regex[j + 1] + "]", j + 2)
            if k < 0:
                return -1
            j = k + 2
            continue
        if regex[j] == "]":
            return j
        j += 1
    return -1


def _expand(repl: str, m: re.Match[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(repl):
        c = repl[i]
        if c == "\\" and i + 1 < len(repl):
            e = repl[i + 1]
            if e.isdigit():
                out.append(m.group(int(e)) or "" if int(e) <= (m.re.groups or 0) else "")
            else:
                out.append({"n": "\n", "t": "\t"}.get(e, e))
            i += 2
            continue
        out.append(m.group(0) if c == "&" else c)
        i += 1
    return "".join(out)
