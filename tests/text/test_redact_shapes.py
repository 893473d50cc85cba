"""The redaction and message API other code fills values through (``guard.text.redact``:
``redact``, ``redact_url``; ``guard.text.display.message``), on the shapes the audit log used to
keep in clear (issue 37, findings 2, 4 and 8)."""

from __future__ import annotations

import pytest

from guard.text.display import MESSAGE_MAX, message
from guard.text.redact import MARK, redact, redact_url

SHAPES = [
    ("curl -uuser:AttachedPass1 https://x", "AttachedPass1"),
    ("curl -u user:'Quoted Pass2' https://x", "Pass2"),
    ('curl -u "user:Dq Pass3" https://x', "Pass3"),
    ("curl -u 'user:Whole Pass4' https://x", "Pass4"),
    ("git clone https://u:p@ssW0rd5@github.com/o/r", "ssW0rd5"),
    ("curl 'https://u:Space Pass6@h.example/x'", "Pass6"),
    ("echo ghp_Q7x2Lm9Kd4'Rt8Vw1Yz6'Hb3Nc5Pf0Sj", "Hb3Nc5Pf0Sj"),
    ("echo ghp_Q7x2Lm9Kd4\\\nRt8Vw1Yz6Hb3Nc5Pf0Sj", "Rt8Vw1Yz6Hb3Nc5Pf0Sj"),
    ("curl -H 'X-Api-Auth: HeaderSecret7' https://x", "HeaderSecret7"),
    ("http POST https://x X-Api-Auth:HttpieSecret8", "HttpieSecret8"),
    ("curl 'https://x/a?access_token=Query9&b=1'", "Query9"),
    ("curl 'https://x/a?sig=Sig10&key=Key10&X-Amz-Signature=Amz10'", "10"),
]


@pytest.mark.parametrize("text,secret", SHAPES)
def test_redact_removes_each_shape(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and MARK in out
    assert redact(out) == out  # idempotent: the audit log redacts again


@pytest.mark.parametrize("text", ["curl -H 'Authorization: token $GH_TOKEN' https://x", "curl -u root https://x",
                                  "curl -H 'Accept: application/json' https://x", "git push origin main"])
def test_what_is_not_a_secret_is_kept(text: str) -> None:
    assert redact(text) == text


def test_redact_url_drops_user_info_and_secret_parameters() -> None:
    assert redact_url("https://x:ghp_Q7x2Lm9Kd4Rt8Vw1Yz6Hb3Nc5Pf0Sj@github.com/o/r.git") == "https://github.com/o/r.git"
    assert redact_url("git+https://u:p@ss@gitlab.com/x.git#egg=x") == "git+https://gitlab.com/x.git#egg=x"
    assert redact_url("https://h/x?a=1&token=T0k3n&b=2") == f"https://h/x?a=1&token={MARK}&b=2"
    assert redact_url("https://h/a@b") == "https://h/a@b"  # an @ in the path is not user-info


def test_a_message_is_capped_and_long_words_lose_their_middle() -> None:
    url = "https://github.com/o/" + "a" * 100_000 + "Z.git"
    text = message(f'Refused. Use git_clone(url="{url}") instead. \x1b]0;t\x07 \u202e \ud800')
    assert len(text) <= MESSAGE_MAX
    assert "…" in text and text.startswith("Refused. Use git_clone(url=\"https://github.com/o/aaa")
    assert 'aZ.git")' in text and "instead." in text  # both ends of the long word, and what follows
    assert not any(c in text for c in "\x1b\x07\u202e\ud800")
    assert len(message("x " * 1000)) == MESSAGE_MAX
