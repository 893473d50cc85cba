"""Secret redaction applied to every command before it reaches the audit log (docs/behaviour.md §8).

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
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]{0,64}?(?:token|passwd|password|passphrase|secret|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key)[A-Za-z0-9_.-]{0,64}"
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


def _sub_json(m: re.Match[str]) -> str:
    return m.group(1) + MARK + m.group(3)


def _sub_flag(m: re.Match[str]) -> str:
    if not _literal(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{MARK}"


def _sub_assign(m: re.Match[str]) -> str:
    name, sep, quote, value = m.group(1), m.group(2), m.group(3), m.group(4)
    if not _literal(value):
        return m.group(0)
    return f"{name}{sep}{quote}{MARK}"


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
    (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{20,}", 0, "github_pat_" + MARK),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(gh[pousr])_[A-Za-z0-9]{16,}", 0, r"\1_" + MARK),
    (("glpat-",), r"\bglpat-[A-Za-z0-9_-]{16,}", 0, "glpat-" + MARK),
    (("xox",), r"\b(xox[abposr])-[A-Za-z0-9-]{8,}", 0, r"\1-" + MARK),
    (("xapp-",), r"\bxapp-[A-Za-z0-9-]{8,}", 0, "xapp-" + MARK),
    (("hooks.slack.com",), r"(hooks\.slack\.com/services/)[A-Za-z0-9/_-]+", 0, r"\1" + MARK),
    (("sk-",), r"\b(sk-(?:proj-|ant-(?:api\d+-)?|svcacct-|admin-)?)[A-Za-z0-9_-]{20,}", 0, r"\1" + MARK),
    (("k_live_", "k_test_"), r"\b([sr]k_(?:live|test)_)[A-Za-z0-9]{10,}", 0, r"\1" + MARK),
    (
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
        r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
        0,
        r"\1" + MARK,
    ),
    (("aiza",), r"\bAIza[0-9A-Za-z_-]{35}\b", 0, "AIza" + MARK),
    (("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", 0, "npm_" + MARK),
    (("pypi-",), r"\bpypi-[A-Za-z0-9_-]{40,}", 0, "pypi-" + MARK),
    (("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0, "[REDACTED-JWT]"),
    # Authorization / Proxy-Authorization headers: keep the scheme word, drop the credential.
    (
        ("authorization",),
        r"((?:Proxy-)?Authorization\s*:\s*)(?:(Bearer|Basic|token|Digest|Negotiate|AWS4-HMAC-SHA256)\s+)?([^\s'\"]+)",
        re.I,
        _sub_auth,
    ),
    (("bearer",), r"\b(Bearer\s+)(?!\[REDACTED)([A-Za-z0-9._~+/=-]{8,})", 0, _sub_bearer),
    # scheme://user:password@host, and scheme://<40-hex classic token>@host
    (("@",), r"\b([a-zA-Z][a-zA-Z0-9+.-]{0,30}://)([^/\s:@'\"]{0,256}):([^/\s@'\"]+)@", 0, _sub_url),
    (("@",), r"\b([a-zA-Z][a-zA-Z0-9+.-]{0,30}://)[0-9a-fA-F]{40}@", 0, r"\1" + MARK + "@"),
    # curl/wget/http -u user:password, --user user:password
    (("-u", "--user"), r"((?<!\S)(?:-u|--user)(?:\s+|=)['\"]?[^\s:'\"]*:)([^\s'\"]+)", 0, _sub_user),
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
                out = pattern.sub(repl, out)
                break
    return out
