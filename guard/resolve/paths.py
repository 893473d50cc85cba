"""Path arithmetic shared by the resolver and the classifier.

Paths may hold ``ir.UNKNOWN`` for parts that could not be determined. An unknown part is assumed
not to climb out with ``..`` (docs/behaviour.md §9.11), so ``/tmp/`` + UNKNOWN is somewhere under ``/tmp``.
Symlinks are followed through the real file system for the part of a path that exists.
"""

from __future__ import annotations

import os
import posixpath
from functools import lru_cache

from guard.ir import UNKNOWN, known_prefix


def expand_tilde(path: str, home: str) -> str:
    if path == "~":
        return home
    if path.startswith("~/"):
        return home.rstrip("/") + path[1:]
    return path


def join(cwd: str, path: str, home: str = "/root") -> str:
    """Absolute, normalised form of ``path`` seen from ``cwd`` (lexically; see ``real``)."""
    path = expand_tilde(path, home)
    if path.startswith(UNKNOWN):
        return UNKNOWN  # wholly unknown: it may well be absolute
    if not path.startswith("/"):
        path = cwd.rstrip("/") + "/" + path if path else cwd
    return normalise(path)


def normalise(path: str) -> str:
    """Collapse ``.``, ``..`` and duplicate slashes. Components holding UNKNOWN are kept as-is."""
    if path[:1] == "/" and "//" not in path and "/." not in path and path[-1:] != "/":
        return path  # no empty, ``.`` or ``..`` component: already normal (most paths)
    return fold(path)


def fold(path: str) -> str:
    """``normalise`` the long way: component by component, whatever the path."""
    out: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if out and UNKNOWN not in out[-1]:
                out.pop()
            elif out:
                # an unknown component followed by .. : we no longer know where we are
                out.append(comp)
            continue
        out.append(comp)
    return "/" + "/".join(out)


@lru_cache(maxsize=8192)
def real(path: str) -> str:
    """Follow symlinks for the longest existing literal prefix of ``path`` (cached per process:
    one analysis is short-lived, and a path's meaning does not change under it)."""
    if UNKNOWN in path:
        head = known_prefix(path)
        cut = head.rfind("/")
        base, rest = head[: cut + 1] or "/", path[cut + 1 :]
        try:
            resolved = os.path.realpath(base)
        except (OSError, ValueError):
            return path
        return normalise(resolved.rstrip("/") + "/" + rest)
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def is_under(path: str, root: str) -> bool | None:
    """True if ``path`` is ``root`` or below it, by whole components; None when unknowable."""
    root = normalise(root)
    if UNKNOWN not in path:
        return path == root or path.startswith(root.rstrip("/") + "/")
    # A literal prefix decides when it is enough.
    parts = path.split("/")
    rparts = root.split("/")
    known: list[str] = []
    for p in parts:
        if UNKNOWN in p:
            break
        known.append(p)
    if ".." in parts[len(known) :]:
        return None
    if len(known) >= len(rparts):
        return known[: len(rparts)] == rparts
    # path's literal prefix is shorter than root: decided only if it already diverges
    if known != rparts[: len(known)]:
        return False
    # the first unknown component still has a literal start (mktemp's "tmp.…"): a root component
    # that does not begin with it cannot be matched (an unknown part stays within its component)
    head = parts[len(known)].split(UNKNOWN, 1)[0]
    if head and not rparts[len(known)].startswith(head):
        return False
    # the literal components after it must match the root's too: "$(mktemp -d)/dep" is not in
    # /tmp/tmp.AbCdEfGhIj/p/ws, whatever the unknown name is
    for p, r in zip(parts[len(known) + 1 :], rparts[len(known) + 1 :], strict=False):
        if UNKNOWN not in p and p != r:
            return False
    return None


def in_trees(path: str, trees: tuple[str, ...]) -> bool | None:
    """Whether ``path`` (absolute) is in one of the tree roots; None when it cannot be known."""
    candidates = [path]
    resolved = real(path)
    if resolved != path:
        candidates.append(resolved)
    unknown = False
    for cand in candidates:
        for root in trees:
            for r in {root, real(root)}:
                hit = is_under(cand, r)
                if hit:
                    return True
                if hit is None:
                    unknown = True
    return None if unknown else False


def relative_to_tree(path: str, trees: tuple[str, ...]) -> str:
    """``/workspace/app/x`` → ``app/x`` for display in messages; the path itself otherwise."""
    for root in trees:
        root = normalise(root)
        if path == root:
            return "."
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return path


def has_component(path: str, name: str) -> bool:
    return name in posixpath.normpath(path).split("/")
