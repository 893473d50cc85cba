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
