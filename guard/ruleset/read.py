"""One rule file read with positions: its data, the line and column of every key and value, and
the ``Diagnostic`` every check reports (``file:line:column: field: what was expected``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Path_ = tuple[Any, ...]  # a path into a document: ("rules", 3, "match", "repo")



# =========================================================================== diagnostics


@dataclass(frozen=True)
class Diagnostic:
    """One mistake: ``file:line:column: field: what was expected``."""

    file: str
    line: int
    col: int
    field: str
    message: str
    kind: str
    severity: str = "error"  # or "warning"

    def __str__(self) -> str:
        loc = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        text = ("warning: " if self.severity == "warning" else "") + self.message
        return f"{loc}: {self.field}: {text}" if self.field else f"{loc}: {text}"


def field_name(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(c in it for c in short)


def did_you_mean(word: Any, choices: Iterable[str]) -> str:
    """``; did you mean 'x'?`` — an abbreviation or a misspelling of one of ``choices`` — or ""."""
    word, choices = str(word), list(choices)
    abbrev = [c for c in choices if len(word) >= 2 and c != word and _subsequence(word.lower(), c.lower())]
    close = difflib.get_close_matches(word, abbrev, n=1, cutoff=0.0) if abbrev else []
    close = close or difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


# =========================================================================== YAML with positions


@dataclass
class Doc:
    """One rule file: its data and where every key and value is (1-based line, column)."""

    path: Path | None
    name: str
    data: Any = None
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    problems: list[Diagnostic] = field(default_factory=list)

    def at(self, path: Path_, key: bool = False) -> tuple[int, int]:
        """Position of the value (or its key) at ``path``, else of the nearest enclosing one."""
        if key and path in self.keys:
            return self.keys[path]
        p = tuple(path)
        while p:
            if p in self.values:
                return self.values[p]
            p = p[:-1]
        return self.values.get((), (1, 1))

    def diag(self, path: Path_, message: str, kind: str, *, key: bool = False, severity: str = "error",
             field_path: Path_ | None = None) -> Diagnostic:
        line, col = self.at(path, key)
        return Diagnostic(self.name, line, col, field_name(field_path if field_path is not None else path),
                          message, kind, severity)


def read_doc(path: Path | None, name: str | None = None, *, text: str | None = None) -> Doc:
    """Read one YAML file (or ``text`` as the file ``name``). Syntax errors, tabs and duplicate
    keys become problems; never raises."""
    import yaml

    from guard.ruleset.layers import display

    doc = Doc(path, name or (display(path) if path is not None else "<rules>"))
    if text is None:
        try:
            text = path.read_text(encoding="utf-8") if path is not None else ""
        except (OSError, UnicodeDecodeError) as e:
            msg = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            doc.problems.append(Diagnostic(doc.name, 0, 0, "", f"cannot read the file: {msg}", "unreadable"))
            return doc
    tabs = _tab_lines(text)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        if line in tabs:
            doc.problems.append(Diagnostic(doc.name, line, tabs[line], "", "a tab in the indentation: YAML indents with spaces only", "tab"))
        else:
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            context = getattr(e, "context", None)
            text_ = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
            doc.problems.append(Diagnostic(doc.name, line, col, "", text_, "yaml-syntax"))
        return doc
    if root is None:
        return doc
    ctor = yaml.constructor.SafeConstructor()
    doc.data = _walk(root, (), doc, ctor, 0)
    return doc


def _tab_lines(text: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        lead = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in lead and line.strip() and not line.lstrip().startswith("#"):
            out[n] = lead.index("\t") + 1
    return out


def _walk(node: Any, path: Path_, doc: Doc, ctor: Any, depth: int) -> Any:
    import yaml

    doc.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if depth > 60:
        doc.problems.append(doc.diag(path, "nested too deeply", "wrong-type"))
        return None
    if isinstance(node, yaml.ScalarNode):
        try:
            v = ctor.construct_object(node)
        except yaml.YAMLError:
            v = node.value
        return v if isinstance(v, str | int | float | bool | type(None)) else node.value
    if isinstance(node, yaml.SequenceNode):
        return [_walk(n, (*path, i), doc, ctor, depth + 1) for i, n in enumerate(node.value)]
    out: dict[Any, Any] = {}
    try:
        ctor.flatten_mapping(node)  # merge keys (<<)
    except yaml.YAMLError as e:
        doc.problems.append(doc.diag(path, f"bad merge key: {getattr(e, 'problem', e)}", "yaml-syntax"))
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode):
            doc.values[(*path, "?")] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            doc.problems.append(doc.diag((*path, "?"), "a key must be a plain word", "wrong-type"))
            continue
        key = knode.value
        kp = (*path, key)
        kpos = (knode.start_mark.line + 1, knode.start_mark.column + 1)
        if key in out:
            first = doc.keys[kp][0]
            doc.keys[kp] = kpos
            doc.problems.append(doc.diag(kp, f"duplicate key (first at line {first}); YAML would keep only the last",
                                         "duplicate-key", key=True))
        doc.keys[kp] = kpos
        out[key] = _walk(vnode, kp, doc, ctor, depth + 1)
    return out
