"""The IR of a plain command, read without tree-sitter.

Two commands in three that agents run are plain: words of ordinary characters and quoted text
without expansions, joined by ``&&``, ``||``, ``|`` and ``;``, perhaps ending in ``>FILE``,
``2>/dev/null`` or ``2>&1`` (``grep -rn "def f" src | head -20``). For those this module builds the
very IR the tree-sitter lowering builds (same words, parts, positions, redirects and shapes; the
parse tests compare the two over the shared corpus), in 0.4–0.7 of the time: no parser run, no
tree nodes visited. Globs (``*.py``) and tildes stay literal text here as there: the resolve
stage expands them. ``lower`` answers None for anything else — an expansion, a backslash, a
bracket or brace, a newline, a reserved word or an assignment where a command name stands, any
redirection but those above — and the caller parses that text with tree-sitter as before.
"""

from __future__ import annotations

import re

import guard.parse.build as build
from guard.ir import Lit, Redirect, Script, Simple, Word
from guard.parse.words import merge_lits

MAX_PLAIN = 4096  # characters; longer commands are rarely plain and tree-sitter is linear anyway

# One token per match: blanks, a word of plain characters only, a word with quoted text (no
# expansion, escape, history mark or newline inside the quotes), an operator, a redirection
# operator. ``findall`` gives one tuple per token with only its own group non-empty; tokens are
# contiguous exactly when their lengths add up to the length of the command.
_PIECES = (
    r"[ \t]+",
    r"[A-Za-z0-9_./:+,=*?~-]++(?!['\"])",
    r"(?:[A-Za-z0-9_./:+,=*?~-]++|'[^'\n]*+'|\"[^\"\\$`!\n]*+\")++",
    r"&&|\|\||[|;]",
    r">>?(?:&(?=[0-9]))?",
)
_TOKEN = re.compile("|".join(f"({p})" for p in _PIECES))
_WHOLE = re.compile("(?:" + "|".join(_PIECES) + ")*+")  # the same tokens, as one test of the whole text
# A command name as most commands have one (``git``, ``./run.sh``, ``python3.11``); other names
# (``-``, ``:``, ``a+:``, ``x=1``) are where tree-sitter-bash has quirks of its own.
_NAME = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./-]*")
_PIECE = re.compile(r"[^'\"]+|'[^']*'|\"[^\"]*\"")
# Words that make the command something other than a simple command where a command name
# stands (compound commands, declarations, keywords the lowering strips).
_NOT_A_NAME = frozenset({
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "select",
    "function", "in", "time", "coproc", "declare", "typeset", "export", "local", "readonly", "unset",
})


def _quoted_word(text: str, start: int) -> Word:
    parts: list[Lit] = []
    for piece in _PIECE.findall(text):
        if piece[0] in "'\"":
            parts.append(Lit(piece[1:-1], True))
        else:
            parts.append(Lit(piece))
    return Word(text, merge_lits(parts), (start, start + len(text)))


def _simple(words: list[Word], redirects: list[Redirect]) -> Simple | None:
    head = words[0].raw
    if head in _NOT_A_NAME or not _NAME.fullmatch(head):
        return None
    if redirects and any(w.raw == "-" for w in words):
        return None  # tree-sitter-bash drops a lone ``-`` before a redirection
    return Simple(tuple(words), (), tuple(redirects), pos=(words[0].pos[0], words[-1].pos[1]))


def lower(src: str, base: int = 0) -> Script | None:
    """The IR of ``src`` when it is a plain command (as ``treesitter.lower`` would give it),
    else None. ``base`` is the offset of ``src`` in the whole command."""
    if len(src) > MAX_PLAIN or "==" in src or not _WHOLE.fullmatch(src):
        return None  # (tree-sitter-bash reads ``==`` as a test operator anywhere)
    items: list = []  # (node, False) per statement
    stream: list = []  # the statement being read: Simple nodes and operator strings
    words: list[Word] = []
    redirects: list[Redirect] = []
    pending: str | None = None  # a redirection operator waiting for its target
    fd: int | None = None  # its descriptor
    at = base  # offset of the token in the whole command
    glued = False  # the last token was a word, touching whatever follows
    for blank, plain, quoted, op, redir in _TOKEN.findall(src):
        if blank:
            at += len(blank)
            glued = False
            continue
        text = plain or quoted
        if text:
            n = len(text)
            word = Word(text, (Lit(text),), (at, at + n)) if plain else _quoted_word(text, at)
            at += n
            glued = True
            if pending is not None:
                if pending == ">&" and not text.isdigit():
                    return None
                redirects.append(Redirect(pending, fd, word))
                pending = None
            elif redirects:
                return None  # a word after a redirection: left to the full parser
            else:
                words.append(word)
            continue
        if redir:
            if pending is not None:
                return None
            fd = None
            if glued:  # ``2>…``: a glued 1 or 2 is the descriptor, anything else is not plain
                last = words[-1] if words and not redirects else None
                if last is None or last.raw not in ("1", "2") or src[last.pos[0] - base - 1 : last.pos[0] - base] not in ("", " ", "\t"):
                    return None
                words.pop()
                fd = int(last.raw)
            pending = redir
            at += len(redir)
            glued = False
            continue
        # an operator
        at += len(op)
        glued = False
        if pending is not None or not words:
            return None  # an operator missing its target, or with no command before it
        node = _simple(words, redirects)
        if node is None:
            return None
        stream.append(node)
        words, redirects = [], []
        if op == ";":
            items.append((build.build_chain(stream), False))
            stream = []
        else:
            stream.append(op)
    if at - base != len(src) or pending is not None:
        return None  # a character no token takes, or ``>`` at the end
    if words:
        node = _simple(words, redirects)
        if node is None:
            return None
        stream.append(node)
    elif redirects or (stream and isinstance(stream[-1], str)):
        return None  # ``a &&`` at the end: incomplete
    if stream:
        items.append((build.build_chain(stream), False))
    if not items:
        return None
    return Script(build.make_sequence(items), src, "tree-sitter")
