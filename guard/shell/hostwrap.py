"""The command strings agent hosts wrap around what the agent wrote, when guard-shell is the
shell they run.

The shapes are data, one entry per host and version family (``guard.shell.wrappers``): Claude
Code 2.1 (``source SNAP 2>/dev/null || true && shopt -u extglob 2>/dev/null || true && eval 'CMD'
< /dev/null && pwd -P >| CWDFILE``) and before it, Gemini CLI (``shopt -u …; _bgpids_file=F`` then
``CMD`` in a subshell), and Codex with a shell snapshot (``. SNAP && CMD``).

``unwrap`` finds ``CMD`` and the snapshot, so that the analysis judges what the agent wrote with
the snapshot's definitions as its state (``source SNAPSHOT`` then ``CMD`` as the command's own
text), a refusal names ``CMD`` and never the wrapper, and the audit log records ``CMD`` and the
host. Anything that is not exactly one of these shapes is left alone (and analysed whole).
``client`` and ``session`` name the host from the variables it sets in its commands' environment
when there is no wrapper to tell.

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


def _plain(text: str, i: int, stop: str | None) -> tuple[str, int] | None:
    """A word of no shell metacharacters at ``i``, up to ``stop`` (or the end): (value, end)."""
    end = len(text) if stop is None else text.find(stop, i)
    if end <= i:
        return None
    value = text[i:end]
    if any(c in _META for c in value):
        return None
    return value, end


def _match(pieces: tuple[object, ...], text: str, i: int, got: dict[str, str]) -> int:
    """Match the shape ``pieces`` (guard.shell.wrappers) at ``i``: the end of the match, or -1.
    Fills ``got`` with the words it took."""
    if not pieces:
        return i
    piece, more = pieces[0], pieces[1:]
    if isinstance(piece, str):
        return _match(more, text, i + len(piece), got) if text.startswith(piece, i) else -1
    kind = piece[0]
    if kind == "optional":
        trial = dict(got)
        end = _match(tuple(piece[1]) + more, text, i, trial)  # type: ignore[arg-type]
        if end == len(text):
            got.update(trial)
            return end
        return _match(more, text, i, got)
    if kind == "repeat":  # the pieces once more then the repeat again, or on to what follows
        trial = dict(got)
        end = _match(tuple(piece[1]) + (piece,) + more, text, i, trial)  # type: ignore[arg-type]
        if end == len(text):
            got.update(trial)
            return end
        return _match(more, text, i, got)
    if kind == "command":  # as it is, up to the text that must end the whole string
        if not more:
            got["command"] = text[i:]
            return len(text)
        tail = more[0]
        if len(more) != 1 or not isinstance(tail, str) or not text.endswith(tail) or len(text) - len(tail) < i:
            return -1
        got["command"] = text[i : len(text) - len(tail)]
        return len(text)
    if kind == "path":
        word = _plain(text, i, more[0] if more and isinstance(more[0], str) else None)
    elif kind == "name":  # 'NAME' or NAME, right before the next text of the shape
        stop = more[0] if more and isinstance(more[0], str) else None
        if text.startswith("'", i):
            j = text.find("'", i + 1)
            word = (text[i + 1 : j], j + 1) if j > i else None
        else:
            word = _plain(text, i, stop)
    elif kind == "eval-word" and text.startswith('"', i):  # hosts quote it with '…' or not at all
        return -1
    else:  # snapshot, eval-word
        word = _word(text, i)
    if word is None:
        return -1
    if kind != "name":
        got[kind] = word[0]
    return _match(more, text, word[1], got)


def unwrap(text: str) -> Wrapped | None:
    """The host wrapper around ``text``, or None when ``text`` is not one."""
    if not text or len(text) > 4 * 1024 * 1024:
        return None
    from guard.shell.wrappers import WRAPPERS

    for client, _family, pieces, snapshot_has in WRAPPERS:
        first = pieces[0]
        if isinstance(first, str) and not text.startswith(first):
            continue
        got: dict[str, str] = {}
        if _match(pieces, text, 0, got) != len(text):
            continue
        inner = got.get("eval-word", got.get("command"))
        snapshot = got.get("snapshot")
        if inner is None or not inner.strip() or (snapshot_has and snapshot_has not in (snapshot or "")):
            continue
        return Wrapped(client, snapshot, inner)
    return None


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
    found = _from_environment(env)
    return found[0] if found else None


def session(env: object) -> str | None:
    """The host's session id, where the host puts it in its commands' environment."""
    found = _from_environment(env)
    return found[1] if found else None


def _from_environment(env: object) -> tuple[str, str | None] | None:
    get = getattr(env, "get", None)
    if get is None:
        return None
    from guard.shell.wrappers import ENVIRONMENT

    for var, value, name, session_var in ENVIRONMENT:
        got = get(var)
        if got and (not value or got == value):
            return name, (get(session_var) or None) if session_var else None
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
