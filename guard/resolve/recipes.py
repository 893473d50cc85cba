"""Task runners that run commands from a recipe file: a program spec's ``recipes:``
(``rules/programs/recipes.yaml``) says which file the runner reads, which options and operands
name the file, its folder and the recipes, and the file's format. The file's text is what the
command wrote earlier (``written``), else the file on disk. Read-only, size-capped."""

from __future__ import annotations

import json
import re
import shlex

import guard.resolve.files as files
from guard.ir import UNKNOWN
from guard.record import dataclass, field
from guard.resolve import paths
from guard.resolve.projects import parse_makefile, shell_calls

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from collections.abc import Callable, Mapping

FILE_CAP = 512 * 1024
MAX_STEPS = 200


@dataclass(frozen=True, slots=True)
class Plan:
    """What a runner's argv selects: its recipe file (None: the spec's default names), the folder
    it looks in, the recipes named (empty: the default), and why it runs nothing or is unknown."""

    file: str | None
    folder: str
    names: tuple[str, ...]
    runs_nothing: bool = False
    unknown: str = ""


@dataclass(frozen=True, slots=True)
class Recipes:
    """The commands a runner would run: (label, shell line) in order, the folder they run in,
    and notes on what could not be known."""

    steps: tuple[tuple[str, str], ...]
    cwd: str
    notes: tuple[str, ...] = field(default_factory=tuple)


def _opts(spec: Mapping[str, object], key: str) -> tuple[str, ...]:
    got = spec.get(key) or ()
    return tuple(str(x) for x in got) if isinstance(got, list | tuple) else ()


def plan(spec: Mapping[str, object], argv: tuple[str, ...], cwd: str) -> Plan:
    """Read ``argv`` the way the spec says: file, folder and recipe-naming options, operands."""
    file_opt, dir_opt = _opts(spec, "file_option"), _opts(spec, "dir_option")
    name_opt, valued = _opts(spec, "names_option"), _opts(spec, "with_value")
    pairs, optional = _opts(spec, "two_values"), _opts(spec, "optional_number")
    short = frozenset(o for o in (*file_opt, *dir_opt, *name_opt, *valued) if len(o) == 2)
    assignments = bool(spec.get("assignments"))
    quiet, unknown_opt = _opts(spec, "runs_nothing"), _opts(spec, "unknown_option")
    given = spec.get("operands", True)
    operands = given if isinstance(given, bool) else True
    most = None if isinstance(given, bool) or not isinstance(given, int) else given
    direct = _opts(spec, "recipe_operands")
    sub_seen = False
    mfile: str | None = None
    names: list[str] = []
    ops: list[str] = []
    unknown = ""
    nothing = False
    taking: str | None = None  # an option whose values are names until the next option
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        name, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
        if a[:2] in short and len(a) > 2 and not a.startswith("--"):  # -Cdir: the value attached
            name, eq, val = a[:2], "=", a[2:]
        has = eq or i + 1 < len(argv)
        value = val if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        step = 1 if eq else 2
        if name in file_opt and has:
            mfile, i = value, i + step
        elif name in dir_opt and has:
            cwd, i = paths.join(cwd, value), i + step
        elif name in name_opt and has:
            names.extend(n for n in value.split(",") if n)
            taking, i = name, i + step
        elif name in unknown_opt:
            unknown, i = f"{argv[0]} {name} selects recipes by a pattern", i + step
        elif name in valued and has:
            i += step
        elif name in pairs:
            i += 3
        elif name in optional:  # make -j [N]: the next word only when it is a number
            i += 2 if i + 1 < len(argv) and argv[i + 1].replace(".", "", 1).isdigit() else 1
        elif name in quiet:
            nothing, i = True, i + 1
        elif a.startswith("-") and a != "-":
            taking, i = None, i + 1
        else:
            first = not ops and not names and not sub_seen
            if first and a in _opts(spec, "runs_nothing_operands"):
                nothing = True
            elif first and a in _opts(spec, "subcommands"):
                sub_seen = True
            elif first and direct and a not in direct:
                nothing = True  # npm install: the runner's own command, no recipe
            elif assignments and re.match(r"[A-Za-z_][A-Za-z0-9_.]*\+?:?:?=", a):
                pass  # make VAR=value: a variable, not a target
            elif taking or operands:
                (names if taking else ops).append(a)
            i += 1
    return Plan(mfile, cwd, tuple(names + ops[:most]), nothing, unknown)


