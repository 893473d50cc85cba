"""The program catalogue (rules/programs/search.yaml, files.yaml, http.yaml) against the real programs.

Each entry's examples say what guard reads from a command line: the files a search reads,
whether a program prints the environment, whether a copy leaves ``.git`` behind, which request an
HTTP client sends. Here each example is run with the real program, where it is installed, and
what the program did must be what the example says (and what guard's reader says: the
examples are checked against the reader when the rules load, and again below). A program not
installed here is skipped with the reason; CI installs what Debian packages.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from guard.ruleset.catalogue import example_facts

PROGRAMS = Path(__file__).resolve().parents[2] / "rules" / "programs"


def _examples(key: str) -> list[Any]:
    """(program, its entry's part ``key``, example) for every example of ``key`` in the catalogue,
    named by its command."""
    out = []
    for f in sorted(PROGRAMS.glob("*.yaml")):
        for spec in yaml.safe_load(f.read_text())["programs"]:
            part = spec.get(key)
            if not isinstance(part, dict):
                continue
            for ex in part.get("examples") or []:
                out.append(pytest.param(shlex.split(ex["command"])[0], part, ex, id=ex["command"]))
    return out


def _installed(program: str) -> str:
    real = shutil.which(program)
    if real is None:
        pytest.skip(f"{program} is not installed here")
    return real


def _run(command: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LC_ALL": "C"}
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env={**base, **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


# ----------------------------------------------------------------------------- searches


@pytest.mark.parametrize(("program", "part", "ex"), _examples("searches"))
def test_a_search_reads_the_files_the_catalogue_says(
    program: str, part: dict, ex: dict, tmp_path: Path
) -> None:
    """Every plain word of the command is made a file holding ``"needle NAME"`` (a JSON string, so
    jq reads it too): the files whose line the search printed (or wrote to a file of its own:
    sort -o) are the files it read."""
    _installed(program)
    argv = shlex.split(ex["command"])
    assert example_facts(program, tuple(argv), {"searches": part})["reads"] == ex["reads"]
    if any(a.startswith("-i") for a in argv[1:]) and program in ("sed", "gsed"):
        pytest.skip("sed -i edits the file in place and prints nothing to show what it read")
    made = {w: f'"needle {w}"\n' for w in argv[1:] if re.fullmatch(r"\w[\w.]*", w)}
    for name, text in made.items():
        (tmp_path / name).write_text(text)
    proc = _run(ex["command"], tmp_path)
    out = proc.stdout + "".join(
        p.read_text() for p in tmp_path.iterdir() if made.get(p.name) != p.read_text()
    )
    printed = set(re.findall(r"needle (\w[\w.]*)", out))
    assert printed == set(ex["reads"]), (proc.stdout, proc.stderr)


# ----------------------------------------------------------------------------- environment

SENTINEL = "GUARD_CATALOGUE_SENTINEL"


@pytest.mark.parametrize(("program", "part", "ex"), _examples("dumps_environment"))
def test_an_environment_dump_prints_every_variable(
    program: str, part: dict, ex: dict, tmp_path: Path
) -> None:
    """Run in bash (the builtins are bash's) with a variable set: its name is printed exactly when
    the example says the command dumps the environment."""
    if program not in ("set", "export", "declare", "typeset", "compgen"):
        _installed(program)
    argv = shlex.split(ex["command"])
    assert example_facts(program, tuple(argv), {"dumps_environment": part})["dumps"] is ex["dumps"]
    proc = _run(ex["command"], tmp_path, {SENTINEL: "1"})
    assert (SENTINEL in proc.stdout) is ex["dumps"], (proc.stdout[-500:], proc.stderr)


# ----------------------------------------------------------------------------- copies


def _repo(path: Path) -> None:
    """A folder holding a .git and one file named after it."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / f"marker-{path.name}").write_text("x\n")


@pytest.mark.parametrize(
    ("program", "part", "ex"), [e for e in _examples("copies") if "excludes_vcs" in e.values[2]]
)
def test_a_copy_brings_git_along_unless_the_catalogue_says_it_stays(
    program: str, part: dict, ex: dict, tmp_path: Path
) -> None:
    """The sources are folders holding a .git, the destination an empty folder: what arrives is
    every source's files, and a .git exactly when the example says the copy keeps it."""
    _installed(program)
    argv = tuple(shlex.split(ex["command"]))
    facts = example_facts(program, argv, {"copies": part})
    assert facts["excludes_vcs"] is ex["excludes_vcs"]
    work = tmp_path / "work"
    work.mkdir()
    command = ex["command"].replace("/tmp/", f"{tmp_path}/abs/")
    srcs = [Path(s.replace("/tmp/", f"{tmp_path}/abs/")) for s in facts["sources"]]
    for s in srcs:
        _repo(s if s.is_absolute() else work / s)
    dest = work / facts["dest"]
    dest.mkdir(exist_ok=True)
    proc = _run(command, work)
    assert proc.returncode == 0, proc.stderr
    arrived = {p.name for p in dest.rglob("*")}
    for s in srcs:
        assert f"marker-{s.name}" in arrived, (facts, sorted(arrived))
    assert (".git" in arrived) is not ex["excludes_vcs"], sorted(arrived)


@pytest.mark.parametrize(("program", "part", "ex"), _examples("finds"))
def test_a_find_prints_git_unless_the_catalogue_says_it_is_left_out(
    program: str, part: dict, ex: dict, tmp_path: Path
) -> None:
    _installed(program)
    argv = tuple(shlex.split(ex["command"]))
    assert example_facts(program, argv, {"finds": part})["excludes_vcs"] is ex["excludes_vcs"]
    _repo(tmp_path / "proj")
    proc = _run(ex["command"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout.splitlines()
    assert any(p.endswith("/.git") or "/.git/" in p for p in printed) is not ex["excludes_vcs"], printed


# ----------------------------------------------------------------------------- writes


@pytest.mark.parametrize(("program", "part", "ex"), _examples("writes"))
def test_a_writer_writes_the_files_the_catalogue_says(
    program: str, part: dict, ex: dict, tmp_path: Path
) -> None:
    """Each plain word the example does not say is written (and no folder of one that is) is made
    a file first (dd's if=a, touch's -r ref, the 0 of truncate -s 0): the files that are new
    after the command are the ones it wrote."""
    _installed(program)
    argv = tuple(shlex.split(ex["command"]))
    assert example_facts(program, argv, {"writes": part})["writes"] == ex["writes"]
    written = set(ex["writes"]) | {str(Path(w).parent) for w in ex["writes"] if "/" in w}
    before = {w.rpartition("=")[2] for w in argv[1:] if re.fullmatch(r"(\w+=)?\w[\w.]*", w)} - written
    for name in before:
        (tmp_path / name).write_text("x\n")
    _run(ex["command"], tmp_path)
    after = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}
    assert after - before == written


# ----------------------------------------------------------------------------- HTTP clients


class _Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        type(self).seen.append((self.command, self.path))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(b"ok")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _path(url: str) -> str:
    """The path a request for ``url`` asks for, without its query."""
    rest = url.split("://", 1)[-1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


@pytest.mark.parametrize(
    ("program", "part", "ex"), [e for e in _examples("http") if e.values[0] in ("curl", "wget")]
)
def test_an_http_client_sends_the_request_the_catalogue_says(
    program: str, part: dict, ex: dict, server: int, tmp_path: Path
) -> None:
    """Sent to a loopback server: the requests it gets are one per URL the example names (so no
    option's value was taken for a URL), with the example's method."""
    _installed(program)
    argv = tuple(shlex.split(ex["command"]))
    facts = example_facts(program, argv, {"http": part})
    for key in ("method", "urls", "body"):
        assert key not in ex or facts[key] == ex[key]
    (tmp_path / "f").write_text("upload\n")
    _Recorder.seen = []
    command = ex["command"].replace("https://h/", f"http://127.0.0.1:{server}/")
    proc = _run(command + (" --tries=1" if program == "wget" else ""), tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = [(m, p.split("?", 1)[0]) for m, p in _Recorder.seen]
    assert got == [(facts["method"], _path(u)) for u in facts["urls"]], proc.stderr


@pytest.mark.parametrize(
    ("program", "part", "ex"), [e for e in _examples("http") if e.values[0] in ("http", "https", "xh", "xhs")]
)
def test_httpie_prepares_the_request_the_catalogue_says(
    program: str, part: dict, ex: dict, tmp_path: Path
) -> None:
    """HTTPie's --offline prints the request it would send: its method and path, and its Host
    (--ignore-stdin: a redirected standard input would be sent as the body, with POST)."""
    _installed(program)
    argv = tuple(shlex.split(ex["command"]))
    facts = example_facts(program, argv, {"http": part})
    for key in ("method", "urls", "body"):
        assert key not in ex or facts[key] == ex[key]
    proc = _run(shlex.join([argv[0], "--ignore-stdin", "--offline", "--print=H", *argv[1:]]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0].split()
    first[1] = first[1].split("?", 1)[0]
    host = re.search(r"^Host: (\S+)", proc.stdout, re.M)
    url = facts["urls"][0]
    assert (first[0], first[1]) == (facts["method"], _path(url)), proc.stdout
    assert host is not None and host.group(1) == url.split("://", 1)[1].split("/", 1)[0], proc.stdout
