"""The command strings agent hosts wrap around what the agent wrote, when guard-shell is their
``$SHELL``.

- Claude Code: ``$SHELL -c -l "source SNAPSHOT && eval 'CMD' \\< /dev/null && pwd -P >| CWDFILE"``
  (``CMD`` single-quoted with ``'\\''``; without ``source SNAPSHOT &&`` when it has no snapshot).
- Codex with a shell snapshot: ``$SHELL -lc ". SNAPSHOT && CMD"``, the snapshot under
  ``…/shell_snapshots/``.

``unwrap`` finds ``CMD`` and the snapshot, so that the analysis judges what the agent wrote with
the snapshot's definitions as its state (``source SNAPSHOT`` then ``CMD`` as the command's own
text), a refusal names ``CMD`` and never the wrapper, and the audit log records ``CMD`` and the
host. Anything that is not exactly one of these shapes is left alone (and analysed whole).

Only string operations: this runs on guard-shell's hot path, where ``re`` costs milliseconds.
"""

from __future__ import annotations

_META = set(" \t\n;&|<>()`$\"'\\*?[]{}#~")


class Wrapped:
    __slots__ = ("client", "snapshot", "inner")

    def __init__(self, client: str, snapshot: str | None, inner: str) -> None:
        self.client, self.snapshot, self.inner = client, snapshot, inner

    def analysis_text(self) -> str:
        """``source SNAPSHOT`` (its definitions become the state) then the agent's command."""
        if not self.snapshot:
            return self.inner
        return f"source {quote(self.snapshot)}\n{self.inner}"

    def __repr__(self) -> str:
        return f"Wrapped({self.client!r}, {self.snapshot!r}, {self.inner!r})"


def quote(word: str) -> str:
    if word and not any(c in _META for c in word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def _word(text: str, i: int) -> tuple[str, int] | None:
    """A plain, single-quoted or expansion-free double-quoted word at ``i``: (value, end)."""
    out: list[str] = []
    n = len(text)
    start = i
    while i < n and text[i] not in " \t\n":
        c = text[i]
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                return None
            out.append(text[i + 1 : j])
            i = j + 1
        elif c == '"':
            j = text.find('"', i + 1)
            if j < 0 or any(ch in text[i + 1 : j] for ch in "$`\\"):
                return None
            out.append(text[i + 1 : j])
            i = j + 1
        elif c == "\\" and i + 1 < n and text[i + 1] == "'":
            out.append("'")
            i += 2
        elif c in _META:
            return None
        else:
            out.append(c)
            i += 1
    if i == start:
        return None
    return "".join(out), i


def _claude(text: str) -> Wrapped | None:
    i, snapshot = 0, None
    if text.startswith("source "):
        got = _word(text, 7)
        if got is None or not text.startswith(" && ", got[1]):
            return None
        snapshot, i = got[0], got[1] + 4
    if not text.startswith("eval '", i):
        return None
    got = _word(text, i + 5)
    if got is None:
        return None
    inner, i = got
    tail = " \\< /dev/null && pwd -P >| "
    if not text.startswith(tail, i):
        return None
    cwd_file = text[i + len(tail) :]
    if not cwd_file or any(c in _META for c in cwd_file):
        return None
    return Wrapped("claude-code", snapshot, inner)


def _codex(text: str) -> Wrapped | None:
    for head in (". ", "source "):
        if text.startswith(head):
            got = _word(text, len(head))
            if got is None or "/shell_snapshots/" not in got[0] or not text.startswith(" && ", got[1]):
                return None
            inner = text[got[1] + 4 :]
            return Wrapped("codex", got[0], inner) if inner.strip() else None
    return None


def unwrap(text: str) -> Wrapped | None:
    """The host wrapper around ``text``, or None when ``text`` is not one."""
    if not text or len(text) > 4 * 1024 * 1024:
        return None
    return _claude(text) or _codex(text)


def sourced_first(text: str) -> str | None:
    """The file ``text`` sources before anything else (``source FILE && …``, ``. FILE && …``,
    ``source FILE`` then a newline): the shape every host wrapper above starts with when it has
    a snapshot, and that of a command written the same way. None for anything else."""
    for head in ("source ", ". "):
        if text.startswith(head):
            got = _word(text, len(head))
            if got is not None and (text.startswith(" && ", got[1]) or text.startswith("\n", got[1])):
                return got[0]
    return None


def client(env: object, wrapped: Wrapped | None = None) -> str | None:
    """The agent host running this shell: from its wrapper, else from its environment."""
    if wrapped is not None:
        return wrapped.client
    get = getattr(env, "get", None)
    if get is not None and get("CLAUDECODE") == "1":
        return "claude-code"
    return None


def identify(rec: dict, client: str | None, session: str | None) -> dict:
    """An audit record with the agent host (``client``) and its session id; the session is the
    thread too when GUARD_THREAD gave none, so retries are counted per session."""
    from guard.audit.log import _cap

    rec["client"] = _cap(client)
    rec["session"] = _cap(session)
    if session and not rec.get("thread"):
        rec["thread"] = _cap(session)
    return rec