def _read(path: str, written: Mapping[str, str]) -> str | None:
    if UNKNOWN in path:
        return None
    if path in written:
        return files.strip_nul(written[path])
    return files.read_text(path, FILE_CAP)[0]


def find(spec: Mapping[str, object], p: Plan, written: Mapping[str, str]) -> tuple[str, str, str] | None:
    """The recipe file's path, text and name as the command gives it: the one named, or the
    first of the spec's names present in the folder. A folder named where a file is expected
    (``tox -c DIR``) is searched too where the spec says ``file_may_be_folder``. A file named
    ``-`` is standard input, read elsewhere (``programs.commands_read``)."""
    defaults = _opts(spec, "files")
    if p.file == "-":
        return None
    if p.file is not None:
        path = paths.join(p.folder, p.file)
        text = _read(path, written)
        if text is not None:
            return path, text, p.file
        if not spec.get("file_may_be_folder"):
            return None
        candidates = [(paths.join(path, n), f"{p.file.rstrip('/')}/{n}") for n in defaults]
    else:
        candidates = [(paths.join(p.folder, n), n) for n in defaults]
    for path, shown in candidates:
        text = _read(path, written)
        if text is not None:
            return path, text, shown
    return None


def recipes(
    spec: Mapping[str, object], argv: tuple[str, ...], cwd: str, written: Mapping[str, str]
) -> Recipes | None:
    """The commands ``argv`` runs from its recipe file, or None when it has none to read (the
    file is neither written by the command nor on disk)."""
    p = plan(spec, argv, cwd)
    if p.runs_nothing:
        return Recipes((), p.folder)
    if p.unknown:
        return Recipes((), p.folder, (p.unknown,))
    got = find(spec, p, written)
    if got is None:
        return None
    path, text, shown = got
    reader = FORMATS.get(str(spec.get("format")))
    if reader is None:
        return None
    steps, notes = reader(text, p.names, shown, argv[0].rsplit("/", 1)[-1])
    run_in = (path.rsplit("/", 1)[0] or "/") if spec.get("runs_in") == "file" else p.folder
    return Recipes(tuple(steps[:MAX_STEPS]), run_in, tuple(notes))


def _missing(shown: str, name: str) -> str:
    return f"{shown}: no recipe {name!r} found, not analysed"


# ---------------------------------------------------------------------------- just

_JUST_NAME = re.compile(r"@?([A-Za-z_][A-Za-z0-9_-]*)")
_JUST_SKIP = re.compile(r"^(set|export|alias|import|mod)\b|^[A-Za-z_][A-Za-z0-9_-]*\s*:=")


def _just_head(line: str) -> tuple[str, list[str], list[str]] | None:
    """A recipe line ``NAME PARAM… : DEP…``: its name, parameters and dependencies; the colon
    that ends it is the first one outside quotes and not part of ``:=``."""
    m = _JUST_NAME.match(line)
    if m is None:
        return None
    quote = ""
    for k in range(m.end(), len(line)):
        c = line[k]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == ":" and line[k + 1 : k + 2] != "=":
            params = shlex.split(line[m.end() : k], posix=True) if "#" not in line[:k] else []
            deps = [
                d
                for d in line[k + 1 :].split("#", 1)[0].split()
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", d)
            ]
            return m.group(1), params, deps
    return None


