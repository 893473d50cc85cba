"""Where the rule files are (command rules, program specs, config, stderr rules), found with
``os`` alone.

The rule loader's fast path and the shell's pre-check both ask this on every command, before
anything heavier is imported (pathlib costs ~3 ms, the loader more).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def shipped_dir() -> str | None:
    """rules/ beside the package (a checkout), or inside it (an install)."""
    guard_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for cand in (os.path.join(os.path.dirname(guard_dir), "rules"), os.path.join(guard_dir, "rules")):
        if os.path.exists(os.path.join(cand, "config.yaml")):
            return cand
    return None


def entry_path(p: str) -> str:
    """A ``GUARD_RULES`` entry as a path: ``@NAME`` is ``rules/packs/NAME.yaml``, a pack shipped
    with guard that is off until an operator names it."""
    if p.startswith("@") and "/" not in p:
        base = shipped_dir()
        return os.path.join(base, "packs", p[1:] + ".yaml") if base is not None else p
    return p


def command_rule_files(extra: tuple[str, ...], config_path: str | None, folders: bool = False) -> list[str] | None:
    """The files of the shipped layer (config, program specs, command rules), then each file of
    ``extra`` (GUARD_RULES), then the config file. A folder in ``extra`` gives None, or with
    ``folders`` its ``*.yaml``/``*.yml`` files, sorted."""
    base = shipped_dir()
    if base is None:
        return None
    files = [os.path.join(base, "config.yaml")]
    for sub in ("programs", "dialects", "commands", "stderr"):
        try:
            files += sorted(os.path.join(base, sub, n) for n in os.listdir(os.path.join(base, sub)) if n.endswith(".yaml"))
        except OSError:
            if sub == "commands":
                return None
    for p in map(entry_path, extra):
        if os.path.isdir(p):
            if not folders:
                return None
            files += sorted(os.path.join(d, n) for d, _, names in os.walk(p) for n in names
                            if n.endswith((".yaml", ".yml")))
        elif os.path.exists(p):
            files.append(as_path_str(p))
    if config_path:
        files.append(as_path_str(config_path))
    return files


def as_path_str(p: str) -> str:
    """``str(Path(p))`` without pathlib: duplicate slashes and ``.`` parts go, ``..`` stays
    (folding it would change what a symlinked folder means). Keeps the cache key the same as the
    full path's."""
    lead = "//" if p.startswith("//") and not p.startswith("///") else ("/" if p.startswith("/") else "")
    parts = [x for x in p.split("/") if x not in ("", ".")]
    return lead + "/".join(parts) if (lead or parts) else "."


def stderr_dir() -> str | None:
    """rules/stderr beside the package (a checkout) or inside it (an install)."""
    guard_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for cand in (os.path.join(os.path.dirname(guard_dir), "rules", "stderr"), os.path.join(guard_dir, "rules", "stderr")):
        if os.path.isdir(cand):
            return cand
    return None


def stderr_paths(env: Mapping[str, str]) -> list[str]:
    """The shipped rules, then ``GUARD_RULES`` (colon-separated files or folders)."""
    paths: list[str] = []
    d = stderr_dir()
    if d is not None:
        paths.append(d)
    paths.extend(p for p in env.get("GUARD_RULES", "").split(":") if p)
    return paths


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Files as given; folders become their ``.yaml``/``.yml`` files, recursively, sorted."""
    out: list[str] = []
    for p in paths:
        p = entry_path(os.fspath(p))
        if os.path.isdir(p):
            found = [os.path.join(d, n) for d, _, names in os.walk(p) for n in names
                     if n.endswith((".yaml", ".yml")) and os.path.isfile(os.path.join(d, n))]
            out.extend(sorted(found))
        else:
            out.append(p)
    return out
