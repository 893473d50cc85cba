"""The Python analysis leaves out its walk for a program that names nothing it acts on: the
findings and notes stay exactly those of the full walk."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

import pytest

import guard.resolve.inline.python as py
from guard import parse, resolve
from guard.context import Context
from tests.resolve.inline.catalogue import with_catalogue

CTX = with_catalogue(Context.from_environ(cwd="/workspace/app", trees=("/workspace",),
                                          env={"HOME": "/root", "PATH": "/usr/bin:/bin"}))


class _Everywhere:
    """A pattern found in any text: every walked program gets the environment checks."""

    def search(self, text: str) -> bool:
        return True


def _both(source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple]:
    gated = py.analyze_python(source)
    with monkeypatch.context() as m:
        m.setattr(py, "_inert", lambda s, t: False)
        m.setattr(py, "_ENVIRON_REACH", _Everywhere())
        full = py.analyze_python(source)
    return gated, full


def _dotted_names() -> set[str]:
    """Every dotted name (``subprocess.run``, ``os.environ``) the analysis compares a Ref with."""
    tree = ast.parse(Path(py.__file__).read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+", n.value)}


def _gate(source: str) -> bool:
    """Whether the analysis leaves out the walk (a source that does not parse gets the scan)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return py._inert(source, tree)


# What a dotted name can be used in: called, printed (the dumps check), iterated, subscripted,
# tested for membership, nested in itself (evaluated twice per level), and bound and used again.
TEMPLATES = [
    "import {head}\n{name}('git push')\n",
    "import {head}\nprint({name}('git push'))\n",
    "import {head}\nfor k in {name}:\n    print(k)\n",
    "import {head}\nprint({name}['GITHUB_TOKEN'])\n",
    "import {head}\nprint('GH_TOKEN' in {name})\n",
    "import {head}\nx = {name}({name}({name}({name}('git push'))))\n{name}(x)\n",
    "import {head}\nf = {name}\nf('git', 'push')\nprint(f)\n",
    "import {head}\nprint({name}('.')[0], {name}('.').x['k'], 'GH_TOKEN' in {name}('.'))\n",
    "from {mod} import {last}\n{last}('git push')\nprint({last})\n",
]


def test_every_name_the_analysis_follows_is_analysed_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    names = _dotted_names()
    assert {"subprocess.getoutput", "os.environ", "urllib.request.Request", "base64.b64decode"} <= names
    for name in names:
        mod, _, last = name.rpartition(".")
        for template in TEMPLATES:
            source = template.format(head=name.split(".")[0], name=name, mod=mod, last=last)
            gated, full = _both(source, monkeypatch)
            assert gated == full, source
    for name in names:  # whatever the walk reports through keeps it
        head = name.split(".")[0]
        source = f"import {head}\n{name}('git push')\n"
        if py.analyze_python(source) != ([], []):
            assert not _gate(source), name
    for builtin in ("exec", "eval", "__import__", "getattr"):
        assert not _gate(f"{builtin}('x')\n"), builtin
    assert not _gate("importlib.import_module('os')")


# Programs that name nothing the analysis follows, each analysed without the walk …
INERT = [
    "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df.head())",
    "from django.conf import settings\nsettings.configure()\nprint(settings.DEBUG)",
    "x = [i * 2 for i in range(10)]\nprint(sum(x))",
    "import sys\nprint(sys.argv[1:])",
    "class A:\n    def f(self):\n        return compile('1', 'f', 'single')\nprint(A().f())",
    "for a in 1, 2, 3:\n    print(a)",
    # modules the walk only computes values from, and loops one after the other
    "import json\nprint(json.dumps(json.dumps(1)))",
    "import os\nprint(os.path.join('a', 'b'), os.path.exists('c'))",
    "import os, json\nfor f in os.listdir('.'):\n    print(json.dumps(f))",
    "".join(f"for {v} in 1, 2, 3, 4, 5, 6, 7, 8:\n    print({v})\n" for v in "abcdefg"),
    "from sympy.physics.units.systems.si import SI\nprint(SI.get_units_non_prefixed())",  # a longer name
    # text beyond ASCII in strings only, and a method whose name starts like os.execv's
    "import sqlite3\nc = sqlite3.connect('db')\nc.execute('select 1')\nprint('✅ done ═══', c)",
    # loops the evaluator never unrolls (over range, enumerate, a method's result), nested
    "import json\nfor i in range(3):\n    for j, row in enumerate(open('f')):\n        for k in row.items():\n"
    "            for m in json.loads(k):\n                print(i, j, k, m)\n",
]
# … and programs the walk must still read: a module or builtin it follows under another spelling,
# decoded or built code, text beyond ASCII (NFKC-folded names), loops that could outrun the step
# budget, sources too long to bound cheaply.
WALKED = [
    "import subprocess as sp; sp.run(['git', 'push'])",
    "from os import system as s; s('git push')",
    "from . import os\nos.system('git push')",
    "__import__('o' + 's').system('git push')",
    "getattr(__import__('subprocess'), 'run')(['git', 'push'])",
    "exec(bytes.fromhex('7072696e74283129').decode())",
    "import ｓｕｂｐｒｏｃｅｓｓ\nｓｕｂｐｒｏｃｅｓｓ.run(['git', 'push'])",
    "import os\nprint('✅')\nos.ｅｘｅｃｖｐ('git', ['git', 'push'])",
    "import json\nx = " + "json.dumps(" * 20 + "1" + ")" * 20,
    "for a in 1, 2, 3, 4, 5, 6, 7, 8:\n for b in 1, 2, 3, 4, 5, 6, 7, 8:\n  for c in 1, 2, 3, 4, 5, 6, 7, 8:\n"
    "   for d in 1, 2, 3, 4, 5, 6, 7, 8:\n    for e in 1, 2, 3, 4, 5, 6, 7, 8:\n     x = [-a, -b, -c, -d, -e]",
    ("for a in 1, 2, 3, 4, 5, 6, 7, 8:\r for b in 1, 2, 3, 4, 5, 6, 7, 8:\r  for c in 1, 2, 3, 4, 5, 6, 7, 8:\r"
     "   for d in 1, 2, 3, 4, 5, 6, 7, 8:\r    for e in 1, 2, 3, 4, 5, 6, 7, 8:\r     x = [-a, -b, -c, -d, -e]"),
    "x = " + "+".join(["a"] * 30000),
]