def just(text: str, names: tuple[str, ...], shown: str, prog: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A justfile: ``NAME [PARAMS]: [DEPS]`` at the margin, its body indented beneath; the
    default recipe is the first. The operands are a recipe and the arguments its parameters
    take, then the next recipe; ``NAME=VALUE`` before them sets a variable. Dependencies run
    first. ``{{…}}`` interpolation is left as is."""
    rules: dict[str, tuple[list[str], list[tuple[int, str]]]] = {}
    params: dict[str, list[str]] = {}
    order: list[str] = []
    current: str | None = None
    for n, line in enumerate(text.split("\n"), start=1):
        if line[:1] in (" ", "\t"):
            if current is not None and line.strip() and not line.strip().startswith("#"):
                rules[current][1].append((n, line.strip().lstrip("@-").strip()))
            continue
        current = None
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "[")) or _JUST_SKIP.match(stripped):
            continue
        try:
            head = _just_head(stripped)
        except ValueError:  # an unbalanced quote
            head = None
        if head:
            current, params[head[0]], deps = head
            rules[current] = (deps, [])
            order.append(current)
    chosen: list[str] = []
    words = [a for a in names if not (not chosen and "=" in a)]
    i = 0
    while i < len(words):
        name = words[i]
        chosen.append(name)
        if name not in rules:
            break  # _walk notes it; what follows cannot be read without it
        ps = [p.split("=", 1)[0] for p in params[name]]
        if any(p.startswith(("+", "*")) for p in ps):
            break
        i += 1 + len(ps)
    return _walk(rules, tuple(chosen) or tuple(order[:1]), prog, shown)


def _walk(
    rules: Mapping[str, tuple[list[str], list[tuple[int, str]]]],
    names: tuple[str, ...],
    prog: str,
    shown: str,
    quiet: bool = False,
) -> tuple[list[tuple[str, str]], list[str]]:
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    seen: set[str] = set()

    def visit(t: str, depth: int) -> None:
        if t in seen or depth > 30 or len(out) >= MAX_STEPS:
            return
        seen.add(t)
        deps, body = rules[t]
        for d in deps:
            if d in rules:
                visit(d, depth + 1)
        out.extend((f"{prog} {t} → {shown}:{n}", line) for n, line in body)

    for t in names:
        if t in rules:
            visit(t, 0)
        elif not quiet:
            notes.append(_missing(shown, t))
    return out, notes


# ---------------------------------------------------------------------------- make


def make(text: str, names: tuple[str, ...], shown: str, prog: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A makefile: each ``$(shell …)`` it holds (make runs those as it reads it), then the
    recipe lines of each target named (the first target when none), prerequisites first. A
    target with no rule of its own is left quietly: make may build it by an implicit rule."""
    out = [(f"make → {shown}: $(shell)", code) for code in shell_calls(text)][:MAX_STEPS]
    rules, first = parse_makefile(text)
    steps, notes = _walk(rules, names or ((first,) if first else ()), "make", shown, quiet=True)
    return out + steps, notes


# ---------------------------------------------------------------------------- Taskfile


def taskfile(
    text: str, names: tuple[str, ...], shown: str, prog: str
) -> tuple[list[tuple[str, str]], list[str]]:
    """A Taskfile (go-task): ``tasks: NAME: {cmds: […], deps: […]}``, a command being a string,
    ``{cmd: …}`` or ``{task: OTHER}``; a task given as a list or a string is its commands. The
    default task is ``default``."""
    import yaml  # only a Taskfile needs it: ~19 ms to import, paid by no other runner

    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return [], [f"{shown}: not valid YAML, not analysed"]
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, dict):
        return [], [f"{shown}: no tasks, not analysed"]
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    seen: set[str] = set()

    def visit(t: str, depth: int) -> None:
        if t in seen or depth > 30 or len(out) >= MAX_STEPS:
            return
        seen.add(t)
        body = tasks.get(t)
        if body is None:
            notes.append(_missing(shown, t))
            return
        cmds = body if isinstance(body, list | str) else body.get("cmds") if isinstance(body, dict) else None
        deps = body.get("deps") if isinstance(body, dict) else None
        for d in deps if isinstance(deps, list) else []:
            dep = d.get("task") if isinstance(d, dict) else d
            if isinstance(dep, str):
                visit(dep, depth + 1)
        for c in [cmds] if isinstance(cmds, str) else cmds if isinstance(cmds, list) else []:
            if isinstance(c, str):
                out.append((f"task {t} → {shown}", c))
            elif isinstance(c, dict) and isinstance(c.get("cmd"), str):
                out.append((f"task {t} → {shown}", c["cmd"]))
            elif isinstance(c, dict) and isinstance(c.get("task"), str):
                visit(c["task"], depth + 1)

    for t in names or ("default",):
        visit(t, 0)
    return out, notes


# ---------------------------------------------------------------------------- tox

_TOX_SUB = re.compile(r"\{posargs(?::([^{}]*))?\}|\[\]")


