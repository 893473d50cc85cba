"""Task runners' recipe files (a program spec's ``recipes:``, rules/programs/recipes.yaml): the
recipes guard reads are the ones the real runner runs, in the folder it runs them in. Each
recipe touches a marker file; the runner is run for real where it is installed (make and npm,
and in CI tox and nox from Debian; ``just`` and ``task`` are read from their manuals when absent), and
the markers it made must be the markers guard's recipes would make."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze, rules_for
from guard.resolve.recipes import recipes

TOX = """\
[tox]
skipsdist = true
envlist = a, b
[testenv]
skip_install = true
allowlist_externals = touch
commands = touch ran-base
[testenv:a]
commands = touch ran-a
[testenv:b]
commands_pre = touch ran-bpre
commands =
    touch ran-b
    - touch ran-b2
"""

NOX = """\
import nox

nox.options.sessions = ["a"]


@nox.session(python=False)
def a(session):
    session.run("touch", "ran-a", external=True)


@nox.session(python=False, name="bee")
def b(s):
    s.run("touch", "ran-bee", external=True)
"""

NOX_ALL = NOX.replace('nox.options.sessions = ["a"]\n', "")

JUST = """\
set shell := ["bash", "-c"]

first: dep
    touch ran-first

dep:
    @touch ran-dep

other arg="x":
    touch ran-other
"""

TASK = """\
version: '3'
tasks:
  default:
    cmds: [touch ran-default]
  st:
    deps: [dep]
    cmds:
      - touch ran-st
      - task: other
  dep: touch ran-dep
  other:
    cmds:
      - cmd: touch ran-other
"""

MAKE = """\
first: dep
\ttouch ran-first
dep:
\t@touch ran-dep
other:
\ttouch ran-other
"""

PACKAGE = """\
{"scripts": {"prebuild": "touch ran-prebuild", "build": "touch ran-build", "test": "touch ran-test",
             "postinstall": "touch ran-postinstall"}}
