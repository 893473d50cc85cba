"""Where the stderr rules live, and the digest that lets a command skip loading them.

Light on purpose (``os`` only): the relay consults this on every command that
writes anything to stderr, and importing the rule loader, ``re``, ``json`` and RE2 costs about
15 ms.

The digest of a rule set holds the literal strings ("needles") one of which every match of every
pattern contains, and whether loading the set reported problems. It is written the first time
the full rule set is loaded and found again by a hash of the rule files' names and bytes, so an
edited rule file gets a new digest.
"""

from __future__ import annotations

import os

from guard.system.cachedir import cache_root, read_private, write_private

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

DIGEST_FORMAT = "stderr-digest/3"


def cache_dir(env: Mapping[str, str]) -> str:
    return cache_root(env) + "/stderr-rules"


def digest_key(files: list[str]) -> str:
    """A hash of the files' names and bytes (a missing file hashes as missing)."""
    try:
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - other Pythons
        from hashlib import sha256  # type: ignore[assignment]

    h = sha256(DIGEST_FORMAT.encode())
    try:  # the needles are the matcher's reading of the patterns: new matcher code, new digest
        st = os.stat(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "act", "matcher.py"))
        h.update(f"\0matcher\0{st.st_mtime_ns}\0{st.st_size}".encode())
    except OSError:
        pass
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            h.update(f"\0{f}\0missing".encode("utf-8", "surrogateescape"))
            continue
        h.update(f"\0{f}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        h.update(data)
    return h.hexdigest()[:32]


def _digest_path(env: Mapping[str, str], key: str) -> str:
    return os.path.join(cache_dir(env), f"digest-{key}.txt")


def read_digest(env: Mapping[str, str], key: str) -> tuple[tuple[bytes, ...], bool] | None:
    """(needles, had problems) for the rule set with this key, or None when not known. The file
    is text (a header, then one needle in hex a line) read only from a private cache folder."""
    data = read_private(_digest_path(env, key))
    if data is None:
        return None
    lines = data.split(b"\n")
    if len(lines) < 2 or lines[-1] != b"" or lines[0] not in (b"problems 0", b"problems 1"):
        return None
    try:
        needles = tuple(bytes.fromhex(n.decode("ascii")) for n in lines[1:-1])
    except ValueError:
        return None
    if not all(needles):
        return None
    return needles, lines[0] == b"problems 1"


def write_digest(env: Mapping[str, str], key: str, needles: tuple[bytes, ...], problems: bool) -> None:
    """Store the digest (atomically); a failure only means the next command loads the rules."""
    body = b"".join(n.hex().encode() + b"\n" for n in needles)
    write_private(_digest_path(env, key), (b"problems 1\n" if problems else b"problems 0\n") + body)
