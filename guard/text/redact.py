"""Secret redaction: the one pass every output of guard makes over text it repeats (docs/behaviour.md §8).

The audit log, refusal messages, hook answers (their structured context included), ``guard
check`` and ``guard explain`` all call ``redact`` on what they repeat of a command, and
``redact_url`` on a URL filled into a message or a tool call, so no credential is handed back to
the agent or stored.

Each shape keeps enough context to be recognisable (``ghp_[REDACTED]``, ``password=[REDACTED]``)
and drops the secret itself. Variable references (``$GITHUB_TOKEN``, ``${TOKEN}``) are not secrets
and are kept: they are what the token-search rules are about.

Cost: the patterns are compiled on first use, and each runs only when one of its trigger
substrings occurs in the lower-cased text, so an ordinary command costs a handful of substring
searches. Name parts are bounded (``{0,64}``) so no pattern backtracks quadratically on long
words such as base64 blobs.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing itself is not imported on the hot path
if TYPE_CHECKING:
    from collections.abc import Callable

    Repl = str | Callable[[re.Match[str]], str]

MARK = "[REDACTED]"

# A value that is a shell expansion rather than a literal secret.
_NOT_LITERAL = ("$", "`", "<", MARK)

_SECRET_WORDS = ("token", "passw", "secret", "key", "credential", "passphrase")
_HEADER_WORDS = ("auth", "token", "key", "secret", "cookie", "signature", "passw", "credential")
_HEADER_WORD = r"(?:auth|token|key|apikey|secret|cookie|signature|password|passwd|credentials?)"
_HEADER_NAME = (rf"(?:(?:[a-z0-9]+-)+{_HEADER_WORD}(?:-[a-z0-9]+)*|{_HEADER_WORD}(?:-[a-z0-9]+)+|cookie)"
                r"(?![a-z0-9-])")
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]{0,64}?(?:token|passwd|password|passphrase|secret|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key)[A-Za-z0-9_.-]{0,64}"
)


def _body(chars: str, least: int) -> str:
    """``least`` or more of ``chars``, also when quotes or a backslash-newline split them
    (``ghp_abc''def``, ``ghp_abc\\<newline>def``): the shell joins those into one word."""
    return rf"(?:[{chars}]|\\\n|['\"]+(?=[{chars}])){{{least},}}"


# URL query parameters whose value is a credential (lower case; matched case-insensitively).
SECRET_PARAMS = (
    "access_token", "token", "auth", "auth_token", "key", "api_key", "apikey", "sig", "signature",
    "password", "passwd", "pass", "pwd", "secret", "client_secret", "code", "session", "sessionid",
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
    "x-goog-credential", "private_token", "refresh_token", "id_token",
)


def _literal(value: str) -> bool:
    """A literal secret, as opposed to a variable reference or an already redacted value."""
    return not value.startswith(_NOT_LITERAL) and MARK not in value


def _sub_private_key(m: re.Match[str]) -> str:
    kind = f"{m.group(1)}PRIVATE KEY{m.group(2)}"
    end = f"-----END {kind}-----" if m.group(0).endswith("-----") and "-----END " in m.group(0) else ""
    return f"-----BEGIN {kind}-----{MARK}{end}"


def _sub_auth(m: re.Match[str]) -> str:
    scheme, value = m.group(2), m.group(3)
    if not _literal(value):
        return m.group(0)
    return m.group(1) + (scheme + " " if scheme else "") + MARK


def _sub_bearer(m: re.Match[str]) -> str:
    return m.group(1) + MARK


def _sub_url(m: re.Match[str]) -> str:
    if not _literal(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}:{MARK}@"


def _sub_user(m: re.Match[str]) -> str:
    if not _literal(m.group(2)):
        return m.group(0)
    return m.group(1) + MARK


def _sub_header(m: re.Match[str]) -> str:
    value = m.group(2)
    if not _literal(value) or "$" in value or "`" in value:
        return m.group(0)
    return m.group(1) + MARK


def _sub_json(m: re.Match[str]) -> str:
    return m.group(1) + MARK + m.group(3)


def _sub_flag(m: re.Match[str]) -> str:
    if not _literal(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{MARK}"


def _sub_assign(m: re.Match[str]) -> str:
    name, sep, quote, value = m.group(1), m.group(2), m.group(3), m.group(4)
    if not _literal(value) or _COUNTED.search(name):
        return m.group(0)
    return f"{name}{sep}{quote}{MARK}"


# names that hold a count or a tool, not a credential: max_tokens=512, tokenizer = …
_COUNTED = re.compile(r"(?i)tokens$|tokeniz")


# (triggers: lower-case substrings one of which must occur, pattern, flags, replacement), in the
# order they are applied: whole blocks first, then fixed-prefix tokens, then headers, URLs and
# name=value forms (which must not re-redact what an earlier entry marked).
_TABLE: tuple[tuple[tuple[str, ...], str, int, Repl], ...] = (
    (
        ("private key",),
        r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)",
        re.S,
        _sub_private_key,
    ),
    (("github_pat_",), r"\bgithub_pat_" + _body("A-Za-z0-9_", 20), 0, "github_pat_" + MARK),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(gh[pousr])_" + _body("A-Za-z0-9", 16), 0, r"\1_" + MARK),
    (("glpat-",), r"\bglpat-" + _body("A-Za-z0-9_-", 16), 0, "glpat-" + MARK),
    (("xox",), r"\b(xox[abposr])-" + _body("A-Za-z0-9-", 8), 0, r"\1-" + MARK),
    (("xapp-",), r"\bxapp-[A-Za-z0-9-]{8,}", 0, "xapp-" + MARK),
    (("hooks.slack.com",), r"(hooks\.slack\.com/services/)[A-Za-z0-9/_-]+", 0, r"\1" + MARK),
    (("sk-",), r"\b(sk-(?:proj-|ant-(?:api\d+-)?|svcacct-|admin-)?)" + _body("A-Za-z0-9_-", 20), 0, r"\1" + MARK),
    (("k_live_", "k_test_"), r"\b([sr]k_(?:live|test)_)[A-Za-z0-9]{10,}", 0, r"\1" + MARK),
    (
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
        r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
        0,
        r"\1" + MARK,
    ),
    (("aiza",), r"\bAIza[0-9A-Za-z_-]{35}\b", 0, "AIza" + MARK),
    (("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", 0, "npm_" + MARK),
    (("pypi-",), r"\bpypi-" + _body("A-Za-z0-9_-", 40), 0, "pypi-" + MARK),
    (("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0, "[REDACTED-JWT]"),
    # Authorization / Proxy-Authorization headers: keep the scheme word, drop the credential.
    (
        ("authorization",),
        r"((?:Proxy-)?Authorization\s*:\s*)(?:(Bearer|Basic|token|Digest|Negotiate|AWS4-HMAC-SHA256)\s+)?([^\s'\"]+)",
        re.I,
        _sub_auth,
    ),
    (("bearer",), r"\b(Bearer\s+)(?!\[REDACTED)([A-Za-z0-9._~+/=-]{8,})", 0, _sub_bearer),
    # scheme://user:password@host (a password may hold @; in quotes, spaces), and
    # scheme://<40-hex classic token>@host
    (("@",), r"(?<=['\"])([a-zA-Z][a-zA-Z0-9+.-]{0,30}://)([^/\s:@'\"]{0,256}):([^/?#'\"\n]+)@(?=[^@'\"/\s]*['\"/])",
     0, _sub_url),
    (("@",), r"\b([a-zA-Z][a-zA-Z0-9+.-]{0,30}://)([^/\s:@'\"]{0,256}):([^/?#\s'\"]+)@", 0, _sub_url),
    (("@",), r"\b([a-zA-Z][a-zA-Z0-9+.-]{0,30}://)[0-9a-fA-F]{40}@", 0, r"\1" + MARK + "@"),
    # curl/wget/http -u user:password, --user user:password, -uuser:password, -u user:'pass',
    # -u 'user:pass word'
    (("-u", "--user"), r"((?<!\S)(?:-u|--user)(?:\s+|=)?'[^\s:'\"]*:)([^']+)", 0, _sub_user),
    (("-u", "--user"), r"((?<!\S)(?:-u|--user)(?:\s+|=)?\"[^\s:'\"]*:)([^\"]+)", 0, _sub_user),
    (("-u", "--user"), r"((?<!\S)(?:-u|--user)(?:\s+|=)?[^\s:'\"]*:')([^']+)", 0, _sub_user),
    (("-u", "--user"), r"((?<!\S)(?:-u|--user)(?:\s+|=)?[^\s:'\"]*:\")([^\"]+)", 0, _sub_user),
    (("-u", "--user"), r"((?<!\S)(?:-u|--user)(?:\s+|=)?[^\s:'\"]*:)([^\s'\"]+)", 0, _sub_user),
    # custom credential headers: -H 'X-Api-Auth: value', httpie's X-Api-Auth:value. The credential
    # word is a whole part of a hyphenated name (X-Auth-Token, Private-Token, X-Api-Key), never
    # part of a word (Co-Authored-By), or the name is Cookie.
    (
        _HEADER_WORDS,
        r"(?i)((?<=['\"])" + _HEADER_NAME + r"\s*:\s*)(?!\[REDACTED)([^\s'\"][^'\"\r\n]*)(?=['\"])",
        0,
        _sub_header,
    ),
    (
        _HEADER_WORDS,
        r"(?i)((?<![\w-])" + _HEADER_NAME + r":\s*)(?!\[REDACTED)([^\s'\"]+)",
        0,
        _sub_header,
    ),
    # secret URL query parameters: ?access_token=…, &sig=…, &X-Amz-Signature=…
    (("?", "&"), r"(?i)([?&](?:" + "|".join(re.escape(p) for p in SECRET_PARAMS) + r")=)(?!\[REDACTED)([^&#\s'\"]+)",
     0, _sub_user),
    # "name": "value", --name value, NAME=value and NAME: value for secret-looking names.
    (_SECRET_WORDS, r"(?i)(\"" + _SECRET_NAME + r"\"\s*:\s*\")(?!\[REDACTED)([^\"]+)(\")", 0, _sub_json),
    (
        _SECRET_WORDS,
        r"(?i)(--(?:token|password|passwd|secret|api-?key|access-key|client-secret|auth-token)[ \t]+)(['\"]?)([^\s'\"]+)",
        0,
        _sub_flag,
    ),
    (
        _SECRET_WORDS,
        r"(?i)(?<![A-Za-z0-9_.$-])(" + _SECRET_NAME + r")(\s*[=:]\s*)(['\"]?)([^\s'\"&;|,}]+)",
        0,
        _sub_assign,
    ),
)

_compiled: list[tuple[tuple[str, ...], re.Pattern[str], Repl]] = []


def _patterns() -> list[tuple[tuple[str, ...], re.Pattern[str], Repl]]:
    """Compile the table on first use: importing this module costs nothing on the hot path."""
    if not _compiled:
        _compiled.extend((triggers, re.compile(rx, flags), repl) for triggers, rx, flags, repl in _TABLE)
    return _compiled


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by a ``[REDACTED]`` marker."""
    return _redact(text, None)


