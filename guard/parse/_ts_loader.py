"""Load tree-sitter and the bash grammar cheaply.

The packages' ``__init__`` modules import ``typing`` and ``importlib.resources``, which costs more
than the parser itself. Only the two ``_binding`` extension modules are needed, so they are located
with ``importlib.machinery`` and loaded directly (registered under their real names, so a later
ordinary ``import tree_sitter`` reuses them). Any failure falls back to the public imports.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~2-7 ms to import on the command path
    from typing import Any


_parser: Any = None


def _load_binding(package: str) -> Any:
    from importlib.machinery import PathFinder

    full = package + "._binding"
    mod = sys.modules.get(full)
    if mod is not None:
        return mod
    pkg_spec = PathFinder.find_spec(package)
    if pkg_spec is None or not pkg_spec.submodule_search_locations:
        raise ImportError(package)
    spec = PathFinder.find_spec(full, list(pkg_spec.submodule_search_locations))
    if spec is None or spec.loader is None:
        raise ImportError(full)
    mod = spec.loader.create_module(spec)
    if mod is None:
        raise ImportError(full)
    sys.modules[full] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(full, None)
        raise
    return mod


def _fast() -> Any:
    ts = _load_binding("tree_sitter")
    tsb = _load_binding("tree_sitter_bash")
    return ts.Parser(ts.Language(tsb.language()))


def _public() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def get_parser() -> Any:
    """A tree-sitter ``Parser`` for bash (cached per process)."""
    global _parser
    if _parser is None:
        try:
            _parser = _fast()
        except Exception:
            _parser = _public()
    return _parser
