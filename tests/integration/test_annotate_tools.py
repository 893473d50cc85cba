"""Every build tool and version installed here, for real, through ``guard annotate``.

Each case runs the real tool against the loopback smart-HTTP server (tests/integration/
test_annotate_gitserver.py), or a loopback sshd, under ``guard annotate`` as guard-shell runs
it, and requires the program's stderr to pass through and exactly the expected annotation (or
none) to follow. A tool that is absent skips its cases; a new version that words its failure
differently fails here instead of going unnoticed.

Tools come from PATH and from ``GUARD_TEST_TOOLS`` (default ``.tools``, filled by
``.ci/install-tools``): every ``*/bin/<tool>`` there is one more version to test. With
``GUARD_RECORD_FIXTURES=1`` each run's stderr and annotation are written to fixtures/stderr/
(port, temporary paths and home normalised) for the replay tests in tests/act/.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_annotate_gitserver import GitServer, git_server_fixture  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "stderr"
PREFIX = b"[guard] "
RECORD = os.environ.get("GUARD_RECORD_FIXTURES") == "1"


# --------------------------------------------------------------------------- finding tools


def tools_dir() -> Path:
    return Path(os.environ.get("GUARD_TEST_TOOLS") or REPO / ".tools")


@functools.cache
def variants(exe: str) -> tuple[tuple[str, str], ...]:
    """(version, path) of every working ``exe``: on PATH, and in each tools_dir()/*/bin."""
    paths = [p for p in [shutil.which(exe)] if p]
    paths += sorted(glob.glob(str(tools_dir() / "*" / "bin" / exe)))
    out: dict[str, str] = {}
    for p in paths:
        v = version_of(p)
        if v and v not in out:
            out[v] = p
    return tuple(sorted(out.items()))


def version_of(path: str) -> str | None:
    args = {"ssh": ["-V"], "go": ["version"]}.get(os.path.basename(path), ["--version"])
    try:
        r = subprocess.run([path, *args], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "COREPACK_ENABLE_STRICT": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    m = re.search(r"(\d+\.\d+(?:\.\d+)?(?:p\d+)?)", r.stdout + r.stderr)
    return m.group(1) if m else None


def params(exe: str, cases: list[Case]) -> list:
    found = variants(exe)
    if not found:
        return [pytest.param(c, None, None, id=f"{c.name}-absent",
                             marks=pytest.mark.skip(reason=f"{exe} not installed")) for c in cases]
    return [pytest.param(c, v, p, id=f"{c.name}-{exe}{v}") for c in cases for v, p in found]


# --------------------------------------------------------------------------- one run


@dataclass
class Run:
    tmp: Path
    server: GitServer
    env: dict[str, str]
    cwd: Path

    @property
    def private(self) -> str:
        return self.server.url("private.git")

    @property
    def public(self) -> str:
        return self.server.url("public.git")

    def project(self, name: str, files: dict[str, str]) -> Path:
        d = self.tmp / name
        for rel, text in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)
        d.mkdir(exist_ok=True)
        self.cwd = d
        return d


@dataclass
class Case:
    name: str
    args: Callable[[Run], list[str]]
    expect: str | None  # the rule id; None: no annotation at all
    contains: tuple[str, ...] = ()  # formatted with url=the private repository's URL, host, port
    setup: Callable[[Run], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    in_tree: bool = False
    status: int | None = None  # the exit status when it is not just "non-zero"


def base_env(tmp: Path) -> dict[str, str]:
    e = dict(os.environ)
    for k in ("GUARD_ANNOTATING", "GH_TOKEN", "GITHUB_TOKEN", "GH_HOST", "COLUMNS"):
        e.pop(k, None)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    (tmp / "tree").mkdir(exist_ok=True)
    real_home = os.environ.get("HOME") or os.path.expanduser("~")
    e.update(
        GIT_TERMINAL_PROMPT="0",
        GUARD_TREE=str(tmp / "tree"),
        GUARD_AUDIT_LOG=str(tmp / "audit.jsonl"),
        XDG_CACHE_HOME=str(tmp / "cache"),
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(home),
        PYTHONPATH=str(REPO),
        NO_COLOR="1",
        # each tool's caches in the temporary directory; no network but the loopback server
        UV_CACHE_DIR=str(tmp / "uv-cache"),
        POETRY_CACHE_DIR=str(tmp / "poetry-cache"), POETRY_VIRTUALENVS_IN_PROJECT="true",
        PIPENV_VENV_IN_PROJECT="1", PIPENV_YES="1", PIPENV_NOSPIN="1", PIPENV_IGNORE_VIRTUALENVS="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        npm_config_cache=str(tmp / "npm-cache"), npm_config_update_notifier="false",
        npm_config_audit="false", npm_config_fund="false", YARN_CACHE_FOLDER=str(tmp / "yarn-cache"),
        CARGO_HOME=str(tmp / "cargo-home"), CARGO_NET_RETRY="0",
        RUSTUP_HOME=os.environ.get("RUSTUP_HOME") or os.path.join(real_home, ".rustup"),
        GOPATH=str(tmp / "gopath"), GOMODCACHE=str(tmp / "gomod"), GOFLAGS="-mod=mod", GOPROXY="direct",
        GOSUMDB="off", GOPRIVATE="example.test", GOTOOLCHAIN="local", GOCACHE=str(tmp / "gocache"),
        BUNDLE_PATH=str(tmp / "bundle"), BUNDLE_USER_HOME=str(tmp / "bundle-home"),
        BUNDLE_SILENCE_ROOT_WARNING="1", GEM_HOME=str(tmp / "gems"),
    )
    return e


def guard_annotate(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 240):
    return subprocess.run([sys.executable, "-m", "guard.cli.annotate", "--", *argv],
                          env=env, cwd=cwd, capture_output=True, timeout=timeout)


def annotation_lines(stderr: bytes) -> list[bytes]:
    return [line for line in stderr.split(b"\n") if line.startswith(PREFIX)]


def audit_rules(env: dict[str, str]) -> list[str]:
    path = Path(env["GUARD_AUDIT_LOG"])
    if not path.exists():
        return []
    return [json.loads(line).get("rule") for line in path.read_text().splitlines() if line.strip()]


def check(case: Case, exe: str, version: str, path: str, run: Run, program: str | None = None) -> None:
    """Run ``path`` (the tool ``exe`` at ``version``, or the ``program`` that runs it) with the
    case's arguments under guard annotate and check what it printed."""
    if case.setup:
        case.setup(run)
    run.env.update(case.env)
    argv = [path, *case.args(run)]
    r = guard_annotate(argv, run.env, run.cwd)
    body = re.sub(rb"(?m)^\[guard\] .*\n?", b"", r.stderr)
    found = annotation_lines(r.stderr)
    if RECORD:
        record(case, exe, version, [program or exe, *argv[1:]], body, found, run)
    shown = r.stderr.decode(errors="replace")
    if case.status is not None:
        assert r.returncode == case.status, shown
    else:
        assert r.returncode != 0, shown
    # passthrough: what the program wrote comes first, unchanged; the annotations follow it
    assert r.stderr == body + b"".join(line + b"\n" for line in found), shown
    if case.expect is None:
        assert found == [] and audit_rules(run.env) == [], shown
        return
    assert audit_rules(run.env) == [case.expect], shown
    assert len(found) == 1, shown
    words = {"url": run.private, "public": run.public, "host": "127.0.0.1", "port": str(run.server.port)}
    for frag in case.contains:
        assert frag.format(**words).encode() in found[0], shown


# --------------------------------------------------------------------------- recording


def normalise(text: bytes, run: Run) -> bytes:
    text = text.replace(str(run.tmp).encode(), b"/tmp/T").replace(str(run.server.port).encode(), b"PORT")
    if run.env.get("SSHD_PORT"):
        text = text.replace(run.env["SSHD_PORT"].encode(), b"SSHPORT")
    for local, neutral in ((sys.prefix, "/path/to/project/.venv"), (str(tools_dir()), "/opt/tools"),
                           (str(REPO), "/path/to/guard"), (sys.base_prefix, "/opt/python"),
                           (os.path.expanduser("~"), "/home/user")):
        text = text.replace(local.encode(), neutral.encode())
    return text


def record(case: Case, exe: str, version: str, argv: list[str], body: bytes, found: list[bytes], run: Run) -> None:
    name = f"{case.name}-{exe}{version}"
    command = normalise(shlex.join(argv).encode(), run).decode()
    head = [
        f"# produced by: real {exe} {version} against the loopback test servers, recorded by "
        "tests/integration/test_annotate_tools.py (port, temporary paths and home normalised)",
        f"# tool: {exe} {version}",
        f"# command: {command}",
        "# env: GIT_TERMINAL_PROMPT=0",
        f"# cwd_in_tree: {'true' if case.in_tree else 'false'}",
        f"# expect: {case.expect or 'none'}",
    ]
    head += [f"# annotation: {normalise(line, run).decode()}" for line in found]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / f"{name}.txt").write_bytes(("\n".join(head) + "\n# ---\n").encode() + normalise(body, run))


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def run(git_server: GitServer, tmp_path: Path) -> Run:
    return Run(tmp_path, git_server, base_env(tmp_path), tmp_path)


def _clone_public(run: Run) -> None:
    subprocess.run(["git", "clone", "-q", run.public, str(run.tmp / "pub")], env=run.env, check=True)
    subprocess.run(["git", "-C", str(run.tmp / "pub"), "remote", "add", "priv", run.private], env=run.env, check=True)
    run.cwd = run.tmp / "pub"


def _in_tree(run: Run) -> None:
    d = run.tmp / "tree" / "proj"
    d.mkdir(parents=True, exist_ok=True)
    run.env["GIT_CEILING_DIRECTORIES"] = str(run.tmp)
    run.cwd = d


def _outside(run: Run) -> None:
    d = run.tmp / "elsewhere"
    d.mkdir(exist_ok=True)
    run.env["GIT_CEILING_DIRECTORIES"] = str(run.tmp)
    run.cwd = d


def _submodule_private(run: Run) -> None:
    """A checkout whose .gitmodules names the private repository: the URL is not on the command line."""
    _clone_public(run)
    git = ["git", "-C", str(run.cwd), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "submodule", "--quiet", "add", run.public, "sub"], env=run.env, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "sub"], env=run.env, check=True)
    subprocess.run([*git, "config", "-f", ".gitmodules", "submodule.sub.url", run.private], env=run.env, check=True)
    subprocess.run([*git, "submodule", "--quiet", "deinit", "-f", "sub"], env=run.env, check=True)
    shutil.rmtree(run.cwd / ".git" / "modules" / "sub")
    subprocess.run([*git, "config", "--remove-section", "submodule.sub"], env=run.env, check=False)


GIT = [
    Case("git-clone-private", lambda r: ["clone", r.private, str(r.tmp / "out")], "git-terminal-prompts-disabled",
         ('git_clone(url="{url}")', "git clone {url} /tmp/private"), status=128),
    Case("git-ls-remote-private", lambda r: ["ls-remote", r.private], "git-terminal-prompts-disabled",
         ('git_clone(url="{url}")',), status=128),
    Case("git-fetch-private-url", lambda r: ["fetch", r.private], "git-terminal-prompts-disabled",
         ('git_clone(url="{url}")',), setup=_clone_public, status=128),
    # the remote's URL is in the config, not on the command line: git names only the host
    Case("git-pull-remote", lambda r: ["pull", "priv", "main"], "git-terminal-prompts-disabled",
         ('git_clone(url="<URL of the repository on 127.0.0.1>")',), setup=_clone_public),
    Case("git-submodule-add", lambda r: ["-c", "protocol.file.allow=always", "submodule", "add", r.private, "sub"],
         "git-terminal-prompts-disabled", ('git_clone(url="{url}")',), setup=_clone_public, status=128),
    # the URL comes from git's "fatal: clone of 'URL' into submodule path" line
    Case("git-submodule-update-private", lambda r: ["submodule", "update", "--init"], "git-terminal-prompts-disabled",
         ('git_clone(url="{url}")',), setup=_submodule_private),
    Case("git-push-private", lambda r: ["push", r.private, "main"], "git-terminal-prompts-disabled",
         ('git_clone(url="{url}")',), setup=_clone_public, status=128),
    Case("git-wrong-password", lambda r: ["ls-remote", r.private.replace("http://", "http://agent:ghp_wrong@")],
         "git-credential-rejected", ('git_clone(url="{url}")', "no git credential or token"), status=128),
    Case("git-rev-parse-in-tree", lambda r: ["rev-parse", "HEAD"], "git-not-a-repository", ("changes_since",),
         setup=_in_tree, in_tree=True, status=128),
    Case("git-status-in-tree", lambda r: ["status"], "git-not-a-repository", ("git_status",),
         setup=_in_tree, in_tree=True, status=128),
    Case("git-diff-in-tree", lambda r: ["diff"], "git-diff-not-a-repository", ("git_diff", "--no-index"),
         setup=_in_tree, in_tree=True, status=129),
    Case("git-status-outside-tree", lambda r: ["status"], None, setup=_outside, status=128),
    Case("git-clone-missing", lambda r: ["clone", r.server.url("nothing.git"), str(r.tmp / "x")],
         "git-repository-not-found", ("for a public one, check the URL",),
         status=128),
    Case("git-checkout-unknown", lambda r: ["checkout", "no-such-branch"], None, setup=_clone_public, status=1),
]


@pytest.mark.parametrize(("case", "version", "path"), params("git", GIT))
def test_git(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "git", version, path, run)


LFS = [
    Case("git-lfs-clone-private", lambda r: ["lfs", "clone", r.private, str(r.tmp / "out")],
         "git-terminal-prompts-disabled", ('git_clone(url="{url}")',)),
]


@pytest.mark.parametrize(("case", "version", "path"), params("git-lfs", LFS))
def test_git_lfs(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "git-lfs", version, shutil.which("git") or "git", run, program="git")


# --------------------------------------------------------------------------- ssh


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory):
    daemon = "/usr/sbin/sshd"
    if not os.access(daemon, os.X_OK) or not shutil.which("ssh-keygen"):
        pytest.skip("sshd not installed")
    d = tmp_path_factory.mktemp("sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "hostkey")], check=True)
    os.makedirs("/run/sshd", exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [daemon, "-D", "-e", "-f", "/dev/null", "-o", "ListenAddress=127.0.0.1", "-p", str(port),
         "-h", str(d / "hostkey"), "-o", f"PidFile={d / 'pid'}", "-o", "PasswordAuthentication=no",
         "-o", "KbdInteractiveAuthentication=no", "-o", "AuthorizedKeysFile=none"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.skip("sshd did not start")
    yield port
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


NO_CHECK = "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
SSH = [
    Case("ssh-host-key-unknown", lambda r: ["clone", f"ssh://git@127.0.0.1:{r.env['SSHD_PORT']}/o/private.git",
                                            str(r.tmp / "out")],
         "ssh-host-key-verification", ('git_clone(url="ssh://git@127.0.0.1:{sshport}/o/private.git")',),
         env={"GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}, status=128),
    Case("ssh-publickey-denied", lambda r: ["clone", f"ssh://git@127.0.0.1:{r.env['SSHD_PORT']}/o/private.git",
                                            str(r.tmp / "out")],
         "ssh-publickey-denied", ('git_clone(url="ssh://git@127.0.0.1:{sshport}/o/private.git")',),
         env={"GIT_SSH_COMMAND": NO_CHECK}, status=128),
]
SSH_T = [
    Case("ssh-t-publickey-denied", lambda r: ["-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                                              "-o", "UserKnownHostsFile=/dev/null", "-p", r.env["SSHD_PORT"],
                                              "git@127.0.0.1"],
         "ssh-publickey-denied", ('git_clone(url="<URL of the repository on 127.0.0.1>")',), status=255),
]


def _with_port(case: Case, port: int) -> Case:
    return Case(case.name, case.args, case.expect, tuple(c.replace("{sshport}", str(port)) for c in case.contains),
                case.setup, case.env, case.in_tree, case.status)


@pytest.mark.parametrize(("case", "version", "path"), params("ssh", SSH))
def test_git_over_ssh(case: Case, version: str, path: str, run: Run, sshd: int) -> None:
    run.env["SSHD_PORT"] = str(sshd)
    check(_with_port(case, sshd), "ssh", version, shutil.which("git") or "git", run, program="git")


@pytest.mark.parametrize(("case", "version", "path"), params("ssh", SSH_T))
def test_ssh(case: Case, version: str, path: str, run: Run, sshd: int) -> None:
    run.env["SSHD_PORT"] = str(sshd)
    check(_with_port(case, sshd), "ssh", version, path, run)


# --------------------------------------------------------------------------- gh


def _gh_env(run: Run, token: bool) -> None:
    run.env.update(GH_HOST="github.localhost", HTTP_PROXY=f"http://127.0.0.1:{run.server.port}",
                   http_proxy=f"http://127.0.0.1:{run.server.port}", GH_NO_UPDATE_NOTIFIER="1",
                   GH_PROMPT_DISABLED="1")
    if token:
        run.env["GH_TOKEN"] = "ghp_not_a_real_token"


GH = [
    Case("gh-api-bad-token", lambda r: ["api", "user"], "github-401", ("gh_pr_create",),
         setup=lambda r: _gh_env(r, True)),
    Case("gh-pr-create-bad-token", lambda r: ["pr", "create", "-R", "o/r", "--title", "t", "--body", "b"],
         "gh-auth-login", ("gh_pr_create", "do not run gh auth login"), setup=lambda r: _gh_env(r, True)),
    Case("gh-pr-list-no-login", lambda r: ["pr", "list", "-R", "o/r"], "gh-auth-login", ("gh_pr_create",),
         setup=lambda r: _gh_env(r, False)),
]


@pytest.mark.parametrize(("case", "version", "path"), params("gh", GH))
def test_gh(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "gh", version, path, run)


# --------------------------------------------------------------------------- curl, requests, urllib


HTTP = [
    Case("curl-401-private", lambda r: ["-fsS", r.private + "/info/refs?service=git-upload-pack"], None, status=22),
    Case("curl-github-401", lambda r: ["-sS", "-f", "-x", f"http://127.0.0.1:{r.server.port}",
                                       "http://api.github.localhost/user"], None, status=22),
]


@pytest.mark.parametrize(("case", "version", "path"), params("curl", HTTP))
def test_curl(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "curl", version, path, run)


PY_URLLIB = "import sys, urllib.request; urllib.request.urlopen(sys.argv[1])"
PY_REQUESTS = "import sys, requests; requests.get(sys.argv[1], timeout=10).raise_for_status()"
PYTHON = [
    Case("python-urllib-401", lambda r: ["-c", PY_URLLIB, r.private + "/info/refs"], None),
    Case("python-requests-401", lambda r: ["-c", PY_REQUESTS, r.private + "/info/refs"], None),
]


def python_with(module: str) -> str | None:
    """A Python that can import ``module``: this one, or the tools' own (.ci/install-tools)."""
    for py in (sys.executable, str(tools_dir() / ".pytools" / "bin" / "python")):
        if os.access(py, os.X_OK) and subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return py
    return None


@pytest.mark.parametrize("case", PYTHON, ids=[c.name for c in PYTHON])
def test_python_http(case: Case, run: Run) -> None:
    py = python_with("requests" if "requests" in case.name else "urllib.request")
    if py is None:
        pytest.skip("no Python with requests installed")
    version = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
    check(case, "python", version, py, run)


# --------------------------------------------------------------------------- Python build tools


def _pip_args(*extra: str) -> Callable[[Run], list[str]]:
    def args(r: Run) -> list[str]:
        return ["install", "--no-index", "--no-deps", "--no-build-isolation", "--target", str(r.tmp / "site"),
                *[e.format(url=r.private, tmp=r.tmp) for e in extra]]
    return args


def _requirements(r: Run) -> None:
    (r.tmp / "requirements.txt").write_text(f"privpkg @ git+{r.private}\n")


PIP_HINT = ("pip install <path of the private copy>", 'git_clone(url="{url}")')
PIP = [
    Case("pip-git-url", _pip_args("git+{url}"), "pip-git-credential", PIP_HINT),
    Case("pip-named-requirement", _pip_args("privpkg @ git+{url}"), "pip-git-credential", PIP_HINT),
    Case("pip-editable-egg", lambda r: ["install", "--no-index", "--no-deps", "--no-build-isolation", "--src", str(r.tmp / "src"),
                                        "-e", f"git+{r.private}#egg=privpkg"], "pip-git-credential", PIP_HINT),
    Case("pip-requirements-file", _pip_args("-r", "{tmp}/requirements.txt"), "pip-git-credential", PIP_HINT,
         setup=_requirements),
    Case("pip-missing-package", _pip_args("no-such-package-guard-test"), None),
]


@pytest.mark.parametrize(("case", "version", "path"), params("pip", PIP))
def test_pip(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "pip", version, path, run)


def _requirements_in(r: Run) -> None:
    r.project("compileproj", {"requirements.in": f"privpkg @ git+{r.private}\n"})


# pip-compile (pip-tools) and hatch run pip, which runs git; the URL is in their output's
# "× git clone … URL" line, not in the command
PIP_COMPILE = [
    Case("pip-compile-git-url", lambda r: ["--no-header", "--no-index", "-o", str(r.tmp / "out.txt"), "requirements.in"],
         "pip-compile-git-credential", ('git_clone(url="{url}")', "requirements.in"), setup=_requirements_in),
]


@pytest.mark.parametrize(("case", "version", "path"), params("pip-compile", PIP_COMPILE))
def test_pip_compile(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "pip-compile", version, path, run)


def _hatch_project(r: Run) -> None:
    text = PYPROJECT.replace("dependencies = []", f'dependencies = ["privpkg @ git+{r.private}"]')
    text += '\n[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
    text += "\n[tool.hatch.metadata]\nallow-direct-references = true\n"
    r.project("hatchproj", {"pyproject.toml": text, "x/__init__.py": ""})
    r.env["HATCH_DATA_DIR"] = str(r.tmp / "hatch-data")
    r.env["HATCH_CACHE_DIR"] = str(r.tmp / "hatch-cache")


HATCH = [
    Case("hatch-env-create", lambda r: ["env", "create"], "hatch-git-credential",
         ('git_clone(url="{url}")', "pyproject.toml"), setup=_hatch_project),
]


@pytest.mark.parametrize(("case", "version", "path"), params("hatch", HATCH))
def test_hatch(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "hatch", version, path, run)


PYPROJECT = '[project]\nname = "x"\nversion = "0.1.0"\nrequires-python = ">=3.8"\ndependencies = []\n'


def _uv_project(run: Run, sources: bool = False) -> None:
    text = PYPROJECT
    if sources:
        text = text.replace("dependencies = []", 'dependencies = ["privpkg"]')
        text += f'\n[tool.uv.sources]\nprivpkg = {{ git = "{run.private}" }}\n'
    run.project("uvproj", {"pyproject.toml": text})


UV_HINT = ("[tool.uv.sources]", 'git_clone(url="{url}")')
UV = [
    Case("uv-pip-install", lambda r: ["pip", "install", "--python", sys.executable, "--target", str(r.tmp / "site"),
                                      f"privpkg @ git+{r.private}"], "uv-git-credential", UV_HINT),
    Case("uv-add", lambda r: ["add", "--python", sys.executable, f"privpkg @ git+{r.private}"],
         "uv-git-credential", UV_HINT, setup=lambda r: _uv_project(r)),
    Case("uv-sync", lambda r: ["sync", "--python", sys.executable], "uv-git-credential", UV_HINT,
         setup=lambda r: _uv_project(r, sources=True)),
]


@pytest.mark.parametrize(("case", "version", "path"), params("uv", UV))
def test_uv(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "uv", version, path, run)


def _poetry_project(run: Run, dep: bool) -> None:
    text = PYPROJECT.replace('">=3.8"', '">=3.11"') + "\n[tool.poetry]\npackage-mode = false\n"
    if dep:
        text = text.replace("dependencies = []", f'dependencies = ["privpkg @ git+{run.private}"]')
    run.project("poetryproj", {"pyproject.toml": text})


POETRY_HINT = ("poetry add <path of the private copy>", 'git_clone(url="{url}")')
POETRY = [
    Case("poetry-add", lambda r: ["add", "--no-interaction", f"git+{r.private}"], "poetry-git-credential",
         POETRY_HINT, setup=lambda r: _poetry_project(r, False)),
    Case("poetry-lock", lambda r: ["lock", "--no-interaction"], "poetry-git-credential", POETRY_HINT,
         setup=lambda r: _poetry_project(r, True)),
]


@pytest.mark.parametrize(("case", "version", "path"), params("poetry", POETRY))
def test_poetry(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "poetry", version, path, run)


PIPENV = [
    Case("pipenv-install", lambda r: ["install", "--python", sys.executable, f"privpkg@ git+{r.private}"],
         "pipenv-git-build", ("pipenv install -e <path of the private copy>", 'git_clone(url="{url}")'),
         setup=lambda r: r.project("pipenvproj", {}) and None),
    # the URL only in the Pipfile: it comes from pipenv's own (wrapped) "when git clone" line
    Case("pipenv-lock-pipfile", lambda r: ["lock", "--python", sys.executable], "pipenv-git-build",
         ('git_clone(url="{url}")',), setup=lambda r: r.project("pipenvlock", {
             "Pipfile": f'[packages]\nprivpkg = {{git = "{r.private}"}}\n'}) and None),
]


@pytest.mark.parametrize(("case", "version", "path"), params("pipenv", PIPENV))
def test_pipenv(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "pipenv", version, path, run)


# --------------------------------------------------------------------------- JavaScript


PACKAGE = '{"name": "x", "version": "1.0.0", "license": "MIT"}'


def _js_project(run: Run, deps: str = "") -> None:
    text = PACKAGE if not deps else PACKAGE[:-1] + f', "dependencies": {{{deps}}}}}'
    run.project("jsproj", {"package.json": text})


NPM = [
    Case("npm-install-git-url", lambda r: ["install", f"git+{r.private}"], "npm-git-credential",
         ('npm install <path of the private copy>', 'git_clone(url="{url}")'), setup=_js_project),
    Case("npm-install-dependency", lambda r: ["install"], "npm-git-credential", ('git_clone(url="{url}")',),
         setup=lambda r: _js_project(r, f'"privpkg": "git+{r.private}"')),
    Case("npm-install-missing-file", lambda r: ["install", "./no-such-dir"], None, setup=_js_project),
    # npm >= 9 (recorded: 9.9.4, 10.9.9, 11.19.1) reports a git dependency it could not use only as ENOENT on the clone's
    # package.json (here: a repository without one), hiding git's own words: a hedged note
    Case("npm-install-git-enoent", lambda r: ["install", f"git+{r.public}"], "npm-git-hidden",
         ("npm 9 and later hide git's own error", 'git_clone(url="{public}")'), setup=_js_project),
]


@pytest.mark.parametrize(("case", "version", "path"), params("npm", NPM))
def test_npm(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "npm", version, path, run)


def _yarn_project(run: Run) -> None:
    _js_project(run)
    (run.cwd / "yarn.lock").write_text("")


YARN = [
    Case("yarn-add-git-url", lambda r: ["add", "--non-interactive", f"git+{r.private}"], "yarn-git-credential",
         ("yarn add file:<path of the private copy>", 'git_clone(url="{url}")'), setup=_yarn_project),
]


@pytest.mark.parametrize(("case", "version", "path"), params("yarn", YARN))
def test_yarn(case: Case, version: str, path: str, run: Run) -> None:
    if not version.startswith("1."):
        pytest.skip(f"yarn {version} writes its errors to stdout, which guard does not read")
    check(case, "yarn", version, path, run)


PNPM = [
    Case("pnpm-add-git-url", lambda r: ["add", f"git+{r.private}"], "pnpm-git-credential",
         ("pnpm add file:<path of the private copy>", "link:", 'git_clone(url="{url}")'), setup=_js_project),
]


BUN = [
    Case("bun-add-git-url", lambda r: ["add", f"git+{r.private}"], "bun-git-credential",
         ('git_clone(url="{url}")', "bun add <path of the private copy>"), setup=_js_project),
]


@pytest.mark.parametrize(("case", "version", "path"), params("bun", BUN))
def test_bun(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "bun", version, path, run)


@pytest.mark.parametrize(("case", "version", "path"), params("pnpm", PNPM))
def test_pnpm(case: Case, version: str, path: str, run: Run) -> None:
    if int(version.split(".")[0]) < 10:
        pytest.skip(f"pnpm {version} writes its errors to stdout, which guard does not read")
    check(case, "pnpm", version, path, run)


# --------------------------------------------------------------------------- cargo, go, bundler


def _cargo_project(run: Run, cli: bool) -> None:
    run.project("cargoproj", {
        "Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n\n'
                      f'[dependencies]\nprivcrate = {{ git = "{run.private}" }}\n',
        "src/main.rs": "fn main() {}\n",
    })
    run.env["CARGO_NET_GIT_FETCH_WITH_CLI"] = "true" if cli else "false"


CARGO_HINT = ('[patch."{url}"]', 'git_clone(url="{url}")')
CARGO = [
    Case("cargo-libgit2", lambda r: ["generate-lockfile"], "cargo-git-credential", CARGO_HINT,
         setup=lambda r: _cargo_project(r, False), status=101),
    Case("cargo-git-cli", lambda r: ["build"], "cargo-git-credential", CARGO_HINT,
         setup=lambda r: _cargo_project(r, True), status=101),
    Case("cargo-compile-error", lambda r: ["build", "--offline"], None, status=101,
         setup=lambda r: r.project("cargobad", {
             "Cargo.toml": '[package]\nname = "y"\nversion = "0.1.0"\nedition = "2021"\n',
             "src/main.rs": 'fn main() { let x: u32 = "fatal: could not read Username"; }\n'}) and None),
]


@pytest.mark.parametrize(("case", "version", "path"), params("cargo", CARGO))
def test_cargo(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "cargo", version, path, run)


def _go_project(run: Run, imports: bool) -> None:
    files = {"go.mod": "module example.com/x\n\ngo 1.19\n"}
    if imports:
        files["main.go"] = 'package main\n\nimport _ "example.test/private.git"\n\nfunc main() {}\n'
    run.project("goproj", files)
    # A module path cannot carry a port: name it example.test/… and let git rewrite the URL.
    for scheme in ("https://", "http://", "git://", "ssh://git@", "git+ssh://git@"):
        subprocess.run(["git", "config", "--global", "--add", f"url.{run.server.url('')}.insteadOf",
                        f"{scheme}example.test/"], env=run.env, check=True)


GO_HINT = ("go mod edit -replace example.test/private.git=<path of the copy>", "go-import meta tag")
GO = [
    Case("go-get", lambda r: ["get", "example.test/private.git"], "go-git-credential", GO_HINT,
         setup=lambda r: _go_project(r, False)),
    Case("go-build-import", lambda r: ["build", "./..."], "go-git-credential", GO_HINT,
         setup=lambda r: _go_project(r, True)),
    Case("go-mod-tidy", lambda r: ["mod", "tidy"], "go-git-credential", GO_HINT,
         setup=lambda r: _go_project(r, True)),
    Case("go-vet-error", lambda r: ["vet", "./..."], None, setup=lambda r: r.project("gobad", {
        "go.mod": "module example.com/y\n\ngo 1.19\n",
        "main.go": 'package main\n\nfunc main() { x := "fatal: could not read Username" }\n'}) and None),
]


@pytest.mark.parametrize(("case", "version", "path"), params("go", GO))
def test_go(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "go", version, path, run)


BUNDLER = [
    Case("bundle-install", lambda r: ["install"], "bundler-git-credential",
         ('gem "<name>", path: "<path of the private copy>"', 'git_clone(url="{url}")'),
         setup=lambda r: r.project("rubyproj", {
             "Gemfile": f'source "https://rubygems.org"\ngem "privpkg", git: "{r.private}"\n'}) and None),
]


@pytest.mark.parametrize(("case", "version", "path"), params("bundle", BUNDLER))
def test_bundler(case: Case, version: str, path: str, run: Run) -> None:
    check(case, "bundle", version, path, run)


# --------------------------------------------------------------------------- under guard-shell


def guard_shell() -> str | None:
    exe = Path(sys.executable).parent / "guard-shell"
    return str(exe) if exe.exists() else None


def test_guard_shell_gives_the_annotator_the_program(run: Run) -> None:
    """Under guard-shell the relay runs bash: the rule keyed on pip holds because the verdict's
    programs reach the annotator, and the URL comes from pip's argv inside the command."""
    shell = guard_shell()
    if shell is None:
        pytest.skip("guard-shell not installed")
    pip = variants("pip")[-1][1] if variants("pip") else None
    if pip is None:
        pytest.skip("pip not installed")
    run.env.update(GUARD_REAL_SHELL=shutil.which("bash") or "/bin/bash", GUARD_SERVER="0")
    command = f"cd {shlex.quote(str(run.tmp))} && {shlex.quote(pip)} install --no-index --no-deps " \
              f"--target site 'privpkg @ git+{run.private}'"
    r = subprocess.run([shell, "-c", command], env=run.env, cwd=run.tmp, capture_output=True, timeout=240)
    found = annotation_lines(r.stderr)
    assert r.returncode != 0
    assert audit_rules(run.env) == ["pip-git-credential"], r.stderr.decode(errors="replace")
    assert len(found) == 1 and f'git_clone(url="{run.private}")'.encode() in found[0]


def test_guard_shell_tree_from_config(run: Run) -> None:
    """A tree named only by ``trees:`` in the config (no GUARD_TREE) still counts as the tree."""
    shell = guard_shell()
    if shell is None:
        pytest.skip("guard-shell not installed")
    tree = run.tmp / "configured-tree"
    (tree / "app").mkdir(parents=True)
    # git's arguments known only at run time (an environment variable; sys.argv is read from the
    # command line now), so the analysis lets it through and git itself fails
    (tree / "app" / "tool.py").write_text('import os, subprocess\nsubprocess.run(["git"] + os.environ["TOOL_ARGS"].split())\n')
    run.env["TOOL_ARGS"] = "rev-parse HEAD"
    config = run.tmp / "guard.yaml"
    config.write_text(f"config:\n  trees: [{tree}]\n")
    run.env.pop("GUARD_TREE", None)
    run.env.update(GUARD_CONFIG=str(config), GUARD_REAL_SHELL=shutil.which("bash") or "/bin/bash",
                   GUARD_SERVER="0", GIT_CEILING_DIRECTORIES=str(run.tmp))
    r = subprocess.run([shell, "-c", f"{shlex.quote(sys.executable)} tool.py"], env=run.env, cwd=tree / "app",
                       capture_output=True, timeout=120)
    assert b"not a git repository" in r.stderr
    assert audit_rules(run.env) == ["git-not-a-repository"], r.stderr.decode(errors="replace")