def tox(text: str, names: tuple[str, ...], shown: str, prog: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A tox.ini: each environment's ``commands_pre``, ``commands`` and ``commands_post`` (one
    command a line), from ``[testenv:NAME]`` or else ``[testenv]``; with no ``-e``, the
    environments ``[tox] envlist`` names. ``{posargs}`` becomes its default."""
    import configparser

    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cp.read_string(text)
    except configparser.Error:
        return [], [f"{shown}: not a valid ini file, not analysed"]
    if not names:
        listed = cp.get("tox", "env_list", fallback=None) or cp.get("tox", "envlist", fallback=None)
        if listed is None:
            names = ("py",)
        elif "{" in listed:
            return [], [f"{shown}: envlist built from factors, not analysed"]
        else:
            names = tuple(n for n in re.split(r"[\s,]+", listed) if n)
    out: list[tuple[str, str]] = []
    for env in names:
        section = f"testenv:{env}"
        for key in ("commands_pre", "commands", "commands_post"):
            if cp.has_option(section, key):
                value = cp.get(section, key)
            else:
                value = cp.get("testenv", key, fallback="")
            for line in value.split("\n"):
                line = _TOX_SUB.sub(lambda m: m.group(1) or "", line).strip()
                if line.startswith(("-", "!")):
                    line = line[1:].strip()
                if line and not line.startswith("#"):
                    out.append((f"tox -e {env} → {shown} {key}", line))
    return out, []


# ---------------------------------------------------------------------------- nox

_NOX_RUNS = frozenset({"run", "run_always", "run_install"})


def _is_session(dec: ast.expr) -> ast.Call | bool:
    import ast

    target = dec.func if isinstance(dec, ast.Call) else dec
    ok = (isinstance(target, ast.Attribute) and target.attr == "session") or (
        isinstance(target, ast.Name) and target.id == "session"
    )
    return (dec if isinstance(dec, ast.Call) else True) if ok else False


def nox(text: str, names: tuple[str, ...], shown: str, prog: str) -> tuple[list[tuple[str, str]], list[str]]:
    """A noxfile.py: each function decorated ``@nox.session`` (named by ``name=`` or the
    function) and its ``SESSION.run(…)`` calls, whose literal arguments are the argv. With no
    ``-s``, the sessions ``nox.options.sessions`` lists, else every session."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return [], [f"{shown}: not valid Python, not analysed"]
    sessions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    chosen: tuple[str, ...] | None = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for dec in node.decorator_list:
                got = _is_session(dec)
                if got is False:
                    continue
                name = node.name
                if isinstance(got, ast.Call):
                    for kw in got.keywords:
                        if (
                            kw.arg == "name"
                            and isinstance(kw.value, ast.Constant)
                            and isinstance(kw.value.value, str)
                        ):
                            name = kw.value.value
                sessions[name] = node
        elif isinstance(node, ast.Assign) and any(
            ast.unparse(t) == "nox.options.sessions" for t in node.targets
        ):
            try:
                listed = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                listed = None
            if isinstance(listed, list | tuple) and all(isinstance(x, str) for x in listed):
                chosen = tuple(listed)
    out: list[tuple[str, str]] = []
    notes: list[str] = []
    for name in names or chosen or tuple(sessions):
        fn = sessions.get(name)
        if fn is None:
            notes.append(_missing(shown, name))
            continue
        param = fn.args.args[0].arg if fn.args.args else None
        for call in ast.walk(fn):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in _NOX_RUNS
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == param
            ):
                continue
            words = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            label = f"nox -s {name} → {shown}:{call.lineno}"
            if len(words) != len(call.args) or not words:
                notes.append(
                    f"{label}: {param}.{call.func.attr} with arguments built at run time, not analysed"
                )
            else:
                out.append((label, shlex.join(words)))
    return out, notes


# ---------------------------------------------------------------------------- package.json


def package_json(
    text: str, names: tuple[str, ...], shown: str, prog: str
) -> tuple[list[tuple[str, str]], list[str]]:
    """A package.json's ``scripts``: the one named, with its ``pre`` and ``post`` scripts. No
    default; a name with no script is the runner's own error, said by it, so no note."""
    try:
        scripts = json.loads(text).get("scripts") or {}
    except (ValueError, AttributeError, RecursionError):
        return [], []
    if not isinstance(scripts, dict):
        return [], []
    out: list[tuple[str, str]] = []
    for name in names:
        for key in (f"pre{name}", name, f"post{name}"):
            code = scripts.get(key)
            if isinstance(code, str):
                out.append((f"{prog} run {key}", code))
    return out, []


# ---------------------------------------------------------------------------- dispatch

FORMATS: dict[str, Callable[[str, tuple[str, ...], str, str], tuple[list[tuple[str, str]], list[str]]]] = {
    "package-json": package_json,
    "make": make,
    "just": just,
    "taskfile": taskfile,
    "tox": tox,
    "nox": nox,
}
