"""Makefiles: each rule's prerequisites and recipe lines, and the ``$(shell …)`` calls, for the
catalogue's make entry (``guard.resolve.recipes``) and a makefile fed on standard input."""

from __future__ import annotations

import re

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
