"""Files a command sources (``source FILE``, ``. FILE``): rc files, completion scripts, libraries,
and the shell snapshots agent hosts source before every command (docs/behaviour.md §9 item 14).

What such a file defines becomes the session's state: its functions are recorded with their
source text and count only where the command calls them; its other top-level commands (aliases,
exports, anything else) are walked in the caller's state. Claude Code's snapshot serialises each
function as ``eval "$(echo '<base64>' | base64 -d)" > /dev/null 2>&1``: those blocks are decoded
and recorded as definitions, never walked as code. ``shopt``/``set -o`` lines set options only.

The file is walked with budgets of its own, so however large or costly it is, the command's own
text after it is still analysed. What a file defines is computed once per content: kept in
memory by digest, and for large files also on disk (``$XDG_CACHE_HOME/guard/sourced/``), so a
100 KB snapshot costs one read of its definitions in every later process; the analysis server
keeps in memory those its workers had to read (``read_afresh``, ``adopt``), so the workers it forks
after that skip the read too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re

from guard.record import dataclass
from guard.system.cachedir import read_private, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.resolve.state import Frame, State, Walker

VERSION = 1  # of what is cached; bump when the extraction changes
DISK_MIN = 4 * 1024  # files at least this large are cached on disk too
MEMO_MAX = 64
NESTED_FILES = 32  # sourced files followed per command at most
FILE_BUDGET = 128 * 1024  # characters of nested code a sourced file may parse
FILE_NODES = 20000  # nodes a sourced file's walk may visit

_B64_EVAL = re.compile(
    r"""eval\s+"\$\(\s*echo\s+'([A-Za-z0-9+/=\s]*)'\s*\|\s*base64\s+(?:-d|--decode)\s*\)"(?:\s*>\s*/dev/null)?(?:\s*2>&1)?\s*;?\s*""")
_OPTION_LINE = re.compile(r"(?:shopt\s+-[su]\s+[\w-]+|set\s+[-+]o\s+[\w-]+|shopt\s+-[su]o?\s+[\w-]+)\s*;?\s*")


@dataclass(frozen=True, slots=True)
class Definitions:
    """What one sourced file does to the shell, in order: ``("function", name, source)`` and
    ``("code", text)`` items."""

    items: tuple[tuple[str, ...], ...]

    @property
    def functions(self) -> dict[str, str]:
        return {i[1]: i[2] for i in self.items if i[0] == "function"}


_memo: dict[str, Definitions] = {}


def digest(text: str) -> str:
    h = hashlib.sha256(f"guard-sourced-{VERSION}\0".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


# --------------------------------------------------------------------------- extraction


def _chunks(text: str) -> list[tuple[str, str, str | None]]:
    """The file cut at its top-level commands: ``(node type, text, function name)``. The pieces
    cover the whole file, so nothing is lost when tree-sitter misreads one of them."""
    from guard.parse._ts_loader import get_parser

    data = text.encode("utf-8", "surrogatepass")
    root = get_parser().parse(data).root_node
    kids = [c for c in root.children if c.type != "comment"]
    ascii_only = len(data) == len(text)  # byte offsets are character offsets

    def cut(a: int, b: int) -> str:
        return text[a:b] if ascii_only else data[a:b].decode("utf-8", "replace")

    out: list[tuple[str, str, str | None]] = []
    for i, node in enumerate(kids):
        start = node.start_byte if i else 0
        end = kids[i + 1].start_byte if i + 1 < len(kids) else len(data)
        piece = cut(start, end)
        name = None
        if node.type == "function_definition" and not node.has_error:
            n = node.child_by_field_name("name")
            name = cut(n.start_byte, n.end_byte) if n is not None else None
        out.append((node.type, piece, name))
    return out


def _strip_comments(piece: str) -> str:
    lines = [ln for ln in piece.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return "\n".join(lines)


def extract(text: str, depth: int = 0) -> Definitions:
    """Split a sourced file into function definitions and the code that runs when it is sourced."""
    items: list[tuple[str, ...]] = []
    code: list[str] = []

    def flush() -> None:
        if code:
            items.append(("code", "\n".join(code)))
            code.clear()

    for _kind, piece, name in _chunks(text):
        if name is not None:
            flush()
            items.append(("function", name, piece.strip()))
            continue
        body = _strip_comments(piece)
        if not body or _OPTION_LINE.fullmatch(body):
            continue
        m = _B64_EVAL.fullmatch(body)
        if m and depth < 2:
            try:
                decoded = base64.b64decode("".join(m.group(1).split()), validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                decoded = None
            if decoded is not None:
                inner = extract(decoded, depth + 1)
                if all(i[0] == "function" for i in inner.items):
                    flush()
                    items.extend(inner.items)
                    continue
        code.append(body)
    flush()
    return Definitions(tuple(items))


# --------------------------------------------------------------------------- the cache


def _cache_dir(env: dict) -> str | None:
    if (env.get("GUARD_CACHE") or "").lower() in ("0", "off", "no"):
        return None
    base = env.get("XDG_CACHE_HOME") or (os.path.join(env["HOME"], ".cache") if env.get("HOME") else None)
    return os.path.join(base, "guard", "sourced") if base else None


def _load(path: str) -> Definitions | None:
    data = read_private(path)  # only a cache file this user wrote and nobody else can change
    if data is None:
        return None
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, list) or not all(isinstance(i, list) and all(isinstance(x, str) for x in i) for i in raw):
        return None
    return Definitions(tuple(tuple(i) for i in raw))


def _store(folder: str, path: str, defs: Definitions) -> None:
    # a cache that cannot be written only costs time
    write_private(path, json.dumps([list(i) for i in defs.items], ensure_ascii=False).encode("utf-8", "surrogateescape"))


def definitions(text: str, env: dict | None = None) -> Definitions:
    """What ``text`` defines when sourced: from memory, else the disk cache, else extracted."""
    key = digest(text)
    hit = _memo.get(key)
    if hit is not None:
        return hit
    folder = _cache_dir(env or {}) if len(text) >= DISK_MIN else None
    path = os.path.join(folder, key + ".json") if folder else None
    defs = _load(path) if path else None
    if defs is None:
        defs = extract(text)
        if path and folder:
            _store(folder, path, defs)
    if path:
        _fresh.append((key, path))
    _keep(key, defs)
    return defs


def _keep(key: str, defs: Definitions) -> None:
    if len(_memo) >= MEMO_MAX:
        _memo.clear()
    _memo[key] = defs


_fresh: list[tuple[str, str]] = []  # (digest, disk cache file) of definitions not found in memory


def read_afresh() -> list[tuple[str, str]]:
    """The definitions this process had to read from the disk cache (or extract and store there)
    since the last call, as (digest, cache file): for the analysis server to learn from its
    workers which sourced files its callers use."""
    out = _fresh[:]
    _fresh.clear()
    return out


def adopt(key: str, path: str) -> bool:
    """Keep in memory the definitions the disk cache file ``path`` holds for digest ``key`` (the
    analysis server, so that the workers it forks later find them there). True when kept."""
    if key in _memo:
        return True
    if os.path.basename(path) != key + ".json":
        return False
    defs = _load(path)
    if defs is None:
        return False
    _keep(key, defs)
    return True


# --------------------------------------------------------------------------- walking


def source(w: Walker, text: str, st: State, fr: Frame, via: str) -> None:
    """``source FILE`` in state ``st``: record what the file defines, walk what it runs.

    The walk of the file's own code has budgets of its own; the caller's are restored after
    it, so the command's text after the ``source`` is analysed whatever the file cost.
    """
    from guard.resolve.state import Frame as _Frame

    count = getattr(w, "sourced_files", 0)
    if count >= NESTED_FILES or fr.depth >= w.sink.max_depth:
        w.sink.note(f"{via}: more than {NESTED_FILES} sourced files, or nested too deep; not analysed")
        return
    w.sourced_files = count + 1  # type: ignore[attr-defined]
    env = {k: v for k, v in st.vars.items() if k in ("HOME", "XDG_CACHE_HOME", "GUARD_CACHE") and isinstance(v, str)}
    defs = definitions(text, env)
    inner = _Frame(fr.via + (via,), fr.depth + 1, "sh")
    saved = (w.sink.reparse_budget, w.sink.budget)
    try:
        w.sink.reparse_budget, w.sink.budget = FILE_BUDGET, FILE_NODES
        for item in defs.items:
            if item[0] == "function":
                st.functions[item[1]] = item[2]
            elif w.sink.reparse_budget > 0:
                w.string_in(item[1], st, inner)
    finally:
        w.sink.reparse_budget, w.sink.budget = saved


def startup(w: Walker, files: tuple[str, ...], st: State) -> None:
    """The files a shell reads before the command (a login shell's profiles): what they define
    becomes the state; what they run is the machine's own set-up, so their invocations and notes
    go to a sink of their own and are dropped."""
    from guard.resolve.files import read_text
    from guard.resolve.state import Frame as _Frame
    from guard.resolve.state import Sink

    outer = w.sink
    w.sink = Sink()
    try:
        for path in files:
            text, _ = read_text(path, FILE_BUDGET * 4)  # the one safe reader: regular files only
            if text is not None:
                source(w, text, st, _Frame(), f"profile {path}")
    except RecursionError:
        pass
    finally:
        w.sink = outer
        w.sourced_files = 0  # type: ignore[attr-defined]
