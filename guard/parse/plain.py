"""The IR of a plain command, read without tree-sitter.

Most commands agents run are plain: words of ordinary characters, escapes and quoted text without
expansions, perhaps ``NAME=value`` prefixes, joined by ``&&``, ``||``, ``|``, ``;``, ``&`` and
newlines, with ``>FILE``, ``<FILE``, ``2>/dev/null``, ``2>&1``, here-documents whose bodies expand
nothing and comments (``grep -rn "def f" src | head -20``, ``cat <<'EOF' > t.py``,
``nohup ./serve > log 2>&1 &`` …). For those this module
builds the very IR the tree-sitter lowering builds (same words, parts, positions, redirects and
shapes; the parse tests compare the two over the shared corpus, the peers' cases and the fixtures)
at a fraction of the cost: one regular-expression pass per line, no parser run, no tree nodes
visited. Globs (``*.py``) and tildes stay literal text here as there: the resolve stage expands
them. ``lower`` answers None for anything else — an expansion, a bracket or brace, a reserved
word where a command name stands, any other redirection — and the caller parses that text with
tree-sitter as before.
"""

from __future__ import annotations

import re

import guard.parse.build as build
from guard.ir import AndOr, Assign, Lit, Pipeline, Redirect, Script, Simple, Word
from guard.parse.words import lex_word, merge_lits, unescape_dquoted

MAX_PLAIN = 64 * 1024  # characters; the reader is linear, but past this tree-sitter's budgets apply

_CHARS = r"[A-Za-z0-9_./:+,=*?~-]"
# One token per match: the blanks before it (with line continuations), then a run of words of
# plain characters only, one space apart (``-rn src``: one token, not two, and one tuple for
# ``findall`` to build), a word with escapes or quoted text (no expansion or history mark inside
# the quotes), an operator, a redirection operator or a here-document operator with its
# delimiter. It skips a character no token takes, so ``lower`` checks at the end that the
# tokens' lengths add up to the whole text.
_PIECES = (
    _CHARS + r"++(?![\\'\"])(?: " + _CHARS + r"++(?![\\'\"]))*+",
    r"(?:" + _CHARS + r"++|\\[^\n]|'[^']*+'|\"(?:[^\"\\$`!]++|\\[^\n])*+\")++",
    r"&&|\|\||[|;\n]|&(?![&>])",  # a lone ``&`` runs what it ends in the background; ``&>`` is not read here
    r">>?(?:&(?=[0-9]))?|<(?![<>&(])",
    r"<<(?![<-])[ \t]*+(?:'[A-Za-z_][A-Za-z0-9_]*+'|\"[A-Za-z_][A-Za-z0-9_]*+\"|[A-Za-z_][A-Za-z0-9_]*+)(?=[ \t\n])",
    r"#[^\n]*+",  # a comment, where a word could start (``lower`` declines one glued to a word)
)
# Blanks and line continuations: a run of blanks is one count of a character class, not a
# repeated two-way group (which made the token pattern 14% slower over the corpus)
_BLANKS = r"[ \t]*+(?:\\\n[ \t]*+)*+"
# Three groups, not one per piece: the blanks, a run of plain words (most tokens), or any other
# token, told apart by its first character in ``lower``. ``findall`` builds a tuple of every
# group's text per token: over the corpus the seven-group pattern cost 57 ms, this one 45.
_TOKEN = re.compile(f"({_BLANKS})(?:({_PIECES[0]})|(" + "|".join(_PIECES[1:]) + "))")
_OPERATOR_START = "&|;\n"  # the first character of an operator token
_NOT_A_WORD = "&|;\n<>#"  # … and of a redirection or here-document operator, or a comment
# Whether a run of text is all tokens, in one test: asked first of a long run only, or of one
# with a ``$``. On a short one (nearly every command) the offset check after the tokens are read
# finds the same, without a second pass; on a long one, text that is not plain fails here at its
# first odd character instead of being read to the end first (62 KB of words after a ``$x``:
# 0.05 ms, not 15).
_WHOLE = re.compile(f"(?:{_BLANKS}(?:" + "|".join(_PIECES) + "))*+")
CHECK_FIRST = 512  # characters
_HEREDOC = re.compile(r"<<[ \t]*+(['\"]?)([A-Za-z_][A-Za-z0-9_]*+)")
# A command name as most commands have one (``git``, ``./run.sh``, ``python3.11``, ``g++``,
# ``~/bin/tool``: tree-sitter-bash reads a leading tilde and a plus as word text, as here); other
# names (``-``, ``:``, ``+x``, ``a+:``) are where tree-sitter-bash has quirks of its own.
_NAME = re.compile(r"[A-Za-z0-9_./~][A-Za-z0-9_./~+-]*")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+(\+?)=")
_PIECE = re.compile(r"(?:[^'\"\\]++|\\[\s\S])++|'[^']*+'|\"(?:[^\"\\]++|\\[\s\S])*+\"")
# Words that make the command something other than a simple command where a command name
# stands (compound commands, declarations, keywords the lowering strips).
_NOT_A_NAME = frozenset({
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "select",
    "function", "in", "time", "coproc", "declare", "typeset", "export", "local", "readonly", "unset",
})
_LITS: dict[str, tuple[Lit]] = {}  # the parts of a plain word, by its text (records are frozen: guard/record.py)
_NAMES: dict[str, bool] = {}  # whether a first word is a command name read here, by its text


