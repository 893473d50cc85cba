"""``guard audit --html``: one self-contained page, every agent-supplied field escaped, and the
page as headless Chromium renders it (Debian's ``chromium``; ``.ci/run`` installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from audit_records import FORBIDDEN, record, write_jsonl

from guard.audit.reports import report

REPO = Path(__file__).resolve().parents[2]
FLEET = REPO / "fixtures" / "audit" / "fleet.jsonl"
HOSTILE = (
    "<script>alert(1)</script></textarea><img src=x onerror=alert(2)>\"'&amp;"
    "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u202eevil\u200b\x9b31m"
)
HOSTILE_FIELDS = ("agent", "thread", "role", "host", "cwd", "command", "rule", "category", "tool")


def engines() -> list[str]:
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return ["python"]
    return ["python", "duckdb"]


def hostile_log(tmp_path: Path) -> Path:
    recs = []
    for i in range(12):
        fields = {name: f"{name}{i % 3}{HOSTILE}" for name in HOSTILE_FIELDS}
        recs.append(record(i * 30.0 + (i // 4) * 86400, **fields))
    recs.append(record(400, kind="annotation", verdict="annotate", rule=f"ann{HOSTILE}", command=HOSTILE))
    for i in range(3):  # what a rule on trial (warn, observe) matched: its own section
        recs.append(record(500 + i, kind="trial", verdict="allow", action=("warned", "observed")[i % 2],
                           rule=f"trial{HOSTILE}", category=f"cat{HOSTILE}", command=f"trial-cmd{HOSTILE}"))
    return write_jsonl(tmp_path / "hostile.jsonl", recs)


def render(tmp_path: Path, argv: list[str], engine: str, name: str = "page.html") -> str:
    page = tmp_path / name
    proc = subprocess.run(
        [sys.executable, "-m", "guard.cli.main", "audit", "--engine", engine, *argv, "--html", str(page)],
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode() == f"guard audit: report written to {page}\n"
    return page.read_text(encoding="utf-8")


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_hostile_text_in_every_field_is_inert(tmp_path: Path, engine: str) -> None:
    if engine not in engines():
        pytest.skip("DuckDB is not installed (pip install 'guard[audit]')")
    page = render(tmp_path, [str(hostile_log(tmp_path))], engine)
    assert FORBIDDEN.search(page.encode()) is None  # no terminal control reaches the file
    lowered = page.lower()
    assert "<script" not in lowered and "</textarea" not in lowered and "<img" not in lowered
    # The only tags are the page's own; no attribute anywhere fetches or runs anything.
    tags = set(re.findall(r"<([a-z][a-z0-9]*)", page))
    assert tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "div", "b", "p", "svg", "line",
                    "text", "rect", "span", "i", "table", "tr", "th", "td", "code", "details", "summary", "ul",
                    "ol", "li"}  # fmt: skip
    for tag in re.findall(r"<[a-z][^>]*>", page):
        assert not re.search(r"\s(?:src|href|on[a-z]+)\s*=", tag), tag
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/textarea&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in page and "\\u202eevil\\u200b\\x9b31m" in page
    for name in ("agent", "thread", "command", "rule", "category"):
        assert f"{name}0&lt;script&gt;" in page, name  # each field is on the page, as text
    trial = page[page.index('<table id="trial">'):]
    assert "trial&lt;script&gt;" in trial and "cat&lt;script&gt;" in trial and "&lt;img" in trial


@pytest.mark.parametrize("engine", engines())
def test_same_page_from_both_engines(tmp_path: Path, engine: str) -> None:
    log = hostile_log(tmp_path)
    assert render(tmp_path, [str(FLEET), str(log)], engine, f"{engine}.html") == render(
        tmp_path, [str(FLEET), str(log)], "python", "python.html"
    )


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless Chromium here (Debian package chromium; .ci/run installs it)")


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", *args]  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_fleet_page_in_chromium(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    chromium()
    page = render(tmp_path, [str(FLEET)], engines()[-1])
    assert report.main([str(FLEET), "--json"]) == 0
    data = json.loads(capsysbinary.readouterr().out)
    url = (tmp_path / "page.html").as_uri()

    dom = run_chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "<script" not in html.lower()
    # The chart: one segment per (day, category) with refusals, stacked in one column per day.
    chart = html[html.index('<svg id="per-day"') : html.index("</svg>")]
    fleet = [json.loads(x) for x in FLEET.read_text().splitlines()]
    stacks = {(r["ts"][:10], r["category"]) for r in fleet if r["verdict"] == "refuse"}
    assert chart.count('class="seg"') == len(stacks)
    for name, rows, column in (("rules", data["top"]["rule"], "rule"),
                               ("categories", data["top"]["category"], "category"),
                               ("commands", data["top"]["command"], "normalised command")):  # fmt: skip
        table = html[html.index(f'<table id="{name}">') :]
        table = table[: table.index("</table>")]
        assert f"<th>{column}</th>" in table, name  # each column says what it holds
        assert table.count("<tr>") == len(rows) + 1, name
        assert table.count("<details>") == len(rows), name  # the commands behind each row
    retries = html[html.index('<table id="retries">') :]
    assert retries[: retries.index("</table>")].count("<summary>longest run</summary>") >= 1
    assert 'id="annotations"' in html and 'id="never-fired"' in html
    assert f"<b>{data['summary']['records']:,}</b>records" in html

    shot = tmp_path / "page.png"
    proc = run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1100,1800", url)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    assert png_size(shot) == (1100, 1800)
    assert shot.stat().st_size > 20_000  # a page with charts and tables, not a blank one
    if os.environ.get("GUARD_AUDIT_SCREENSHOT"):  # how the README's picture is made
        shutil.copy(shot, os.environ["GUARD_AUDIT_SCREENSHOT"])
    assert page.count("<details>") >= len(data["top"]["rule"])


def test_hostile_page_in_chromium_runs_nothing(tmp_path: Path) -> None:
    chromium()
    render(tmp_path, [str(hostile_log(tmp_path))], engines()[-1])
    dom = run_chromium(tmp_path, "--dump-dom", (tmp_path / "page.html").as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    lowered = dom.stdout.lower()
    assert "<script" not in lowered and "<img" not in lowered and "<textarea" not in lowered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout  # shown as text
