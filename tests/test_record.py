"""guard.record stands in for dataclasses on the hot path: same behaviour for what guard uses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from guard.record import asdict, dataclass, field, replace


@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: list = field(default_factory=list)
    note: str = field(default="", compare=False, repr=False)


@dataclass
class Box:
    items: dict = field(default_factory=dict)


def test_init_defaults_factories_and_positional() -> None:
    a, b = Point(1), Point(1, 2, ["t"])
    assert (a.x, a.y, a.tags) == (1, 0, [])
    assert a.tags is not Point(1).tags  # a new list each time
    assert (b.y, b.tags) == (2, ["t"])
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


@pytest.mark.assigns_records
def test_eq_repr_hash_and_frozen() -> None:
    assert Point(1, 2, note="a") == Point(1, 2, note="b")  # compare=False
    assert Point(1) != Point(2)
    assert Point(1).__eq__("x") is NotImplemented
    assert repr(Point(1)) == "Point(x=1, y=0, tags=[])"
    assert hash(Point(3, 4, ())) == hash(Point(3, 4, ()))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        Point(1).x = 5  # type: ignore[misc]
    box = Box()
    box.items = {"a": 1}
    assert Box.__hash__ is None


def test_replace_and_asdict() -> None:
    p = replace(Point(1, 2), y=9)
    assert (p.x, p.y) == (1, 9)
    assert asdict(Box({"p": [Point(1)]})) == {"items": {"p": [{"x": 1, "y": 0, "tags": [], "note": ""}]}}


def test_the_analysis_path_does_not_import_dataclasses_or_inspect() -> None:
    code = ("import sys; from guard.engine import analyze; from guard.context import Context; "
            "analyze('git status', Context.from_environ(cwd='/tmp', trees=('/workspace',)));"
            "print(sorted(m for m in ('dataclasses', 'inspect', 'yaml', 'bashlex') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


@dataclass(frozen=True)
class Plain:
    x: int
    y: int = 0


@pytest.mark.assigns_records
def test_slots_true_gives_slots_and_keeps_the_rest() -> None:
    """``slots=True`` records have no instance dict, and are still frozen, defaulted, equal and
    hashable; records without it keep their dict."""
    p = Point(1, 2)
    assert Point.__slots__ == ("x", "y", "tags", "note") and not hasattr(p, "__dict__")
    with pytest.raises(AttributeError):
        p.tags = []  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.other = 1  # type: ignore[attr-defined]
    assert (p.note, Point(1).y) == ("", 0) and p == Point(1, 2, note="x") and hash(Point(1, 2, ()))  # type: ignore[arg-type]
    assert replace(p, x=5) == Point(5, 2) and repr(p) == "Point(x=1, y=2, tags=[])"
    assert Plain(1).__dict__ == {"x": 1, "y": 0}


@pytest.mark.assigns_records
def test_this_suite_runs_checked_and_sees_each_refusal() -> None:
    """tests/conftest.py turns the check on before guard is imported, and its fixture fails any
    test during which a frozen record was assigned to, even where the error was swallowed."""
    from guard import record
    from guard.ir import Lit

    lit = Lit("a")
    for change in (lambda: setattr(lit, "text", "b"), lambda: delattr(lit, "quoted")):
        try:
            change()
        except AttributeError:
            pass  # as a handler that falls back on any error would
    assert record.CHECKED and (lit.text, lit.quoted) == ("a", False)
    assert record.REFUSED == ["Lit.text", "Lit.quoted"]
    del record.REFUSED[:]


def _run(code: str, checked: bool, *args: str) -> str:
    """``code`` run by a fresh interpreter with the run-time record check on or off."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "GUARD_CHECK_RECORDS"}
    env["PYTHONHASHSEED"] = "0"
    if checked:
        env["GUARD_CHECK_RECORDS"] = "1"
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


_ASSIGN = """
from guard.ir import Lit, Word
from guard.context import Context
w = Word("a", (Lit("a"),), (0, 1))
try:
    w.raw = "b"
    print("assigned", w.raw)
except AttributeError as e:
    print("refused", e)
try:
    Context.from_environ(cwd="/").cwd = "/x"
except AttributeError:
    print("slotted refused")
a, b = Word("a", (Lit("a"),), (0, 1)), Word("a", (Lit("a"),), (0, 1))
print(a == b, hash(a) == hash(b), a.__dict__)
"""


def test_frozen_records_refuse_assignment_only_where_checked() -> None:
    """The test suite runs checked (tests/conftest.py), so a record changed after it is built
    fails a test; a guard started without the check assigns fields the quick way and is not
    stopped. Slotted frozen records (Context, World, Spec) refuse either way."""
    checked = _run(_ASSIGN, True).splitlines()
    assert checked[0] == "refused cannot assign to field 'raw'" and checked[1] == "slotted refused"
    unchecked = _run(_ASSIGN, False).splitlines()
    assert unchecked[0] == "assigned b" and unchecked[1] == "slotted refused"
    assert checked[2] == unchecked[2] == "True True {'raw': 'a', 'parts': (Lit(text='a', quoted=False),), 'pos': (0, 1)}"


_VERDICTS = """
import json, sys
from guard.context import Context
from guard.engine import analyze
step, cmds = int(sys.argv[1]), []
for f in sys.argv[2:]:
    with open(f) as fh:
        cmds += [json.loads(line).get("command", "") for line in fh if line.strip()]
for cwd in ("/workspace/app", "/tmp"):
    ctx = Context.from_environ(cwd=cwd, trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    for c in cmds[::step]:
        print(repr(analyze(c, ctx)))
"""


def test_verdicts_are_the_same_checked_or_not(shared) -> None:
    """The check changes how records are built, never what the analysis gives: every verdict
    field, over a sixth of the corpus and all the peers' cases, in two places."""
    corpus = [str(shared / "corpus" / "agent-commands.jsonl")]
    peers = [str(p) for p in sorted((shared / "peers").glob("*.jsonl"))]
    for step, files in (("6", corpus), ("1", peers)):
        checked = _run(_VERDICTS, True, step, *files)
        assert checked.count("\n") > 2000
        assert _run(_VERDICTS, False, step, *files) == checked