def _parts(text: str, start: int) -> tuple:
    """The parts of a word with escapes or quotes, as the lowering merges them."""
    q = text[0]
    if (q == '"' or q == "'") and text.find(q, 1) == len(text) - 1 and (q == "'" or "\\" not in text):
        # one quoted piece with nothing to unescape (``"def f"``, ``'*.py'``): six in seven of the
        # words with quotes in the corpus, read at half the cost of the loop below (0.56 µs, not 1.1)
        return (Lit(text[1:-1], True),)
    parts: list[Lit] = []
    for piece in _PIECE.findall(text):
        c = piece[0]
        if c == "'":
            parts.append(Lit(piece[1:-1], True))
        elif c == '"':
            parts.append(Lit(unescape_dquoted(piece[1:-1]), True))
        elif "\\" in piece:
            parts.extend(lex_word(piece, start, None))
        else:
            parts.append(Lit(piece))
        start += len(piece)
    return merge_lits(parts)


def _simple(words: list[Word], assigns: list[Assign], redirects: list[Redirect], start: int) -> Simple | None:
    head = words[0].raw
    ok = _NAMES.get(head)
    if ok is None:
        ok = head not in _NOT_A_NAME and _NAME.fullmatch(head) is not None
        if len(_NAMES) < 4096:  # command names recur (git, ls, cd): the test once per name
            _NAMES[head] = ok
    if not ok:
        return None
    if redirects:
        for w in words:  # a loop, not any() over a generator: one Simple per command read here
            if w.raw == "-":
                return None  # tree-sitter-bash drops a lone ``-`` before a redirection
    # most commands have neither assignments nor redirections: ``()`` spares two tuple() calls
    return Simple(tuple(words), tuple(assigns) if assigns else (), tuple(redirects) if redirects else (),
                  (start, words[-1].pos[1]))


def _bodies(src: str, base: int) -> tuple[list, list[Redirect]] | None:
    """The text cut into runs the token pattern reads, and the here-documents between them.

    Each here-document's body starts after the newline that ends its line and runs to the line
    that is its delimiter alone; that newline stays a token, the body and delimiter line become
    one token with None for its blanks. None when a here-document is not the kind read here.
    """
    tokens: list = []
    docs: list[Redirect] = []
    p = 0
    while True:
        k = src.find("<<", p)
        if k < 0:
            if len(src) - p > CHECK_FIRST and not _WHOLE.fullmatch(src, p):
                return None
            tokens += _TOKEN.findall(src, p)
            return tokens, docs
        m = _HEREDOC.match(src, k)
        if m is None:
            return None
        nl = src.find("\n", m.end())
        if nl < 0 or src.find("<<", m.end(), nl) >= 0:
            return None  # no body, or two here-documents on one line
        delim = m.group(2)
        quoted = bool(m.group(1))
        end = src.find("\n" + delim + "\n", nl)
        if end < 0:
            if not src.endswith("\n" + delim) or len(src) - len(delim) - 1 < nl:
                return None
            end = len(src) - len(delim) - 1
        b0, e0 = nl + 1, end + 1
        while b0 < e0 and src[b0] == "\n":
            b0 += 1  # tree-sitter-bash's body starts at its first line with text
        body = src[b0:e0]
        if body[:1] in (" ", "\t") and not src[b0:src.find("\n", b0)].strip(" \t"):
            return None  # a first line of blanks only: where tree-sitter starts it is not tried here
        if body and (delim in body and re.search(r"(?:^|\n)[ \t]*" + delim, src[b0 : e0 - 1]) is not None
                     or (not quoted and ("$" in body or "`" in body or "\\" in body))):
            return None  # a line the terminator test might read otherwise, or a body that expands
        if nl + 1 - p > CHECK_FIRST and not _WHOLE.fullmatch(src, p, nl + 1):
            return None
        tokens += _TOKEN.findall(src, p, nl + 1)
        tokens.append((None, "", src[b0 : e0 + len(delim)]))  # the body: ``lower`` steps over it
        docs.append(Redirect("<<", None, None, Word(body, (Lit(body, True),) if body else (), (base + b0, base + e0)),
                             quoted))
        p = e0 + len(delim)


