"""Records: fields, redaction of every secret shape, size caps, ids and times."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from audit_records import record

import guard
from guard.audit import log
from guard.text.redact import redact

GH = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

# (command, the secret that must disappear, what must remain)
SHAPES = [
    (f"git push https://ghp_{GH}@github.com/o/r", f"ghp_{GH}", "ghp_[REDACTED]@github.com/o/r"),
    (f"export GH_TOKEN=gho_{GH}", f"gho_{GH}", "gho_[REDACTED]"),
    (f"echo ghu_{GH} | gh auth login --with-token", f"ghu_{GH}", "ghu_[REDACTED] | gh auth login"),
    (f"curl -u x:ghs_{GH} https://api.github.com", f"ghs_{GH}", "ghs_[REDACTED]"),
    (f"echo ghr_{GH}", f"ghr_{GH}", "echo ghr_[REDACTED]"),
    (
        f"git clone https://github_pat_11ABCDEFG0_{GH}xyz@github.com/o/r",
        f"11ABCDEFG0_{GH}",
        "github_pat_[REDACTED]",
    ),
    (
        "curl -H 'Authorization: token 0123456789abcdef0123456789abcdef01234567' https://api.github.com/user",
        "0123456789abcdef0123456789abcdef01234567",
        "'Authorization: token [REDACTED]' https://api.github.com/user",
    ),
    (
        'curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def-long-opaque" https://x',
        "eyJhbGciOiJIUzI1NiJ9",
        '"Authorization: Bearer [REDACTED]"',
    ),
    (
        "http GET api.example.com 'Authorization:Basic dXNlcjpwYXNzd29yZA=='",
        "dXNlcjpwYXNzd29yZA==",
        "Authorization:Basic [REDACTED]",
    ),
    ("wget --header='Bearer s3cr3tt0k3nvalue' https://x", "s3cr3tt0k3nvalue", "Bearer [REDACTED]"),
    ("curl -u bot:hunter2pass -X POST https://api.github.com/x", "hunter2pass", "-u bot:[REDACTED] -X POST"),
    ("curl --user 'bot:pw with-quote' https://x", "pw", "--user 'bot:[REDACTED]"),
    (
        "git clone https://alice:hunter2pass@gitlab.example.com/g/p.git",
        "hunter2pass",
        "https://alice:[REDACTED]@gitlab",
    ),
    ("pip install git+https://deploy:S3cr3t%21@git.example.com/p", "S3cr3t%21", "deploy:[REDACTED]@"),
    (
        "git clone https://0123456789abcdef0123456789abcdef01234567@github.com/o/r",
        "0123456789abcdef",
        "https://[REDACTED]@github.com",
    ),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE aws s3 ls", "IOSFODNN7EXAMPLE", "AKIA[REDACTED]"),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI",
        "aws_secret_access_key=[REDACTED]",
    ),
    (
        "export AWS_SECRET_ACCESS_KEY='wJalrXUtnFEMI/K7MDENG'",
        "wJalrXUtnFEMI",
        "AWS_SECRET_ACCESS_KEY='[REDACTED]",
    ),
    ("./deploy --token abcdef123456 --env prod", "abcdef123456", "--token [REDACTED] --env prod"),
    ("mysql -u root --password=pa55w0rd db", "pa55w0rd", "--password=[REDACTED] db"),
    ("curl 'https://x/cb?token=abc123def&x=1'", "abc123def", "token=[REDACTED]&x=1"),
    ("API_SECRET=xyz789 CLIENT_SECRET: q1w2e3 ./run", "xyz789", "API_SECRET=[REDACTED]"),
    ("API_SECRET=xyz789 CLIENT_SECRET: q1w2e3 ./run", "q1w2e3", "CLIENT_SECRET: [REDACTED]"),
    (
        'curl -d \'{"password": "pa ss word", "user": "a"}\' https://x',
        "pa ss word",
        '"password": "[REDACTED]"',
    ),
    (
        "printf '%s' '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----' > k",
        "b3BlbnNzaC1rZXktdjEAAAA",
        "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----' > k",
    ),
    (
        "echo '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7",
        "MIIEowIBAAKCAQEA7",
        "BEGIN RSA PRIVATE KEY-----[REDACTED]",
    ),
    (
        "curl -d token=xoxb-1234567890-abcdefghij https://slack.com/api",
        "1234567890-abcdefghij",
        "xoxb-[REDACTED]",
    ),
    (
        "curl https://hooks.slack.com/services/T000/B000/XXXXXXXX -d x",
        "T000/B000/XXXXXXXX",
        "hooks.slack.com/services/[REDACTED]",
    ),
    (
        "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx python x.py",
        "abcdefghijklmnopqrstuvwx",
        "sk-proj-[REDACTED]",
    ),
    ("echo sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz", "sk-ant-api03-[REDACTED]"),
    ("glab auth login -t glpat-abcdefghij0123456789", "abcdefghij0123456789", "glpat-[REDACTED]"),
    (
        "curl https://maps.googleapis.com/?key=AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "SyA1234567890",
        "AIza[REDACTED]",
    ),
    (
        "npm config set //r/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "abcdefghijklmnopqrstuvwxyz0123456789",
        "npm_[REDACTED]",
    ),
]


@pytest.mark.parametrize(("command", "secret", "kept"), SHAPES)
def test_each_secret_shape_is_redacted(command: str, secret: str, kept: str) -> None:
    out = redact(command)
    assert secret not in out
    assert kept in out


@pytest.mark.parametrize(
    "command",
    [
        "echo $GITHUB_TOKEN",
        'curl -H "Authorization: token $GH_TOKEN" https://api.github.com/user',
        "git clone https://x-access-token:${TOKEN}@github.com/o/r",
        "TOKEN=$(cat /run/secrets/t) ./deploy",
        "grep -rn GITHUB_TOKEN .github/",
        "git push origin feature/token-refresh",
        "ls -la ~/.config/gh",
        "curl -u bot:$GH_TOKEN https://api.github.com/user",
        "sort -u names.txt",
    ],
)
def test_variable_references_and_ordinary_text_are_kept(command: str) -> None:
    assert redact(command) == command


def test_redaction_is_idempotent() -> None:
    for command, _, _ in SHAPES:
        once = redact(command)
        assert redact(once) == once


def test_build_record_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"GUARD_AGENT": "claude-7", "GUARD_THREAD": "th-42", "GUARD_ROLE": "coordinator"}
    rec = log.build_record(
        "refusal",
        f"git push https://ghp_{GH}@github.com/o/r",
        cwd="/workspace/app",
        env=env,
        verdict="refuse",
        category="publish",
        rule="git-push",
        tool="git_push",
        via=["alias g", "bash -c"],
        rules_digest="sha256:abc",
    )
    assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", rec["id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["ts"])
    assert (rec["agent"], rec["thread"], rec["role"]) == ("claude-7", "th-42", "coordinator")
    assert (rec["verdict"], rec["category"], rec["rule"], rec["tool"]) == (
        "refuse",
        "publish",
        "git-push",
        "git_push",
    )
    assert rec["via"] == ["alias g", "bash -c"]
    assert rec["version"] == guard.__version__ and rec["rules_digest"] == "sha256:abc"
    assert rec["cwd"] == "/workspace/app" and rec["host"]
    assert GH not in json.dumps(rec) and rec["command_sha256"] is None


def test_missing_identity_is_null() -> None:
    rec = log.build_record(
        "annotation",
        "pip install .",
        cwd="/w",
        env={},
        verdict="allow",
        category=None,
        rule="cred",
        tool=None,
        via=[],
    )
    assert rec["agent"] is None and rec["thread"] is None and rec["role"] is None


def test_ids_are_unique_and_sort_by_time() -> None:
    ids = [log.new_id(1767268800.0 + i * 0.001) for i in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    same_ms = {log.new_id(1767268800.0) for _ in range(2000)}
    assert len(same_ms) == 2000


def test_long_command_is_cut_with_hash_of_the_whole() -> None:
    command = "git commit -m '" + "x" * 20000 + f"' # ghp_{GH}"
    rec = record(command=command)
    whole = redact(command)
    assert len(rec["command"]) == log.COMMAND_CAP + 1 and rec["command"].endswith("…")
    assert rec["command_sha256"] == hashlib.sha256(whole.encode()).hexdigest()
    assert rec["command_chars"] == len(command)


def test_every_line_fits_the_record_cap(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    env = {"GUARD_AUDIT_LOG": str(path)}
    big_unicode = "é" * 3000 + "\x1b" * 3000  # multi-byte and escaped characters grow in JSON
    log.append_record(record(command=big_unicode * 4), env)
    log.append_record({**record(), "cwd": "/" + "d" * 50000, "via": ["v" * 9000] * 40}, env)
    log.append_record({"command": "raw record without id or ts " + "z" * 100000}, env)
    lines = path.read_bytes().split(b"\n")[:-1]
    assert len(lines) == 3
    for raw in lines:
        assert len(raw) + 1 <= log.RECORD_CAP
        rec = json.loads(raw)
        assert rec["id"] and rec["ts"]


def test_append_redacts_a_record_built_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log.append_record(
        {"id": "x1", "ts": "2026-01-01T00:00:00.000Z", "command": f"echo ghp_{GH}"},
        {"GUARD_AUDIT_LOG": str(path)},
    )
    assert GH not in path.read_text() and "ghp_[REDACTED]" in path.read_text()


def test_lone_surrogates_are_written_as_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log.append_record(record(command="echo \udcff\udc80 done"), {"GUARD_AUDIT_LOG": str(path)})
    rec = json.loads(path.read_bytes())
    assert rec["command"] == "echo \udcff\udc80 done"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GUARD_AUDIT_LOG": "/var/log/g.jsonl", "XDG_STATE_HOME": "/s", "HOME": "/h"}, "/var/log/g.jsonl"),
        ({"GUARD_AUDIT_LOG": "~/g.jsonl", "HOME": "/h"}, "/h/g.jsonl"),
        ({"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/guard/audit.jsonl"),
        ({"XDG_STATE_HOME": "relative/ignored", "HOME": "/h"}, "/h/.local/state/guard/audit.jsonl"),
        ({"HOME": "/h"}, "/h/.local/state/guard/audit.jsonl"),
        ({"GUARD_AUDIT_LOG": "off", "HOME": "/h"}, None),
    ],
)
def test_default_log_path(env: dict[str, str], expected: str | None) -> None:
    assert log.default_log_path(env) == expected


def test_rotation_keeps_the_newest_files(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    env = {"GUARD_AUDIT_LOG": str(path), "GUARD_AUDIT_MAX_BYTES": "2000", "GUARD_AUDIT_KEEP": "3"}
    ids = []
    for i in range(200):
        rec = record(i)
        ids.append(rec["id"])
        log.append_record(rec, env)
    rotated = log.rotated_files(str(path))
    assert len(rotated) == 3
    kept = [json.loads(x)["id"] for p in [*rotated, str(path)] for x in Path(p).read_text().splitlines()]
    assert kept == ids[-len(kept) :]  # oldest dropped, order preserved, nothing newer missing
    assert (tmp_path / "audit.jsonl.lock").exists()


def test_a_record_built_by_the_annotator_is_completed_and_redacted(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    env = {
        "GUARD_AUDIT_LOG": str(path),
        "GUARD_AGENT": "claude-3",
        "GUARD_THREAD": "th-9",
        "GUARD_ROLE": "worker",
    }
    raw = {
        "kind": "annotation",
        "verdict": "annotate",
        "rule": "git-credential-prompt",
        "command": "git clone https://bob:s3cretpw@github.com/o/private",
        "message": "fatal: could not read Password for 'https://bob:s3cretpw@github.com'",
        "captures": {"url": "https://bob:s3cretpw@github.com", "more": [f"ghp_{GH}"]},
        "exit_status": 128,
    }
    log.append_record(raw, env)
    text = path.read_text()
    assert "s3cretpw" not in text and GH not in text
    rec = json.loads(text)
    assert (rec["agent"], rec["thread"], rec["role"]) == ("claude-3", "th-9", "worker")
    assert rec["version"] == guard.__version__ and rec["host"] and rec["id"] and rec["ts"]
    assert rec["captures"]["url"] == "https://bob:[REDACTED]@github.com" and rec["exit_status"] == 128
