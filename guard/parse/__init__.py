"""Parse stage: command text → ``guard.ir.Script``.

``parse(src)`` reads a plain command (two in three) directly, into the IR tree-sitter's lowering
would give it (``guard.parse.plain``); anything else goes to tree-sitter-bash, then bashlex
(imported lazily, only for the few commands tree-sitter rejects or misparses), then a
conservative token scan. It never raises: when nothing works it returns
``Script(body=None, parser="none", error=…)``. Text nested in a command reaches ``parse_at``
again through ``guard.parse.nested``, so the lowerings do not import this package.
"""

from __future__ import annotations

from guard.ir import UNKNOWN, Script

# The plain reader and the tree-sitter lowering, which nearly every parse uses. Importing them
# loads no tree-sitter code (its parser is built on first use), and here it is one import, not
# one per parse.
from guard.parse import nested, plain, treesitter

__all__ = ["parse"]

MAX_INPUT = 1_200_000  # characters (a 1 MiB command and some); larger input is not analysed
MAX_BASHLEX = 64_000  # bashlex is slow on big input (≈ 13 ms per KB)
MAX_SCAN = 128_000  # the token scan costs ≈ 4 µs per character: at most about half a second
MAX_NESTING = 60  # nested re-parses of $(…) text by the bashlex and scan lowerings


def _sanitize(src: str) -> str:
    if "\0" in src:  # bash drops NUL bytes from what it reads (and -c text cannot hold one)
        src = src.replace("\0", "")
    if UNKNOWN in src:
        src = src.replace(UNKNOWN, "\ufffd")
    if not src.isascii():  # only text beyond ASCII can hold a lone surrogate
        try:
            src.encode("utf-8")
        except UnicodeEncodeError:
            src = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in src)
    return src


def _describe(parser: str, exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"{parser}: nesting too deep"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, treesitter.Unparsed):
        return f"{parser}: {text}"
    return f"{parser}: {type(exc).__name__}{': ' + text[:200] if text else ''}"


def parse_at(src: str, base: int = 0, depth: int = 0) -> Script:
    """Parse ``src`` whose first character is at offset ``base`` of the whole command.

    ``depth`` counts enclosing substitutions; used by the lowerings for nested text.
    """
    if depth > MAX_NESTING:
        return Script(None, src, "none", error="nesting too deep")
    if not src or src.isspace():
        return Script(None, src, "tree-sitter")
    if len(src) > MAX_INPUT:
        return Script(None, src, "none", error=f"input too large to analyse ({len(src)} characters)")
    quick = plain.lower(src, base)  # two commands in three: the IR tree-sitter's lowering gives, sooner
    if quick is not None:
        return quick
    errors: list[str] = []
    try:
        return treesitter.lower(src, base, depth)
    except treesitter.OverBudget as exc:
        return Script(None, src, "none", error=f"input too costly to analyse ({exc})")
    except MemoryError:
        raise  # the caller's memory budget ran out: no other parser will fit in it either
    except Exception as exc:  # noqa: BLE001 - any failure means "try the next parser"
        errors.append(_describe("tree-sitter", exc))
    if len(src) <= MAX_BASHLEX:
        try:
            from guard.parse import bashlex_fallback

            return bashlex_fallback.lower(src, base, depth, errors[0])
        except Exception as exc:  # noqa: BLE001
            errors.append(_describe("bashlex", exc))
    else:
        errors.append("bashlex: input too large")
    reason = "; ".join(errors)
    if len(src) > MAX_SCAN:
        return Script(None, src, "none", error=f"{reason}; too large for the token scan ({len(src)} characters)")
    try:
        from guard.parse import scan

        return scan.scan(src, base, depth, reason)
    except Exception as exc:  # noqa: BLE001
        return Script(None, src, "none", error=f"{reason}; {_describe('scan', exc)}")


def warm() -> None:
    """Load the grammar now (its shared library is mapped once per process), so a worker forked
    after this under a memory budget does not spend the budget on it."""
    treesitter.get_parser()


def parse(src: str) -> Script:
    """The IR of the shell command ``src``. Never raises, except ``MemoryError``: that is the
    caller's memory budget running out, and the caller's to report."""
    try:
        if not isinstance(src, str):
            src = str(src, "utf-8", "replace") if isinstance(src, bytes | bytearray) else str(src)
        src = _sanitize(src)
    except Exception as exc:  # noqa: BLE001
        return Script(None, "", "none", error=f"unreadable input: {type(exc).__name__}")
    try:
        return parse_at(src)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return Script(None, src, "none", error=_describe("parse", exc))


nested.register(parse_at)
