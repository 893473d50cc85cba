"""A message never suggests what guard would refuse: every shell command a shipped refusal or
explanation offers (git diff --no-index A B, grep -rn, patch -p1 < FILE, git clone URL /tmp/x,
pip install PATH, …) is itself allowed in the same cwd, placeholders filled with plain values."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from guard.context import Context
from guard.engine import analyze
from tests.conftest import REPO

PROGRAMS = r"(?:git|grep|diff|patch|pip|npm|cargo|go|gh|rsync|uv|poetry|pipenv|bundle|composer|pdm|bun|yarn|cd)"
TOKEN = (r'(?:-{1,2}[\w-]+(?:=\S+)?|&&|<(?![^<>]*>)|[A-Z][A-Z_]{0,12}(?:/[A-Z]+)?/?(?![\w])|\{\w+\}|/tmp/[^\s),]*|'
         r'"\$\(mktemp -d\)"(?:/\w+)?|<[^<>]+>|\.[\w-]+/?|[a-z][\w:/@-]*(?:\.\w[\w:/@-]*)*|\.)')
COMMAND = re.compile(rf"(?<![\w./-])({PROGRAMS}(?:[ ]+{TOKEN})+)")
# what marks a phrase as a command rather than prose: an option, a placeholder, a path
PROSE = re.compile(r"^\S+ (?:could|into|has|sent|hides|bundle into|\{url\}$|URL$)")  # "pip could not fetch {url}"
SHAPE = re.compile(r'(?:^|\s)(?:-{1,2}\w|[A-Z]{1,12}\b|\{\w+\}|<[^<>]+>|/tmp/|"\$\(mktemp)')
VALUES = [("OWNER/REPO", "o/r"), ("{url}", "https://github.com/o/r.git"), ("URL", "https://github.com/o/r.git"),
          ("{repo}", "r"), ("{module}", "github.com/o/r"), ("{host}", "github.com"), ("PATTERN", "TODO"),
          ("FILE", "fix.patch"), ("SRC/", "/tmp/src/"), ("DEST/", "lib/"), ("REPO", "/tmp/r"), ("BRANCH", "feature"),
          ("PATH", "/tmp/r"), (" A B", " a.txt b.txt"), (" N", " 15")]


def offered(message: str) -> list[str]:
    out = []
    for part in re.split(r" or |, or |; |(?<=\w)\. |: ", message):
        for m in COMMAND.finditer(part):
            text = re.sub(r"(?<=\S)\.$", "", m.group(1).strip())  # a sentence's full stop, not `grep -rn X .`
            if SHAPE.search(text) and not text.startswith("cd ") and not PROSE.match(text):
                out.append(text)
    return out


def _filled(command: str) -> str:
    for k, v in VALUES:
        command = command.replace(k, v)
    return re.sub(r"<[^<>]+>", "/tmp/r", command)


def _messages() -> list[tuple[str, str]]:
    out = []
    for path in sorted((REPO / "rules").rglob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for key in ("rules", "annotations"):
            for r in data.get(key) or []:
                if isinstance(r, dict) and r.get("message"):
                    out.append((f"{Path(path).name}:{r['id']}", r["message"]))
    return out


def test_every_offered_command_is_allowed_in_the_same_cwd() -> None:
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    seen, refused = [], []
    for where, message in _messages():
        for command in offered(message):
            filled = _filled(command)
            seen.append(filled)
            v = analyze(filled, ctx)
            if v.verdict != "allow":
                refused.append(f"{where}: {filled!r} is refused by {v.rule}")
    assert not refused, refused
    # the extraction finds the commands messages offer (a test that finds none cannot fail)
    for expected in ("git diff --no-index a.txt b.txt", "grep -rn TODO .", "patch -p1 < fix.patch",
                     "git grep --no-index TODO", "git clone https://github.com/o/r.git /tmp/r"):
        assert any(s.startswith(expected) for s in seen), (expected, sorted(set(seen)))


def test_the_extraction_sees_a_refused_suggestion() -> None:
    assert offered("Use git_status, or run git status --short.") == ["git status --short"]
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})
    assert analyze(_filled(offered("then git clone URL lib.")[0]), ctx).verdict == "refuse"
