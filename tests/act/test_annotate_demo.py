"""``guard demo`` shows what guard appends to the field report's failing steps, from real stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_replays_recorded_stderr_through_the_annotator() -> None:
    p = subprocess.run([sys.executable, "-m", "guard.cli.main", "demo"], capture_output=True, text=True, timeout=120,
                       cwd=REPO, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    # git's own line, then the note, for the ls-remote step
    git_line = out.index("│ fatal: could not read Username for 'https://github.com': terminal prompts disabled")
    note = out.index("│ [guard] git could not authenticate to github.com")
    assert git_line < note < out.index("REFUSE $ git rev-parse HEAD")
    # the private build dependency gets pip's note (one, not git's as well), with the URL whole
    pip = out.index("allow  $ pip install git+https://github.com/acme/private-lib.git")
    section = out[pip : out.index("── after a refused git push")]
    assert section.count("[guard] ") == 1
    assert "[guard] pip could not fetch https://github.com/acme/private-lib.git" in section
    assert 'git_clone(url="https://github.com/acme/private-lib.git")' in section


def test_demo_stderr_is_the_recorded_fixture() -> None:
    from guard.cli.demo import PRIVATE, RECORDED

    for fixture, command in (("git-ls-remote-private-git2.39.5.txt", f"git ls-remote {PRIVATE}"),
                             ("pip-git-url-pip26.3.txt", f"pip install git+{PRIVATE}")):
        body = (REPO / "fixtures" / "stderr" / fixture).read_text().split("# ---\n", 1)[1]
        body = body.replace("http://127.0.0.1:PORT/private.git", PRIVATE).replace("http://127.0.0.1:PORT", "https://github.com")
        assert RECORDED[command] == body
