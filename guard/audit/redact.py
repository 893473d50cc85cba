"""Secret redaction applied to every command before it reaches the audit log (SPEC §8).

Each shape keeps enough context to be recognisable (``ghp_[REDACTED]``, ``password=[REDACTED]``)
and drops the secret itself. Variable references (``$GITHUB_TOKEN``, ``${TOKEN}``) are not secrets
and are kept: they are what the token-search rules are about. Only ``re`` is used, so the hot path
stays light.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing itself is not imported on the hot path

if TYPE_CHECKING:
    from typing import Any

MARK = "[REDACTED]"

# A value that is a shell expansion rather than a literal secret.
_NOT_LITERAL = ("$", "`", "<", "[REDACTED]")

_compiled: dict[str, object] = {}


def _patterns() -> dict[str, object]:
    """Compile the patterns on first use: importing this module costs nothing on the hot path."""
    if _compiled:
        return _compiled
    private_key = re.compile(
        r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)",
        re.S,
    )

    # Token shapes with a fixed, recognisable prefix: (pattern, replacement).
    prefixed: tuple[tuple[re.Pattern[str], str], ...] = (
        (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), "github_pat_" + MARK),
        (re.compile(r"\b(gh[pousr])_[A-Za-z0-9]{16,}"), r"\1_" + MARK),
        (re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}"), "glpat-" + MARK),
        (re.compile(r"\b(xox[abposr])-[A-Za-z0-9-]{8,}"), r"\1-" + MARK),
        (re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"), "xapp-" + MARK),
        (re.compile(r"(hooks\.slack\.com/services/)[A-Za-z0-9/_-]+"), r"\1" + MARK),
        (re.compile(r"\b(sk-(?:proj-|ant-(?:api\d+-)?|svcacct-|admin-)?)[A-Za-z0-9_-]{20,}"), r"\1" + MARK),
        (re.compile(r"\b([sr]k_(?:live|test)_)[A-Za-z0-9]{10,}"), r"\1" + MARK),
        (re.compile(r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA))[0-9A-Z]{16}\b"), r"\1" + MARK),
        (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "AIza" + MARK),
        (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "npm_" + MARK),
        (re.compile(r"\bpypi-[A-Za-z0-9_-]{40,}"), "pypi-" + MARK),
        (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "[REDACTED-JWT]"),
    )

    # Authorization / Proxy-Authorization headers: keep the scheme word, drop the credential.
    auth_header = re.compile(
        r"((?:Proxy-)?Authorization\s*:\s*)(?:(Bearer|Basic|token|Token|Digest|Negotiate|AWS4-HMAC-SHA256)\s+)?"
        r"([^\s'\"]+)",
        re.I,
    )
    bearer = re.compile(r"\b(Bearer\s+)([A-Za-z0-9._~+/=-]{8,})")

    # scheme://user:password@host
    url_userinfo = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s:@'\"]*):([^/\s@'\"]+)@")

    # scheme://<40-hex classic token>@host
    url_hexuser = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[0-9a-fA-F]{40}@")

    # NAME=value / NAME: value / --name value / "name": "value" for secret-looking names.
    secret_name = (
        r"[A-Za-z0-9_.-]*(?:token|passwd|password|passphrase|secret|api[_-]?key|apikey|"
        r"access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key)[A-Za-z0-9_.-]*"
    )
    assign = re.compile(r"(?i)(?<![A-Za-z0-9_$])(" + secret_name + r")(\s*[=:]\s*)(['\"]?)([^\s'\"&;|,}]+)")
    json_pair = re.compile(r"(?i)(\"" + secret_name + r"\"\s*:\s*\")([^\"]+)(\")")
    flag = re.compile(
        r"(?i)(--(?:token|password|passwd|secret|api-?key|access-key|client-secret|auth-token)[ \t]+)(['\"]?)([^\s'\"]+)"
    )
    _compiled.update(
        private_key=private_key,
        prefixed=prefixed,
        auth_header=auth_header,
        bearer=bearer,
        url_userinfo=url_userinfo,
        url_hexuser=url_hexuser,
        assign=assign,
        json_pair=json_pair,
        flag=flag,
    )
    return _compiled


def _literal(value: str) -> bool:
    return not value.startswith(_NOT_LITERAL) and value != MARK


def _sub_assign(m: re.Match[str]) -> str:
    name, sep, quote, value = m.group(1), m.group(2), m.group(3), m.group(4)
    if not _literal(value) or MARK in value:
        return m.group(0)
    return f"{name}{sep}{quote}{MARK}"


def _sub_flag(m: re.Match[str]) -> str:
    if not _literal(m.group(3)):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{MARK}"


def _sub_auth(m: re.Match[str]) -> str:
    scheme = m.group(2)
    value = m.group(3)
    if value.startswith("$") and " " not in value:
        return m.group(0)
    return m.group(1) + (scheme + " " if scheme else "") + MARK


def _sub_private_key(m: re.Match[str]) -> str:
    kind = f"{m.group(1)}PRIVATE KEY{m.group(2)}"
    end = f"-----END {kind}-----" if m.group(0).endswith("-----") and "-----END " in m.group(0) else ""
    return f"-----BEGIN {kind}-----{MARK}{end}"


def _sub_url(m: re.Match[str]) -> str:
    password = m.group(3)
    if password.startswith("$"):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}:{MARK}@"


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by a ``[REDACTED]`` marker."""
    if not text:
        return text
    return _redact(text)


def _redact(text: str) -> str:
    p: Any = _patterns()
    out = p["private_key"].sub(_sub_private_key, text)
    for pattern, repl in p["prefixed"]:
        out = pattern.sub(repl, out)
    out = p["auth_header"].sub(_sub_auth, out)
    out = p["bearer"].sub(lambda m: m.group(0) if MARK in m.group(2) else m.group(1) + MARK, out)
    out = p["url_userinfo"].sub(_sub_url, out)
    out = p["url_hexuser"].sub(lambda m: m.group(1) + MARK + "@", out)
    out = p["json_pair"].sub(lambda m: m.group(1) + MARK + m.group(3), out)
    out = p["flag"].sub(_sub_flag, out)
    out = p["assign"].sub(_sub_assign, out)
    return out
