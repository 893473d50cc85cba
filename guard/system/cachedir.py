"""Where guard keeps its caches: ``$XDG_CACHE_HOME/guard``, else ``~/.cache/guard``.

One answer for every cache (compiled rules, the pre-check plan, the stderr digest, the bashlex
tables, sourced files), found with ``posix`` alone: the pre-check asks it before ``os`` is loaded.
"""

# No `from __future__ import annotations`: the pre-check imports this module (see guard/shell/precheck.py).
import posix

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def _home() -> str:
    home = posix.environ.get(b"HOME")
    if home is not None:
        return home.decode("utf-8", "surrogateescape")
    try:
        import pwd

        return pwd.getpwuid(posix.getuid()).pw_dir
    except (ImportError, KeyError):
        return "/"


def cache_root(env: "Mapping[str, str] | None" = None) -> str:
    """``$XDG_CACHE_HOME/guard`` or ``$HOME/.cache/guard`` of ``env`` (default: this process's
    environment; with ``env`` given and no HOME in it, the user's home from the password file)."""
    if env is None:
        base = posix.environ.get(b"XDG_CACHE_HOME", b"").decode("utf-8", "surrogateescape")
        home = "" if base else _home()
    else:
        base = env.get("XDG_CACHE_HOME") or ""
        home = "" if base else (env.get("HOME") or _home())
    if not base:
        base = home.rstrip("/") + "/.cache"
    return base.rstrip("/") + "/guard" if base != "/" else "/guard"
