"""Project runners that run commands from a file: ``npm|yarn|pnpm run X`` (package.json scripts),
and the makefile reading the catalogue's make entry uses (``guard.resolve.recipes``).
Read-only, size-capped."""

from __future__ import annotations

import json
import re

import guard.resolve.files as files
from guard.ir import UNKNOWN
from guard.resolve import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

FILE_CAP = 512 * 1024
NPM_SHORTCUTS = frozenset({"test", "start", "stop", "restart"})


def _read(path: str) -> str | None:
    if UNKNOWN in path:
        return None
    return files.read_text(path, FILE_CAP)[0]


def npm_scripts(argv: tuple[str, ...], cwd: str,
                written: Mapping[str, str] | None = None) -> list[tuple[str, str]] | None:
    """[(label, shell code)] for ``npm run X`` / ``yarn X`` / ``pnpm X``, with pre/post scripts.
    A package.json the command wrote earlier (``written``: path → text) is read as written."""
    prog = argv[0].rsplit("/", 1)[-1]
    args: list[str] = []
    skip = False
    for a in argv[1:]:
        if skip:
            skip = False
        elif a in ("--prefix", "-C", "--cwd", "--dir", "--workspace", "-w", "--filter", "-F"):
            skip = True
        elif not a.startswith("-"):
            args.append(a)
    if not args:
        return None
    if args[0] in ("run", "run-script"):
        if len(args) < 2:
            return None
        name = args[1]
    elif prog == "npm" and args[0] in NPM_SHORTCUTS:
        name = args[0]
    elif prog in ("yarn", "pnpm") and args[0] not in ("add", "install", "remove", "init", "create", "dlx", "exec"):
        name = args[0]
    else:
        return None
    for j, a in enumerate(argv):
        if a in ("--prefix", "-C", "--cwd", "--dir") and j + 1 < len(argv):
            cwd = paths.join(cwd, argv[j + 1])
    path = cwd.rstrip("/") + "/package.json"
    text = written[path] if written and path in written else _read(path)
    if text is None:
        return None
    try:
        scripts = json.loads(text).get("scripts") or {}
    except (ValueError, AttributeError):
        return None
    if not isinstance(scripts, dict):
        return None
    out = []
    for key in (f"pre{name}", name, f"post{name}"):
        code = scripts.get(key)
        if isinstance(code, str):
            out.append((f"{prog} run {key}", code))
    return out or None


VAR_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::?:=|\?=|=)\s*(.*)$", re.M)
MAKEVAR_RE = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]")


def _expand_vars(line: str, variables: dict[str, str]) -> str:
    for _ in range(3):
        new = MAKEVAR_RE.sub(lambda m: variables.get(m.group(1), m.group(0)), line)
        if new == line:
            break
        line = new
    return line


RULE_RE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*([^;#]*)")


_SHELL_CALL = re.compile(r"\$[({]shell\s+((?:[^()]|\([^()]*\))*)[)}]")


def shell_calls(text: str) -> list[str]:
    """The commands of each ``$(shell …)`` in a makefile (one level of parentheses inside)."""
    return [m.group(1).replace("$$", "$") for m in _SHELL_CALL.finditer(text.replace("\\\n", " "))]


def parse_makefile(text: str) -> tuple[dict[str, tuple[list[str], list[tuple[int, str]]]], str | None]:
    """Each rule's prerequisites and recipe lines (tab-led, or after ``;`` on the rule's line),
    by target; and the default target."""
    rules: dict[str, tuple[list[str], list[tuple[int, str]]]] = {}
    current: list[str] = []
    first = None
    lines = text.replace("\\\n", " ").split("\n")
    variables = {m.group(1): m.group(2).strip() for m in VAR_RE.finditer(text)}
    for n, line in enumerate(lines, start=1):
        if line.startswith("\t"):
            body = _expand_vars(line[1:].lstrip("@-+ \t"), variables)
            for t in current:
                rules[t][1].append((n, body.replace("$$", "$")))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = RULE_RE.match(line)
        if m and not line.lstrip().startswith((".PHONY", "export ", "define ", "ifeq", "ifneq", "ifdef", "ifndef", "include", "-include")):
            names = m.group(1).split()
            prereqs = [p for p in m.group(2).split() if not p.startswith("$")]
            current = names
            for t in names:
                if t.startswith(".") and first is None and t != ".DEFAULT":
                    continue
                rules.setdefault(t, ([], []))[0].extend(prereqs)
                if first is None and not t.startswith(".") and "%" not in t:
                    first = t
            rest = line[m.end():].lstrip()
            if rest.startswith(";") and rest[1:].strip():  # "targets: prereqs ; recipe" on one line
                body = _expand_vars(rest[1:].lstrip("@-+ \t"), variables)
                for t in names:
                    if t in rules:
                        rules[t][1].append((n, body.replace("$$", "$")))
        else:
            current = []
    return rules, first