def _redact(text: str, removed: list[str] | None) -> str:
    if not text:
        return text
    out = text
    low = text.lower()
    present: dict[str, bool] = {}
    for triggers, pattern, repl in _patterns():
        for t in triggers:
            hit = present.get(t)
            if hit is None:
                hit = present[t] = t in low
            if hit:
                out = pattern.sub(repl if removed is None else _noting(repl, removed), out)
                break
    return out


def _noting(repl: Repl, removed: list[str]) -> Callable[[re.Match[str]], str]:
    """``repl`` that also adds to ``removed`` what it takes out of each match."""

    def sub(m: re.Match[str]) -> str:
        new = repl(m) if callable(repl) else m.expand(repl)
        old = m.group(0)
        a = 0
        while a < min(len(old), len(new)) and old[a] == new[a]:
            a += 1
        b = 0
        while b < min(len(old), len(new)) - a and old[-1 - b] == new[-1 - b]:
            b += 1
        gone = old[a : len(old) - b]
        if gone:
            removed.append(gone)
        return new

    return sub


_PIECES = re.compile(r"\\\n|['\"]+")


def secrets_in(text: str) -> list[str]:
    """The credentials ``redact`` finds in ``text``, each also in the pieces quotes or a
    backslash-newline split it into (a parser, like the shell, may hand them on apart). What
    repeats parts of a command redacts these too (``redact_known``): ``-uuser:PASS`` or a
    token split by a line continuation may reach an output as words of their own."""
    if not text:
        return []
    removed: list[str] = []
    _redact(text, removed)
    out: list[str] = []
    for r in removed:
        if MARK in r:
            continue
        out.extend(p for p in {r, *_PIECES.split(r)} if _worth(p))
    return out


