"""A draft ``runs:`` entry for a wrapper, read from the program's own help text and manual.

``guard rules draft PROGRAM`` runs the program for its ``--help`` (and reads its manual) and hands
the text here; everything below is a pure function of that text. The draft is a starting point a
person reads and completes: what the text does not say plainly is listed as unclassified, never
guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# An option's value as help texts write it: <pid>, FILE, G_LIST, USER:GROUP, file_name after `=`.
_VALUE = re.compile(r"^(?:<[^>]+>|[A-Z][A-Z0-9_:|.,-]*(?:\.\.\.)?|\{[^}]+\})$")
# Where an option's head ends and its description starts: two spaces, a tab, " - " or " : ".
_DESC = re.compile(r"\s{2,}|\t| - | : ")
# The words a usage line writes for the command a wrapper runs.
_COMMAND = re.compile(r"^[\[<]*(?:command|program|prog|cmd|utility|program_name)\b", re.I)
# Options that name the folder the command runs in, or a shell command line.
_CWD_NAME = re.compile(r"^(?:-C|--(?:chdir|wd|workdir|working-directory|cwd))$")
_CWD_DESC = re.compile(r"working directory|change (?:the )?(?:current )?directory|directory to run", re.I)
_SHELL_NAME = re.compile(r"^(?:-c|--command|--shell-command)$")
_SHELL_DESC = re.compile(r"shell|command string|command line", re.I)
# A flag whose text says it changes the folder or reads the command as a shell line (chroot
# --skip-chdir, entr -s): a person decides (keep_cwd, shell_line_option, no_command …).
_FLAG_HINT = re.compile(r"working directory|\bshell\b|interpreter|\bSHELL\b", re.I)
_STANDARD = frozenset({"-h", "--help", "-V", "--version", "--usage", "-?"})


@dataclass(frozen=True, slots=True)
class Option:
    """One option line: its names, how many words its value takes, whether the value is optional
    (written ``[=VALUE]``: joined only), and its description."""

    names: tuple[str, ...]
    values: int = 0
    optional: bool = False
    text: str = ""


@dataclass(frozen=True, slots=True)
class Usage:
    """The usage line's reading: operands before the command, whether ``--`` may precede it,
    options the line shows with a value, and the line itself."""

    line: str
    operands: int
    operand_names: tuple[str, ...] = ()
    dashdash: bool = False
    with_value: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Draft:
    program: str
    source: str
    usage: Usage | None
    with_value: tuple[str, ...] = ()
    with_values: dict[str, int] = field(default_factory=dict)
    cwd_option: tuple[str, ...] = ()
    shell_option: tuple[str, ...] = ()
    unclassified: tuple[str, ...] = ()


def clean(text: str) -> str:
    """The text as a terminal shows it: overstrike (bold, underline) and colour codes removed."""
    text = re.sub(r".\x08", "", text)
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def is_text(data: bytes) -> bool:
    """Whether a program's output reads as text (not a binary, not another encoding's bytes)."""
    if not data.strip() or b"\0" in data:
        return False
    s = data.decode("utf-8", "replace")
    bad = sum(1 for ch in s if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\t\r\x08\x1b"))
    return bad <= len(s) // 50


def _head_words(head: str) -> list[str]:
    return [w for w in re.split(r"[\s,]+|\.\s+(?=-)", head.strip()) if w]


def option_line(line: str) -> Option | None:
    """The option a help line starts, or None: ``-t, --target <pid>  text``, ``--bind SRC DEST``,
    ``-k, --kill-after=DURATION``, ``-m, --mount[=<file>]``. Names on one line share the value."""
    s = line.strip()
    if not s.startswith("-") or s in ("-", "--") or s.startswith("-- "):
        return None
    parts = _DESC.split(s, maxsplit=1)
    head, text = parts[0], parts[1].strip() if len(parts) > 1 else ""
    names: list[str] = []
    values, optional = 0, False
    words = _head_words(head)
    for k, w in enumerate(words):
        if w.startswith("-") and len(w) > 1 and (w[1].isalnum() or w[1] == "-" and len(w) > 2):
            m = re.match(r"^(--?[A-Za-z0-9?][\w.-]*?)(\[?=.*|\[.*)?$", w)
            if not m:
                return None
            names.append(m.group(1))
            tail = m.group(2) or ""
            if tail.startswith("["):
                values, optional = 1, True
            elif tail.startswith("="):
                values, optional = 1, False
            continue
        if names and _VALUE.match(w.rstrip(",")) and not optional:
            values = values + 1 if values and not words[k - 1].startswith("-") else max(values, 1)
            continue
        if names and re.match(r"^\[[^\]]*\]$", w):  # -x [VALUE]: optional, joined only
            optional = True
            continue
        text = " ".join(words[k:]) + (" " + text if text else "")
        break
    if not names:
        return None
    return Option(tuple(names), values, optional, text.strip())


def options(text: str) -> list[Option]:
    """Every option line in a help text or manual section, in order, the first reading of a name
    kept (a manual repeats what --help says)."""
    out: list[Option] = []
    seen: set[str] = set()
    for line in text.splitlines():
        o = option_line(line)
        if o and not seen & set(o.names):
            seen.update(o.names)
            out.append(o)
        elif o is None and out and not out[-1].text and line[:1].isspace() and line.strip():
            last = out[-1]  # the description on the next line (coreutils, manuals)
            out[-1] = Option(last.names, last.values, last.optional, line.strip())
    return out


def _usage_lines(text: str, program: str) -> list[str]:
    name = re.escape(program.rsplit("/", 1)[-1])
    found = []
    for line in text.splitlines():
        m = re.match(rf"^\s*(?:usage:|or:)?\s*(?:\S*/)?{name}(\s.*)?$", line, re.I)
        if m:
            found.append((m.group(1) or "").strip())
    return found


def _opens(words: list[str], k: int) -> bool:
    """Whether ``words[k]`` stands alone or opens its bracket group: ``[COMMAND``, ``<program>``,
    ``COMMAND``; not ``command`` inside ``[ignored command line arguments]``."""
    depth = sum(w.count("[") - w.count("]") for w in words[:k])
    return depth <= 0 or words[k][:1] in "[<"


def usage(text: str, program: str) -> Usage | None:
    """The first usage line (``Usage: PROGRAM …``, a SYNOPSIS line) that shows a command word:
    what comes before it, options and option groups aside, is its operands."""
    for rest in _usage_lines(text, program):
        words = rest.split()
        at = next((k for k, w in enumerate(words) if _COMMAND.match(w) and _opens(words, k)), None)
        if at is None:
            continue
        operands: list[str] = []
        with_value: list[str] = []
        dashdash = False
        depth = 0
        for k, w in enumerate(words[:at]):
            opens, closes = w.count("["), w.count("]")
            inside = depth > 0 or (opens and w.startswith("["))
            depth = max(0, depth + opens - closes)
            bare = w.strip("[]").rstrip(".")
            if bare == "--":
                dashdash = True
            elif inside or re.match(r"(?i)^(options?|switches|flags)$", bare) or bare.upper() == "OPTION":
                continue
            elif bare.startswith("-"):
                continue
            elif k and words[k - 1].startswith("-") and not words[k - 1].startswith("["):
                with_value.append(words[k - 1])  # -f config_file: the option takes this word
            else:
                operands.append(bare)
        return Usage(rest, len(operands), tuple(operands), dashdash, tuple(with_value))
    return None


def section(manual: str, name: str) -> str:
    """One section of a formatted manual page (SYNOPSIS, OPTIONS), or ''."""
    out: list[str] = []
    inside = False
    for line in manual.splitlines():
        if re.match(r"^[A-Z][A-Z ]+$", line.rstrip()):
            inside = line.strip() == name
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def draft(program: str, help_text: str, manual: str = "", version: str = "") -> Draft:
    """The draft entry: options with a value, operands before the command, the folder and shell
    options, and what could not be classified."""
    help_text, manual = clean(help_text), clean(manual)
    opts = options(help_text + "\n" + section(manual, "OPTIONS") + "\n" + section(manual, "DESCRIPTION"))
    use = usage(help_text, program) or usage(section(manual, "SYNOPSIS"), program)
    with_value: list[str] = []
    with_values: dict[str, int] = {}
    cwd: list[str] = []
    shell: list[str] = []
    unclassified: list[str] = []
    for o in opts:
        if set(o.names) <= _STANDARD:
            continue
        label = ", ".join(o.names)
        if o.optional:
            unclassified.append(f"{label}: its value is optional, so only joined (=VALUE); not listed")
            continue
        if not o.values and _FLAG_HINT.search(o.text):
            unclassified.append(f"{label}: a flag about {_FLAG_HINT.search(o.text).group(0)}: read its text")
            continue
        if o.values == 1 and any(_SHELL_NAME.match(n) for n in o.names) and _SHELL_DESC.search(o.text):
            shell.extend(o.names)
            continue
        if o.values >= 1 and (any(_CWD_NAME.match(n) for n in o.names) or _CWD_DESC.search(o.text)):
            cwd.extend(o.names)
            if o.values > 1:
                unclassified.append(f"{label}: names a folder but takes {o.values} words")
        if o.values == 1:
            with_value.extend(o.names)
        elif o.values > 1:
            with_values.update(dict.fromkeys(o.names, o.values))
    for opt in use.with_value if use else ():
        if opt not in with_value and opt not in with_values:
            with_value.append(opt)
            unclassified.append(f"{opt}: takes a value in the usage line only")
    if use is None:
        unclassified.append("no usage line shows where the command sits: operands not counted")
    label = f"{program} --help" + (f" and {program}({_section_no(manual)}) manual" if manual.strip() else "")
    source = f"{label}, {version}" if version else f"{label}, version not shown"
    return Draft(
        program, source, use, tuple(with_value), with_values, tuple(cwd), tuple(shell), tuple(unclassified)
    )


def _section_no(manual: str) -> str:
    m = re.search(r"\((\d\w*)\)", manual.splitlines()[0] if manual.strip() else "")
    return m.group(1) if m else "1"


def version_line(text: str) -> str:
    """The first line of ``--version`` output (or of a help text) that names a version, or ''."""
    for line in clean(text).splitlines()[:5]:
        if re.search(r"\d+\.\d+", line):
            return line.strip()
    return ""


def _list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def render(d: Draft) -> str:
    """The draft as a program spec to paste under ``programs:`` (rules/README.md, "Program specs")."""
    lines = [
        f"  - program: {d.program}",
        "    description: TODO what it does, in one line",
        "    subcommand: false",
        "    runs:",
        f"      # source: {d.source}",
    ]
    if d.usage:
        lines.append(f"      # usage: {d.program} {d.usage.line}")
    if d.with_value:
        lines.append(f"      with_value: {_list(d.with_value)}")
    if d.with_values:
        lines.append("      with_values: {" + ", ".join(f"{k}: {v}" for k, v in d.with_values.items()) + "}")
    if d.usage and d.usage.operands:
        lines.append(
            f"      operands: {d.usage.operands}                 # {' '.join(d.usage.operand_names)}"
        )
    if d.cwd_option:
        lines.append(f"      cwd_option: {_list(d.cwd_option)}")
    if d.shell_option:
        lines.append(f"      shell_option: {_list(d.shell_option)}")
    if d.usage:
        where = f"after {d.usage.operands} operand(s)" if d.usage.operands else "the first operand"
        lines.append(
            f"      # the command: {where}" + ("; -- may end the options" if d.usage.dashdash else "")
        )
    for u in d.unclassified:
        lines.append(f"      # not classified: {u}")
    operands = " ".join(d.usage.operand_names) + " " if d.usage and d.usage.operands else ""
    lines += [
        "      examples:               # TODO check each against the real program",
        f'        - {{command: "{d.program} {operands}git status", runs: "git status"}}',
    ]
    return "\n".join(lines) + "\n"
