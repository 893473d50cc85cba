"""JSON for the hook's hot path without the ``json`` package, whose decoder imports ``re`` (and
with it ``enum``): about 7 ms of a hook that runs before every command an agent makes.

``loads`` is the standard library's own C scanner (``_json.make_scanner``) given the settings
``json.JSONDecoder`` would give it; ``dumps`` writes the small objects the hooks answer with
(dicts, lists, strings, numbers, booleans, None) with ``_json``'s C string encoder. Where
``_json`` is missing, both fall back to ``json``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]


def _constant(name: str) -> float:
    return {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}[name]


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)
    memo: dict[str, str] = {}


_scan = _json.make_scanner(_Context()) if _json is not None else None


def loads(text: str) -> Any:
    """``json.loads`` of a document; ValueError when it is not one."""
    if _scan is None:
        import json

        return json.loads(text)
    i = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = _scan(text, i)
    except StopIteration:
        raise ValueError("Expecting value") from None
    finally:
        _Context.memo.clear()
    rest = text[end:].strip(" \t\n\r")
    if rest:
        raise ValueError("Extra data")
    return value


def dumps(obj: Any, ensure_ascii: bool = False) -> str:
    """``json.dumps(obj, ensure_ascii=…)`` with json's default separators."""
    if _json is None:
        import json

        return json.dumps(obj, ensure_ascii=ensure_ascii)
    enc = _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring
    out: list[str] = []

    def put(v: Any) -> None:
        if isinstance(v, str):
            out.append(enc(v))
        elif v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, int):
            out.append(int.__repr__(v))
        elif isinstance(v, float):
            out.append(float.__repr__(v))
        elif isinstance(v, dict):
            out.append("{")
            first = True
            for k, item in v.items():
                if not first:
                    out.append(", ")
                first = False
                out.append(enc(k if isinstance(k, str) else str(k)))
                out.append(": ")
                put(item)
            out.append("}")
        elif isinstance(v, (list, tuple)):
            out.append("[")
            for n, item in enumerate(v):
                if n:
                    out.append(", ")
                put(item)
            out.append("]")
        else:
            raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")

    put(obj)
    return "".join(out)