def _worth(piece: str) -> bool:
    """A piece long and wordy enough that masking it everywhere masks that credential only."""
    return len(piece) >= 6 and sum(c.isalnum() for c in piece) >= 4


def _strip_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = len(rest)
    for ch in "/?#":
        at = rest.find(ch)
        if 0 <= at < end:
            end = at
    at = rest.rfind("@", 0, end)
    return url if at < 0 else f"{scheme}://{rest[at + 1:]}"


def redact_url(url: str) -> str:
    """``url`` as guard may repeat it (in a message, a tool call's arguments): without user-info
    (``https://x:TOKEN@host/…`` → ``https://host/…``), with the values of secret query
    parameters (``access_token``, ``sig``, ``key`` …) replaced, and ``redact`` applied."""
    if not url:
        return url
    return redact(_strip_userinfo(url))


# Options whose next word is a credential (or, for headers, may hold one), as a program's argv
# holds them once the shell has removed the quotes: ``curl -u 'user:pa ss'`` is
# ``["curl", "-u", "user:pa ss"]``, which no pattern on the word alone can read.
_USER_FLAGS = frozenset(("-u", "--user", "-U", "--proxy-user"))
_VALUE_FLAGS = frozenset((
    "--password", "--passwd", "--token", "--auth", "--auth-token", "--api-key", "--apikey", "--access-token",
    "--client-secret", "--secret", "--private-token", "--oauth2-bearer",
))
_HEADER_FLAGS = frozenset(("-H", "--header", "--proxy-header"))