"""

CASES = [
    ("npm", {"package.json": PACKAGE}, "npm run build -- extra", {"prebuild", "build"}, ""),
    ("npm", {"package.json": PACKAGE}, "npm test", {"test"}, ""),
    ("npm", {"sub/package.json": PACKAGE}, "npm --prefix sub run-script test", {"test"}, "sub"),
    ("make", {"Makefile": MAKE}, "make", {"dep", "first"}, ""),
    ("make", {"Makefile": MAKE}, "make CC=x other -j", {"other"}, ""),
    ("make", {"sub/Makefile": MAKE}, "make -C sub -j 2 dep", {"dep"}, "sub"),
    ("make", {"sub/x.mk": MAKE}, "make -f sub/x.mk other", {"other"}, ""),
    ("tox", {"tox.ini": TOX}, "tox -e b", {"bpre", "b", "b2"}, ""),
    ("tox", {"tox.ini": TOX}, "tox", {"a", "bpre", "b", "b2"}, ""),
    ("tox", {"tox.ini": TOX}, "tox -e a,b", {"a", "bpre", "b", "b2"}, ""),
    ("tox", {"sub/tox.ini": TOX}, "tox -c sub/tox.ini -e a", {"a"}, "sub"),
    ("tox", {"sub/tox.ini": TOX}, "tox -c sub -e a", {"a"}, "sub"),
    ("nox", {"noxfile.py": NOX}, "nox", {"a"}, ""),
    ("nox", {"noxfile.py": NOX_ALL}, "nox", {"a", "bee"}, ""),
    ("nox", {"noxfile.py": NOX}, "nox -s bee", {"bee"}, ""),
    ("nox", {"noxfile.py": NOX}, "nox --sessions a bee", {"a", "bee"}, ""),
    ("nox", {"sub/noxfile.py": NOX}, "nox -f sub/noxfile.py -s bee", {"bee"}, "sub"),
    ("just", {"justfile": JUST}, "just", {"dep", "first"}, ""),
    ("just", {"justfile": JUST}, "just other", {"other"}, ""),
    ("just", {"sub/justfile": JUST}, "just -f sub/justfile dep", {"dep"}, "sub"),
    ("task", {"Taskfile.yml": TASK}, "task", {"default"}, ""),
    ("task", {"Taskfile.yml": TASK}, "task st", {"dep", "st", "other"}, ""),
    ("task", {"sub/Taskfile.yml": TASK}, "task -d sub dep", {"dep"}, "sub"),
]


def _spec(program: str) -> dict:
    ctx = Context.from_environ(cwd="/", env={"PATH": "/usr/bin:/bin"}, trees=("/workspace",))
    return rules_for(ctx).programs[program]["recipes"]


def _write(tmp_path: Path, layout: dict[str, str]) -> None:
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


def _guard_markers(program: str, command: str, folder: Path, written: dict[str, str]) -> tuple[set[str], str]:
    got = recipes(_spec(program), tuple(shlex.split(command)), str(folder), written)
    assert got is not None, command
    marks = set()
    for _label, line in got.steps:
        words = shlex.split(line)
        assert words[0] == "touch", line
        marks.add(words[1].removeprefix("ran-"))
    return marks, _rel(got.cwd, folder)


def _rel(path: str | Path, base: Path) -> str:
    rel = os.path.relpath(path, base)
    return "" if rel == "." else rel


@pytest.mark.parametrize("program, layout, command, ran, where", CASES, ids=[c[2] for c in CASES])
def test_recipes_read_from_disk(tmp_path: Path, program, layout, command, ran, where) -> None:
    _write(tmp_path, layout)
    marks, cwd = _guard_markers(program, command, tmp_path, {})
    assert (marks, cwd) == (ran, where)


@pytest.mark.parametrize("program, layout, command, ran, where", CASES, ids=[c[2] for c in CASES])
def test_recipes_written_by_the_command(tmp_path: Path, program, layout, command, ran, where) -> None:
    written = {str(tmp_path / name): text for name, text in layout.items()}
    assert _guard_markers(program, command, tmp_path, written) == (ran, where)


@pytest.mark.parametrize("program, layout, command, ran, where", CASES, ids=[c[2] for c in CASES])
def test_the_real_runner_runs_the_same_recipes(tmp_path: Path, program, layout, command, ran, where) -> None:
    exe = shutil.which(program)
    if exe is None:
        pytest.skip(f"{program} is not installed")
    _write(tmp_path, layout)
    env = {**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1"}
    argv = [exe, *shlex.split(command)[1:]]
    proc = subprocess.run(
        argv,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    made = {p.name.removeprefix("ran-") for p in tmp_path.rglob("ran-*") if ".tox" not in p.parts}
    folders = {_rel(p.parent, tmp_path) for p in tmp_path.rglob("ran-*") if ".tox" not in p.parts}
    assert (made, folders) == (ran, {where})
    assert _guard_markers(program, command, tmp_path, {}) == (made, where)


def check(command: str, tmp_path: Path, cwd: str = "/workspace/app") -> object:
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    return analyze(command, Context.from_environ(cwd=cwd, env=env, trees=("/workspace",)))


@pytest.mark.parametrize(
    "command, via",
    [
        ("printf 'push:\\n\\tgit push\\n' > justfile && just push", "just push → justfile:2"),
        (
            "printf 'version: 3\\ntasks:\\n  st:\\n    cmds: [git push]\\n' > Taskfile.yml && task st",
            "task st → Taskfile.yml",
        ),
        (
            "printf '[testenv:st]\\ncommands = git push\\n' > tox.ini && tox -e st",
            "tox -e st → tox.ini commands",
        ),
        (
            'printf \'import nox\\n@nox.session\\ndef s(session):\\n    session.run("git", "push")\\n\' > noxfile.py'
            " && nox -s s",
            "nox -s s → noxfile.py:4",
        ),
        ("""printf '{"scripts": {"ship": "git push"}}' > package.json && npm run ship""", "npm run ship"),
    ],
)
def test_a_recipe_file_written_then_run_is_judged(tmp_path: Path, command: str, via: str) -> None:
    v = check(command, tmp_path)
    assert v.verdict == "refuse" and v.rule == "git-push", (v.verdict, v.rule, v.unresolved)
    assert [i.via for i in v.invocations if i.program == "git"] == [(via,)]


@pytest.mark.parametrize(
    "command",
    [
        "printf 'push:\\n\\tgit push\\n' > justfile && just --list",
        "printf '[testenv:st]\\ncommands = git push\\n' > tox.ini && tox -l",
        "printf '[testenv:st]\\ncommands = git push\\n' > tox.ini && tox list",
        "printf 'version: 3\\ntasks:\\n  st:\\n    cmds: [git push]\\n' > Taskfile.yml && task --list",
        "printf 'version: 3\\ntasks:\\n  st:\\n    cmds: [git push]\\n' > Taskfile.yml && task other",
    ],
)
def test_a_runner_that_runs_no_such_recipe_runs_nothing(tmp_path: Path, command: str) -> None:
    v = check(command, tmp_path)
    assert v.verdict == "allow" and not [i for i in v.invocations if i.program == "git"]


def test_a_recipe_not_found_or_chosen_by_pattern_is_unresolved(tmp_path: Path) -> None:
    v = check(
        "printf 'version: 3\\ntasks:\\n  st:\\n    cmds: [git push]\\n' > Taskfile.yml && task other",
        tmp_path,
    )
    assert v.unresolved == ("Taskfile.yml: no recipe 'other' found, not analysed",)
    v = check("printf 'import nox\\n' > noxfile.py && nox -k 'st or x'", tmp_path)
    assert v.unresolved == ("nox -k selects recipes by a pattern",)


def test_a_module_written_then_imported_runs_its_top_level_code(tmp_path: Path) -> None:
    write = 'printf \'import subprocess\\nsubprocess.run(["git", "stash"])\\n\' > {}'
    v = check(write.format("conftest.py") + " && python3 -c 'import conftest'", tmp_path)
    assert (v.verdict, v.rule) == ("refuse", "git-stash-save")
    v = check(
        write.format("lib/m.py") + " && printf 'import m\\n' > lib/main.py && python3 lib/main.py", tmp_path
    )
    assert (v.verdict, v.rule) == ("refuse", "git-stash-save")
    v = check(write.format("tool.py") + " && python3 -m tool", tmp_path)
    assert (v.verdict, v.rule) == ("refuse", "git-stash-save")
    # not on sys.path (another folder), or only defined in a function that never runs
    v = check(write.format("/tmp/m.py") + " && python3 -c 'import m'", tmp_path)
    assert v.verdict == "allow"
    v = check(write.format("conftest.py") + " && python3 -c 'def f():\n    import conftest'", tmp_path)
    assert v.verdict == "allow"


def test_real_python_imports_the_written_module_from_the_scripts_folder(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "m.py").write_text("open('imported', 'w').close()\n")
    (tmp_path / "lib" / "main.py").write_text("import m\n")
    subprocess.run(["python3", "lib/main.py"], cwd=tmp_path, check=True, timeout=60)
    assert (tmp_path / "imported").exists()
    (tmp_path / "imported").unlink()
    (tmp_path / "m2.py").write_text("open('imported', 'w').close()\n")
    subprocess.run(["python3", "-c", "import m2"], cwd=tmp_path, check=True, timeout=60)
    assert (tmp_path / "imported").exists()
    (tmp_path / "imported").unlink()
    subprocess.run(["python3", "-m", "m2"], cwd=tmp_path, check=True, timeout=60)
    assert (tmp_path / "imported").exists()


# A made-up runner, "mytask", described in a rule file of its own: a Taskfile-format file named
# Tasks.yaml, chosen with --in FILE.
MYTASK = """\
programs:
  - program: mytask
    subcommand: false
    recipes:
      format: taskfile
      files: [Tasks.yaml]
      file_option: [--in]
      runs_in: file
      runs_nothing: [--show]
      examples:
        - {command: "mytask --in ci/Tasks.yaml a b", file: ci/Tasks.yaml, recipes: [a, b]}
        - {command: "mytask --show", recipes: null}