@pytest.mark.parametrize("source", INERT)
def test_a_program_naming_nothing_followed_skips_the_walk(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _gate(source)
    gated, full = _both(source, monkeypatch)
    assert gated == full == ([], [])


@pytest.mark.parametrize("source", WALKED)
def test_the_walk_stays_where_it_can_find_something(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _gate(source)
    gated, full = _both(source, monkeypatch)
    assert gated == full


def test_the_spelled_around_launches_are_still_found() -> None:
    for source in WALKED[:8]:
        findings, notes = py.analyze_python(source)
        assert findings or notes, source
    for loops in WALKED[8:11]:  # nested doubling calls; loops in lines broken by \n, and by \r
        assert any("budget" in n for n in py.analyze_python(loops)[1])


def test_a_program_that_does_not_parse_still_gets_the_string_scan() -> None:
    findings, notes = py.analyze_python("class A: pass; class B: pass\nsystem('git push')")
    assert notes and "does not parse" in notes[0]
    assert [f.shell for f in findings] == ["git push"]


def test_corpus_programs_analyse_the_same_without_the_walk(monkeypatch: pytest.MonkeyPatch, shared) -> None:
    """Every inline Python program of every fifth corpus command (python -c, heredocs, scripts
    the command writes and runs) gets the same findings and notes either way."""
    seen: list[tuple[str, tuple]] = []
    real = py.analyze_python

    def spy(source: str, argv: tuple = ()) -> tuple:
        seen.append((source, tuple(argv)))
        return real(source, argv)

    corpus = [json.loads(line)["command"] for line in (shared / "corpus" / "agent-commands.jsonl").open()][::5]
    with monkeypatch.context() as m:
        m.setattr(py, "analyze_python", spy)
        for c in corpus:
            resolve.resolve(parse.parse(c), CTX, parse.parse)
    assert len(seen) > 100
    inert = [s for s, _ in seen if _gate(s)]
    assert len(inert) > len(seen) // 3  # the gate is taken by many of them
    for source, argv in seen:
        gated = real(source, argv)
        with monkeypatch.context() as m:
            m.setattr(py, "_inert", lambda s, t: False)
            m.setattr(py, "_ENVIRON_REACH", _Everywhere())
            assert real(source, argv) == gated, textwrap.shorten(source, 200)


def test_a_walked_program_that_cannot_name_the_environment_makes_no_environment_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tested: list[ast.AST] = []
    real = py._Analyzer.is_environ

    def spy(self, node, env):  # type: ignore[no-untyped-def]
        tested.append(node)
        return real(self, node, env)

    monkeypatch.setattr(py._Analyzer, "is_environ", spy)
    source = "import subprocess\nfor x in sorted(['a']):\n    print(x, {'k': x}['k'], x in 'abc')\nsubprocess.run(['gh', 'pr', 'create'])\n"
    findings, notes = py.analyze_python(source)
    assert [f.argv for f in findings] == [("gh", "pr", "create")] and not tested
    findings, notes = py.analyze_python("import os\n" + source + "print(os.environ)\n")
    assert tested and any(f.kind == "token" and f.var == "*" for f in findings)


# Loops the evaluator unrolls, nested past the step budget: over a string's split, a list() of a
# tuple, and shlex.split under another name.
UNROLLED = [
    "".join(" " * d + f"for v{d} in {it}:\n" for d in range(5)) + "     x = [v0, v1, v2, v3, v4]\n"
    for it in ("'1 2 3 4 5 6 7 8'.split()", "list((1, 2, 3, 4, 5, 6, 7, 8))")
] + [
    "from shlex import split as sp\n" + "".join(" " * d + f"for v{d} in sp('1 2 3 4 5 6 7 8'):\n" for d in range(5))
    + "     x = [v0, v1, v2, v3, v4]\n",
]


@pytest.mark.parametrize("source", UNROLLED)
def test_the_gate_tells_loops_the_evaluator_unrolls_from_loops_it_walks_once(
        source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    once = source.replace("'1 2 3 4 5 6 7 8'.split()", "range(8)").replace("list((1, 2, 3, 4, 5, 6, 7, 8))", "range(8)")
    once = once.replace("sp('1 2 3 4 5 6 7 8')", "range(8)").replace("from shlex import split as sp\n", "")
    assert _gate(once) and _both(once, monkeypatch) == (([], []), ([], []))
    assert not _gate(source)
    gated, full = _both(source, monkeypatch)
    assert gated == full and any("budget" in n for n in gated[1])
