"""Real programs through ``guard annotate`` against a loopback git smart-HTTP server.

git and pip always run; npm, cargo, yarn, uv, poetry and go run when found on PATH (or named by
GUARD_TEST_<TOOL>=path) and are skipped otherwise. With GUARD_RECORD_FIXTURES=1 each real
stderr is written to fixtures/stderr/ (random port and temp paths normalised) for the fast unit
tests in tests/act/test_annotate_fixtures.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_annotate_gitserver import GitServer, git_server_fixture  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "stderr"
PREFIX = b"[guard] "


def guard_annotate(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "guard.act.annotate", "--", *args],
        env=env, cwd=cwd, capture_output=True, timeout=timeout,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.pop("GUARD_ANNOTATING", None)
    e.update(
        GIT_TERMINAL_PROMPT="0",
        GUARD_TREE=str(tmp_path / "tree"),
        GUARD_AUDIT_LOG=str(tmp_path / "audit.jsonl"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        PYTHONPATH=str(REPO),
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(tmp_path / "home"),
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "tree").mkdir()
    return e


def annotations(stderr: bytes) -> list[bytes]:
    return [line for line in stderr.split(b"\n") if line.startswith(PREFIX)]


def tool(name: str) -> str | None:
    """The tool's path when it is installed and runs (a rustup proxy with no toolchain does not)."""
    path = os.environ.get(f"GUARD_TEST_{name.upper()}") or shutil.which(name)
    if path is None:
        return None
    try:
        ok = subprocess.run([path, "--version"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return path if ok else None


def record(name: str, stderr: bytes, how: str, expect: str, port: int, tmp: Path, in_tree: bool = False) -> None:
    if os.environ.get("GUARD_RECORD_FIXTURES") != "1":
        return
    body = stderr.replace(str(port).encode(), b"PORT").replace(str(tmp).encode(), b"/tmp/T")
    # no paths of the recording machine in committed fixtures
    for local, neutral in ((sys.prefix, "/path/to/project/.venv"), (sys.base_prefix, "/opt/python"),
                           (os.path.expanduser("~"), "/home/user")):
        body = body.replace(local.encode(), neutral.encode())
    body = re.sub(rb"(?m)^\[guard\] .*\n?", b"", body)
    head = (
        f"# produced by: {how}; real stderr recorded by tests/integration/test_annotate_real_tools.py "
        f"(port and temp paths normalised, guard lines removed)\n# expect: {expect}\n"
        f"# env: GIT_TERMINAL_PROMPT=0\n# cwd_in_tree: {'true' if in_tree else 'false'}\n# ---\n"
    )
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / f"{name}.txt").write_bytes(head.encode() + body)


def assert_one(result: subprocess.CompletedProcess, rule_words: bytes, tool_name: bytes) -> bytes:
    found = annotations(result.stderr)
    assert len(found) == 1, result.stderr.decode(errors="replace")
    assert rule_words in found[0] and tool_name in found[0]
    return found[0]


def audit_rules(env: dict[str, str]) -> list[str]:
    path = Path(env["GUARD_AUDIT_LOG"])
    if not path.exists():
        return []
    return [json.loads(line).get("rule") for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- git


def test_git_clone_private_prints_real_error_and_one_annotation(git_server: GitServer, env, tmp_path: Path) -> None:
    url = git_server.url("private.git")
    r = guard_annotate(["git", "clone", url, str(tmp_path / "out")], env, tmp_path)
    assert r.returncode == 128
    assert b"fatal: could not read Username for 'http://127.0.0.1:" in r.stderr
    line = assert_one(r, b"no git credential by design", b'git_clone(url="' + url.encode() + b'")')
    # the annotation comes after git's own error, on its own line
    assert r.stderr.index(b"terminal prompts disabled") < r.stderr.index(line)
    assert not (tmp_path / "out").exists()
    assert "git-terminal-prompts-disabled" in audit_rules(env)
    record("git-clone-private", r.stderr, f"real git {git_version()} clone http://127.0.0.1:PORT/private.git",
           "git-terminal-prompts-disabled", git_server.port, tmp_path)


def test_git_clone_public_stays_quiet(git_server: GitServer, env, tmp_path: Path) -> None:
    r = guard_annotate(["git", "clone", git_server.url("public.git"), str(tmp_path / "pub")], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert annotations(r.stderr) == []
    assert (tmp_path / "pub" / "README").read_text() == "public\n"
    assert audit_rules(env) == []


def test_git_through_nested_guards_annotates_once(git_server: GitServer, env, tmp_path: Path) -> None:
    inner = [sys.executable, "-m", "guard.act.annotate", "--", "git", "ls-remote", git_server.url("private.git")]
    r = guard_annotate(inner, env, tmp_path)
    assert r.returncode == 128
    assert len(annotations(r.stderr)) == 1
    # an environment scrubbed between the two guards still gives one annotation
    scrubbed = ["env", "-u", "GUARD_ANNOTATING", *inner]
    r2 = guard_annotate(scrubbed, env, tmp_path)
    assert len(annotations(r2.stderr)) == 1, r2.stderr


def test_git_without_prompt_env_is_not_annotated(git_server: GitServer, env, tmp_path: Path) -> None:
    env = {**env, "GIT_TERMINAL_PROMPT": "1", "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false"}
    r = guard_annotate(["git", "ls-remote", git_server.url("private.git")], env, tmp_path)
    assert r.returncode != 0
    assert annotations(r.stderr) == []


def test_git_status_in_tree_explains_missing_git(env, tmp_path: Path) -> None:
    tree_dir = tmp_path / "tree" / "proj"
    tree_dir.mkdir()
    env = {**env, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    r = guard_annotate(["git", "rev-parse", "HEAD"], env, tree_dir)
    assert r.returncode == 128 and b"not a git repository" in r.stderr
    assert_one(r, b"no .git by design", b"changes_since")
    record("git-not-a-repository", r.stderr, f"real git {git_version()} rev-parse HEAD in a tree directory",
           "git-not-a-repository", 0, tmp_path, in_tree=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    r2 = guard_annotate(["git", "rev-parse", "HEAD"], env, outside)
    assert b"not a git repository" in r2.stderr and annotations(r2.stderr) == []


def git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()
    return out[-1] if out else "?"


# --------------------------------------------------------------------------- build tools


def test_real_pip_git_dependency(git_server: GitServer, env, tmp_path: Path) -> None:
    url = git_server.url("private.git")
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--no-deps",
           "--disable-pip-version-check", "--target", str(tmp_path / "site"), f"git+{url}"]
    r = guard_annotate(pip, env, tmp_path)
    assert r.returncode != 0
    line = assert_one(r, b"pip could not fetch " + url.encode(), b"pip install <path of the private copy>")
    assert b'git_clone(url="' + url.encode() + b'")' in line
    assert audit_rules(env) == ["pip-git-credential"]
    record("pip-git-private", r.stderr, "real pip install --no-index git+http://127.0.0.1:PORT/private.git",
           "pip-git-credential", git_server.port, tmp_path)


def test_real_npm_git_dependency(git_server: GitServer, env, tmp_path: Path) -> None:
    npm = tool("npm")
    if not npm:
        pytest.skip("npm not installed")
    proj = tmp_path / "npmproj"
    proj.mkdir()
    (proj / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    url = git_server.url("private.git")
    r = guard_annotate([npm, "install", "--no-audit", "--no-fund", f"git+{url}"], env, proj)
    assert r.returncode != 0
    assert_one(r, b"npm could not fetch " + url.encode(), b"file:<path of the copy>")
    record("npm-git-private", r.stderr, "real npm install git+http://127.0.0.1:PORT/private.git",
           "npm-git-credential", git_server.port, tmp_path)


def _cargo_project(tmp_path: Path, url: str) -> Path:
    proj = tmp_path / "cargoproj"
    (proj / "src").mkdir(parents=True)
    (proj / "Cargo.toml").write_text(
        f'[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nprivcrate = {{ git = "{url}" }}\n'
    )
    (proj / "src" / "main.rs").write_text("fn main() {}\n")
    return proj


@pytest.mark.parametrize("cli", [False, True], ids=["libgit2", "git-cli"])
def test_real_cargo_git_dependency(git_server: GitServer, env, tmp_path: Path, cli: bool) -> None:
    cargo = tool("cargo")
    if not cargo:
        pytest.skip("cargo not installed")
    url = git_server.url("private.git")
    proj = _cargo_project(tmp_path, url)
    real_home = os.environ.get("HOME") or os.path.expanduser("~")
    env = {**env, "CARGO_HOME": str(tmp_path / "cargo-home"), "CARGO_NET_RETRY": "0",
           "RUSTUP_HOME": os.environ.get("RUSTUP_HOME") or os.path.join(real_home, ".rustup"),
           "CARGO_NET_GIT_FETCH_WITH_CLI": "true" if cli else "false"}
    r = guard_annotate([cargo, "generate-lockfile"], env, proj)
    assert r.returncode != 0
    assert_one(r, b"cargo could not fetch " + url.encode(), b'[patch."' + url.encode() + b'"]')
    record(f"cargo-git-private-{'cli' if cli else 'libgit2'}", r.stderr,
           f"real cargo generate-lockfile, git dependency http://127.0.0.1:PORT/private.git, "
           f"CARGO_NET_GIT_FETCH_WITH_CLI={'true' if cli else 'false'}",
           "cargo-git-credential", git_server.port, tmp_path)


def test_real_yarn_git_dependency(git_server: GitServer, env, tmp_path: Path) -> None:
    yarn = tool("yarn")
    if not yarn:
        pytest.skip("yarn not installed")
    proj = tmp_path / "yarnproj"
    proj.mkdir()
    (proj / "package.json").write_text('{"name": "x", "version": "1.0.0", "license": "MIT"}')
    url = git_server.url("private.git")
    r = guard_annotate([yarn, "add", "--non-interactive", f"git+{url}"], env, proj)
    assert r.returncode != 0
    assert_one(r, b"yarn could not fetch " + url.encode(), b"yarn add file:")
    record("yarn-git-private", r.stderr, "real yarn (classic) add git+http://127.0.0.1:PORT/private.git",
           "yarn-git-credential", git_server.port, tmp_path)


def test_real_uv_git_dependency(git_server: GitServer, env, tmp_path: Path) -> None:
    uv = tool("uv")
    if not uv:
        pytest.skip("uv not installed")
    url = git_server.url("private.git")
    env = {**env, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    r = guard_annotate([uv, "pip", "install", "--python", sys.executable, "--target", str(tmp_path / "site"),
                        f"privpkg @ git+{url}"], env, tmp_path)
    assert r.returncode != 0
    assert_one(r, b"uv could not fetch " + url.encode(), b"[tool.uv.sources]")
    record("uv-git-private", r.stderr, "real uv pip install 'privpkg @ git+http://127.0.0.1:PORT/private.git'",
           "uv-git-credential", git_server.port, tmp_path)


def test_real_poetry_git_dependency(git_server: GitServer, env, tmp_path: Path) -> None:
    poetry = tool("poetry")
    if not poetry:
        pytest.skip("poetry not installed")
    url = git_server.url("private.git")
    proj = tmp_path / "poetryproj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text(
        '[tool.poetry]\nname = "x"\nversion = "0.1.0"\ndescription = ""\nauthors = []\npackage-mode = false\n\n'
        f'[tool.poetry.dependencies]\npython = "^3.11"\nprivpkg = {{ git = "{url}" }}\n'
    )
    env = {**env, "POETRY_CACHE_DIR": str(tmp_path / "poetry-cache"), "POETRY_VIRTUALENVS_CREATE": "false"}
    r = guard_annotate([poetry, "lock", "--no-interaction"], env, proj)
    assert r.returncode != 0
    assert_one(r, b"poetry could not clone " + url.encode(), b"poetry add <path of the private copy>")
    record("poetry-git-private", r.stderr, "real poetry lock, git dependency http://127.0.0.1:PORT/private.git",
           "poetry-git-credential", git_server.port, tmp_path)


def test_real_go_git_dependency(git_server: GitServer, env, tmp_path: Path) -> None:
    go = tool("go")
    if not go:
        pytest.skip("go not installed")
    proj = tmp_path / "goproj"
    proj.mkdir()
    (proj / "go.mod").write_text("module example.com/x\n\ngo 1.20\n")
    # A module path cannot carry a port: name it example.test/… and let git rewrite the URL.
    mod = "example.test/private.git"
    for scheme in ("https://", "http://", "git://", "ssh://git@", "git+ssh://git@"):
        subprocess.run(["git", "config", "--global", "--add", f"url.{git_server.url('')}.insteadOf",
                        f"{scheme}example.test/"], env=env, check=True)
    env = {**env, "GOPATH": str(tmp_path / "gopath"), "GOMODCACHE": str(tmp_path / "gomod"), "GOFLAGS": "-mod=mod",
           "GOPROXY": "direct", "GOSUMDB": "off", "GOPRIVATE": "example.test", "GOTOOLCHAIN": "local"}
    r = guard_annotate([go, "get", mod], env, proj)
    assert r.returncode != 0
    assert_one(r, b"go could not fetch example.test/private.git", b"go mod edit -replace example.test/private.git=<path of the copy>")
    record("go-git-private", r.stderr, f"real go get {mod}", "go-git-credential", git_server.port, tmp_path)