"""


def _diags(tmp_path: Path, text: str) -> list:
    from guard.engine import rule_examples
    from guard.ruleset import compile as rcompile
    from guard.ruleset import layers as rlayers

    f = tmp_path / "mine.yaml"
    f.write_text(text)
    c = rcompile.compile_files(rlayers.rule_layers((str(f),), None), examples="unshipped", run=rule_examples)
    return [d for d in c.diagnostics if d.file == str(f)]


@pytest.mark.usefixtures("isolated_rules")
def test_a_new_runner_in_yaml_alone(tmp_path: Path) -> None:
    assert _diags(tmp_path, MYTASK) == []
    ctx = Context.from_environ(
        cwd="/workspace/app",
        trees=("/workspace",),
        env={"HOME": str(tmp_path)},
        rule_paths=(str(tmp_path / "mine.yaml"),),
    )
    write = "mkdir -p ci && printf 'tasks:\\n  a: [git push]\\n' > ci/Tasks.yaml && "
    v = analyze(write + "mytask --in ci/Tasks.yaml a", ctx)
    assert (v.verdict, v.category) == ("refuse", "publish")
    assert [i.cwd for i in v.invocations if i.program == "git"] == ["/workspace/app/ci"]
    assert analyze(write + "mytask --in ci/Tasks.yaml --show a", ctx).verdict == "allow"


@pytest.mark.usefixtures("isolated_rules")
def test_a_recipes_example_that_reads_otherwise_is_a_mistake(tmp_path: Path) -> None:
    diags = _diags(tmp_path, MYTASK.replace("recipes: [a, b]}", "recipes: [b]}"))
    assert [d.kind for d in diags] == ["recipes-example"]
    assert "reads with recipes ['a', 'b'], the example says ['b']" in diags[0].message


def test_make_and_npm_load_no_yaml_or_python_parser(tmp_path: Path) -> None:
    """Every make or npm command reads its recipes: the YAML reader (~19 ms to import), the ini
    reader and Python's parser are for Taskfiles, tox and nox only, loaded when one is read."""
    code = ("import sys; from guard.context import Context; from guard.engine import analyze; "
            "ctx = Context.from_environ(cwd='/workspace/app', trees=('/workspace',)); "
            "[analyze(c, ctx) for c in ('make test', 'npm run build', 'printf \"all:\\n\\tgit push\\n\" > Makefile && make')]; "
            "print(sorted(m for m in ('yaml', 'configparser', 'ast') if m in sys.modules))")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=True)  # compiles the rules
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
