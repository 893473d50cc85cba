"""A small stand-in for ``dataclasses`` on guard-shell's hot path.

``import dataclasses`` imports ``inspect``, a cost every command that needs the full analysis
would pay. This module gives the part of the API guard uses —
``dataclass(frozen=…, slots=…)``, ``field(default=…, default_factory=…)``, ``replace``,
``asdict`` — with generated ``__init__``, ``__repr__``, ``__eq__`` and, when frozen,
``__hash__`` and read-only attributes. ``slots=True`` makes the class again with a slot per
field and no instance dict, as ``dataclasses`` does: for records read on every command and
rarely built (a frozen slotted record costs more to build, a descriptor call per field).

A frozen record without slots is frozen by contract, checked where the contract is tested: its
``__init__`` assigns each field as any class's does, and only with ``GUARD_CHECK_RECORDS`` set
(tests/conftest.py sets it for the test suite; the guards it starts with its environment and
their analysis servers inherit it) does the class also refuse assignment. A class's own
``__setattr__`` keeps CPython 3.11 from storing and reading its attributes the quick way (as
instance values), and the IR records are built and read hundreds of thousands of times per
corpus pass (``bench/results/design-measurements.md`` has the figures).
"""

from __future__ import annotations

import posix  # loaded with the interpreter; ``os`` is not, for guard-shell's quick start

_MISSING = object()
# Whether frozen records without slots refuse assignment at run time (see above): set and not
# one of the values that turn a guard switch off (as GUARD_SERVER reads them).
CHECKED = posix.environ.get(b"GUARD_CHECK_RECORDS", b"").strip().lower() not in (b"", b"0", b"off", b"no", b"false")
# With the check on, every assignment refused, as "Class.field": a handler that turns any error
# into a fallback (the parse stage's, say) would otherwise hide one (tests/conftest.py looks).
REFUSED: list[str] = []


class _Field:
    __slots__ = ("default", "factory", "compare", "repr")

    def __init__(self, default: object, factory: object, compare: bool, repr: bool) -> None:
        self.default, self.factory, self.compare, self.repr = default, factory, compare, repr


def field(*, default: object = _MISSING, default_factory: object = _MISSING, compare: bool = True,
          repr: bool = True) -> object:
    return _Field(default, default_factory, compare, repr)


def _frozen_setattr(self: object, name: str, value: object = None) -> None:
    """``__setattr__`` and ``__delattr__`` (which passes no value) of a frozen record."""
    if CHECKED:
        REFUSED.append(f"{type(self).__name__}.{name}")
    raise AttributeError(f"cannot assign to field {name!r}")


def dataclass(cls: type | None = None, /, *, frozen: bool = False, slots: bool = False, eq: bool = True):
    def wrap(c: type) -> type:
        names: list[str] = []
        hidden: set[str] = set()  # repr=False
        uncompared: set[str] = set()  # compare=False
        params: list[str] = []
        body: list[str] = []
        env: dict[str, object] = {"_MISSING": _MISSING}
        for name, ann in c.__dict__.get("__annotations__", {}).items():
            if "ClassVar" in str(ann):
                continue
            names.append(name)
            value = c.__dict__.get(name, _MISSING)
            if isinstance(value, _Field):
                if not value.repr:
                    hidden.add(name)
                if not value.compare:
                    uncompared.add(name)
                if value.factory is not _MISSING:
                    env[f"_f_{name}"] = value.factory
                    params.append(f"{name}=_MISSING")
                    body.append(f"    if {name} is _MISSING: {name} = _f_{name}()")
                else:
                    env[f"_d_{name}"] = value.default
                    params.append(f"{name}=_d_{name}")
                delattr(c, name)
            elif value is not _MISSING:
                env[f"_d_{name}"] = value
                params.append(f"{name}=_d_{name}")
            else:
                params.append(name)
        if slots:
            c = _slotted(c, names)
        if frozen and names and slots:
            # Through each slot's own descriptor: ``object.__setattr__`` (the usual way past a
            # frozen ``__setattr__``) looks the name up on every call and cost 1.5x as much.
            for name in names:
                env[f"_s_{name}"] = getattr(c, name).__set__
            body.extend(f"    _s_{name}(self, {name})" for name in names)
        elif frozen and names and CHECKED:
            # Past the class's own ``__setattr__``, straight into the instance dict (which
            # ``object.__setattr__`` per field does at 1.7 times the cost)
            body.append("    _d = self.__dict__")
            body.extend(f"    _d[{name!r}] = {name}" for name in names)
        else:
            body.extend(f"    self.{name} = {name}" for name in names)
        src = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass")
        exec(src, env)  # noqa: S102 - generated from the class's own field names
        init = env["__init__"]
        init.__qualname__ = f"{c.__qualname__}.__init__"
        c.__init__ = init
        fields = tuple(names)
        shown = tuple(n for n in names if n not in hidden)
        compared = tuple(n for n in names if n not in uncompared)
        c.__record_fields__ = fields
        c.__match_args__ = fields

        def __repr__(self: object) -> str:
            return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in shown) + ")"

        c.__repr__ = __repr__
        if eq:
            def __eq__(self: object, other: object) -> bool:
                if other.__class__ is not self.__class__:
                    return NotImplemented
                return all(getattr(self, n) == getattr(other, n) for n in compared)

            c.__eq__ = __eq__
            if frozen:
                c.__hash__ = lambda self: hash(tuple(getattr(self, n) for n in compared))
            else:
                c.__hash__ = None
        if frozen and (slots or CHECKED):
            c.__setattr__ = _frozen_setattr
            c.__delattr__ = _frozen_setattr
        return c

    return wrap if cls is None else wrap(cls)


def _slotted(c: type, names: list[str]) -> type:
    """``c`` made again with a slot per field and no instance dict, as ``dataclasses`` does
    for ``slots=True``: a record's fields are then read from fixed places in the object."""
    ns = {k: v for k, v in c.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
    ns["__slots__"] = tuple(names)
    return type(c)(c.__name__, c.__bases__, ns)


def replace(obj: object, **changes: object) -> object:
    values = {n: getattr(obj, n) for n in type(obj).__record_fields__}
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: object) -> object:
    if hasattr(type(obj), "__record_fields__"):
        return {n: asdict(getattr(obj, n)) for n in type(obj).__record_fields__}
    if isinstance(obj, list | tuple):
        return type(obj)(asdict(x) for x in obj)
    if isinstance(obj, dict):
        return {k: asdict(v) for k, v in obj.items()}
    return obj


def fields(cls: type) -> tuple[str, ...]:
    return cls.__record_fields__