def secret_values(argv: list[str] | tuple[str, ...]) -> list[str]:
    """The words of ``argv`` (or the parts of them) that are credentials by their position:
    the password of ``-u user:pass``, the value of ``--token X``, of a credential header."""
    out: list[str] = []
    for word in argv:  # scheme://user:password@host…, whatever the password holds
        scheme, sep, rest = word.partition("://")
        if sep and "@" in rest:
            authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
            user, at, _ = authority.rpartition("@")
            password = user.partition(":")[2] if at else ""
            if len(password) >= 4 and _literal(password):
                out.append(password)
    for flag, value in zip(argv, argv[1:], strict=False):
        if not _literal(value):
            continue
        if flag in _USER_FLAGS and ":" in value:
            secret = value.partition(":")[2]
        elif flag in _VALUE_FLAGS:
            secret = value
        elif flag in _HEADER_FLAGS and ":" in value:
            cleaned = redact(f"'{value}'")[1:-1]
            secret = "" if cleaned == value else value.partition(":")[2].strip()
        else:
            continue
        if len(secret) >= 4:  # a shorter one would mark every place its letters occur
            out.append(secret)
    return out


def redact_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    """``argv`` with every credential replaced: by position (``secret_values``), then by shape."""
    secrets = secret_values(argv)
    return [redact(redact_known(a, secrets)) for a in argv]


def redact_known(text: str, secrets: list[str] | tuple[str, ...]) -> str:
    """``text`` with each of ``secrets`` (longest first) replaced by the marker."""
    for s in sorted(secrets, key=len, reverse=True):
        if s and s in text:
            text = text.replace(s, MARK)
    return text