def _plain_parts(text: str) -> tuple[Lit]:
    parts = (Lit(text),)
    if text != "==" and text != "=~":  # ``lower`` takes a word it has seen as a plain argument
        if len(_LITS) >= 8192:
            _LITS.clear()
        _LITS[text] = parts
    return parts


def lower(src: str, base: int = 0) -> Script | None:
    """The IR of ``src`` when it is a plain command (as ``treesitter.lower`` would give it),
    else None. ``base`` is the offset of ``src`` in the whole command."""
    if len(src) > MAX_PLAIN:
        return None
    text = src.rstrip(" \t")  # blanks at the end belong to no token
    if "<<" in text:
        cut = _bodies(text, base)
        if cut is None:
            return None
        tokens, docs = cut
    elif (len(text) > CHECK_FIRST or "$" in text) and not _WHOLE.fullmatch(text):
        # one command in six with a ``$`` is not plain, and the whole-text test declines it at its
        # first odd character instead of reading every token first: over the corpus that saves
        # more than the second pass costs the other five (0.6% of the parse stage's instructions)
        return None
    else:
        tokens, docs = _TOKEN.findall(text), ()
    lits = _LITS
    items: list = []  # (node, whether ``&`` ends it) per statement
    pipe: list[Simple] = []  # the pipeline being read, up to its last ``|``
    andor: list = []  # the and-or list being read: its pipelines up to its last ``&&`` or ``||``
    ops: list[str] = []  # the operators between them
    words: list[Word] = []
    assigns: list[Assign] = []
    redirects: list[Redirect] = []
    start = 0  # where the command being read starts
    pending: str | None = None  # a redirection operator waiting for its target
    fd: int | None = None  # its descriptor
    fd_next: int | None = None  # a descriptor read as a word, for the redirection operator next
    at = base  # offset of the token in the whole command
    glued = False  # the last token was a word, touching whatever follows
    doc_line = False  # a here-document operator was read on this line
    ndoc = 0
    long_pipe = False  # a line ended in a pipeline of three or more commands
    for blank, run, other in tokens:
        if blank:
            if "\\" in blank:
                if glued and blank[0] == "\\":
                    return None  # a line continuation inside a word
                if not run and other[0] in _NOT_A_WORD:
                    return None  # a line continuation before anything but a word
            at += len(blank)
            glued = False
        elif blank is None:  # a here-document's body, with its delimiter line
            at += len(other)
            continue
        if run:
            plain = True
            # most runs are one word; one space after each word, none after the last
            run_words = run.split(" ") if " " in run else (run,)
        else:
            c = other[0]
            if c in _OPERATOR_START or c == ">" or c == "<":
                run_words = None
            elif c == "#":  # a comment, to the end of its line: as blanks are, unless glued to a word
                if glued:
                    return None  # ``a#b`` is one word
                at += len(other)
                continue
            else:
                plain = False
                run_words = (other,)  # a word with escapes or quotes
        if run_words is not None:
            for word in run_words:
                n = len(word)
                if plain:
                    parts = lits.get(word)  # never "==" or "=~", which the full tests below decline
                    if parts is not None and words and pending is None and not redirects:
                        # the usual word: a known plain word after the command's first, read here
                        # without the tests below for assignments, redirection targets and test
                        # operators
                        words.append(Word(word, parts, (at, at + n)))
                        at += n + 1
                        continue
                if pending is not None:
                    if pending == ">&" and not word.isdigit():
                        return None
                    redirects.append(Redirect(pending, fd, Word(word, parts or _plain_parts(word), (at, at + n))
                                              if plain else Word(word, _parts(word, at), (at, at + n))))
                    pending = None
                elif redirects:
                    i = at - base + n
                    if word != "1" and word != "2" or text[i : i + 1] not in ("<", ">"):
                        return None  # a word after a redirection: left to the full parser
                    fd_next = int(word)  # ``> f 2>&1``: the descriptor of the redirection it touches
                elif not words and "=" in word and (m := _ASSIGN.match(word)) is not None:
                    if not assigns:
                        start = at
                    eq = m.end()
                    name = word[: eq - 1 - len(m.group(1))]
                    if eq == n:
                        value = Word("", (), (at + n, at + n))
                    elif plain:
                        value = Word(word[eq:], (Lit(word[eq:]),), (at + eq, at + n))
                    else:
                        value = Word(word[eq:], _parts(word[eq:], at + eq), (at + eq, at + n))
                    assigns.append(Assign(name, value, append=bool(m.group(1))))
                else:
                    if word == "==" or word == "=~":
                        return None  # tree-sitter-bash reads a bare ``==`` or ``=~`` as a test operator
                    if not words and not assigns:
                        start = at
                    words.append(Word(word, parts or _plain_parts(word), (at, at + n)) if plain
                                 else Word(word, _parts(word, at), (at, at + n)))
                at += n + 1
            at -= 1
            glued = True
            continue
        if c == ">" or c == "<":  # a redirection or a here-document operator
            if pending is not None or not words or long_pipe:
                return None
            heredoc = c == "<" and other[1:2] == "<"
            fd = None
            if fd_next is not None:  # the 1 or 2 read after an earlier redirection
                fd, fd_next = fd_next, None
                if heredoc:
                    return None
            elif glued:  # ``2>…``: a glued 1 or 2 is the descriptor, anything else is not plain
                last = words[-1] if not redirects else None
                if heredoc or last is None or last.raw not in ("1", "2") or len(words) < 2 \
                        or src[last.pos[0] - base - 1 : last.pos[0] - base] not in (" ", "\t"):
                    return None
                words.pop()
                fd = int(last.raw)
            if heredoc:
                if ndoc >= len(docs):
                    return None
                redirects.append(docs[ndoc])
                ndoc += 1
                doc_line = True
            else:
                pending = other
            at += len(other)
            glued = False
            continue
        # an operator
        op = other
        at += len(op)
        glued = False
        if pending is not None or fd_next is not None:
            return None  # an operator missing its target, or a descriptor its operator
        if op == "\n":
            doc_line = False
            if not words:
                if assigns or redirects:
                    return None
                continue  # a blank line, or a line after ``&&`` or ``|``
        elif not words or doc_line:
            return None  # an operator with no command before it, or after a here-document
        node = _simple(words, assigns, redirects, start)
        if node is None:
            return None
        words, assigns, redirects = [], [], []
        if op == "|":
            pipe.append(node)
            continue
        if pipe:  # the command ends a pipeline
            pipe.append(node)
            if op == "\n" and len(pipe) >= 3:
                # tree-sitter-bash #347: after such a line, an ``&&`` or ``||`` list or a
                # redirection further on takes the newline into a command (the lowering
                # rejects that tree)
                long_pipe = True
            node = Pipeline(tuple(pipe), False)
            pipe = []
        if op == "&&" or op == "||":
            if long_pipe:
                return None
            andor.append(node)
            ops.append(op)
            continue
        if andor:  # the command ends an and-or list
            andor.append(node)
            node = AndOr(tuple(andor), tuple(ops))
            andor, ops = [], []
        items.append((node, op == "&"))
    if at - base != len(text) or pending is not None or fd_next is not None or ndoc != len(docs):
        return None  # a character no token takes, ``>`` at the end, a here-document misread
    if words:
        node = _simple(words, assigns, redirects, start)
        if node is None:
            return None
        if pipe:
            pipe.append(node)
            node = Pipeline(tuple(pipe), False)
        if andor:
            andor.append(node)
            node = AndOr(tuple(andor), tuple(ops))
        items.append((node, False))
    elif assigns or redirects or pipe or andor:
        return None  # ``a &&`` at the end: incomplete
    if not items:
        return None
    if len(items) == 1 and not items[0][1]:
        return Script(items[0][0], src, "tree-sitter")
    return Script(build.make_sequence(items), src, "tree-sitter")
