"""The process's environment and file names as text, with ``posix`` alone.

guard-shell's analysed path (the launcher, ``guard.shell.main``, ``guard.shell.decide`` and the
stderr relay) does not import ``os``: on this project's machine that import (``os``,
``_collections_abc``, ``stat``, ``posixpath``) is 6.3 million instructions, about 2.5 ms of
every analysed command. These three are the parts of ``os`` that path needs beyond the
``posix`` functions themselves.
"""

import posix
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_decoded: "dict[str, str] | None" = None


def environ() -> "Mapping[str, str]":
    """The environment as text, the way ``os.environ`` holds it.

    Once anything has imported ``os`` this *is* ``os.environ`` (it holds every change made
    since); before that nothing can have changed the environment (``os.environ`` is how Python
    code does), so ``posix.environ``, the start-up copy ``os.environ`` itself is built from, is
    decoded once and reused. Read it, do not change it.
    """
    os = sys.modules.get("os")
    if os is not None:
        return os.environ  # type: ignore[no-any-return]
    global _decoded
    if _decoded is None:
        _decoded = {fsdecode(k): fsdecode(v) for k, v in posix.environ.items()}
    return _decoded


def environb() -> "dict[bytes, bytes]":
    """A copy of the environment as bytes, the way ``os.environb`` holds it (see ``environ``)."""
    os = sys.modules.get("os")
    return dict(os.environb if os is not None else posix.environ)


def fsencode(name: str) -> bytes:
    """``os.fsencode`` of a text name (undecodable bytes round-trip as surrogates)."""
    return name.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def fsdecode(name: bytes) -> str:
    """``os.fsdecode`` of a byte name."""
    return name.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
