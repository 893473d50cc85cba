"""A loopback git smart-HTTP server for the annotator's real-program tests.

``git http-backend`` (CGI) behind a small ``http.server`` on 127.0.0.1, on a random port:
``private.git`` demands HTTP Basic auth (user ``agent``, password ``secret``) and answers a wrong
one as GitHub does (401 with "Invalid username or password."), ``gitlab-private.git`` as GitLab
does (401 with "HTTP Basic: Access denied"), ``public.git`` is served
anonymously. Used as an HTTP proxy for ``http://api.github.localhost/`` (where gh sends the API
calls of ``GH_HOST=github.localhost``), it answers every API call 401 the way GitHub's API does. Also runnable by hand: ``python test_annotate_gitserver.py DIR`` serves until
interrupted and prints its port.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

USER, PASSWORD = "agent", "secret"
PRIVATE = {"private", "gitlab-private"}
GITLAB_STYLE = {"gitlab-private"}  # a wrong credential is answered in GitLab's words
GITHUB_API = "http://api.github.localhost/"  # by name without .git: http-backend also finds private.git as /private


def git_backend() -> str | None:
    git = shutil.which("git")
    if not git:
        return None
    exec_path = subprocess.run([git, "--exec-path"], capture_output=True, text=True).stdout.strip()
    backend = os.path.join(exec_path, "git-http-backend")
    return backend if os.access(backend, os.X_OK) else None


class _Handler(BaseHTTPRequestHandler):
    root: Path
    backend: str

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def _authorized(self) -> bool:
        want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        return self.headers.get("Authorization") == want

    def _reply(self, status: int, body: bytes, ctype: str, *extra: tuple[str, str]) -> None:
        self.send_response(status)
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _github_api(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        msg = "Bad credentials" if self.headers.get("Authorization") else "Requires authentication"
        body = json.dumps({"message": msg, "documentation_url": "https://docs.github.com/rest", "status": "401"}).encode()
        self._reply(401, body, "application/json; charset=utf-8")

    def _serve(self) -> None:
        if self.path.startswith(GITHUB_API):
            self._github_api()
            return
        path, _, query = self.path.partition("?")
        repo = path.lstrip("/").split("/", 1)[0].removesuffix(".git")
        if repo in PRIVATE and not self._authorized():
            denied = b"HTTP Basic: Access denied\n" if repo in GITLAB_STYLE else b"Invalid username or password.\n"
            body = denied if self.headers.get("Authorization") else b""
            self._reply(401, body, "text/plain", ("WWW-Authenticate", 'Basic realm="private"'))
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if repo in PRIVATE:
            env["REMOTE_USER"] = USER
        proc = subprocess.run([self.backend], input=body, env=env, capture_output=True)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve


def make_repo(root: Path, name: str, files: dict[str, str]) -> None:
    work = root / (name + ".work")
    work.mkdir(parents=True)
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / name)], env=env, check=True)
    shutil.rmtree(work)


PYPROJECT = """[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "privpkg"
version = "0.1"
"""


def populate(root: Path) -> None:
    pkg = {"pyproject.toml": PYPROJECT, "privpkg/__init__.py": ""}
    make_repo(root, "public.git", {"README": "public\n", **pkg})
    make_repo(root, "private.git", {"README": "private\n", **pkg})
    make_repo(root, "gitlab-private.git", {"README": "private\n"})


class GitServer:
    def __init__(self, root: Path) -> None:
        backend = git_backend()
        if backend is None:
            raise RuntimeError("git http-backend not found")
        handler = type("H", (_Handler,), {"root": root, "backend": backend})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.root = root
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/{repo}"

    def __enter__(self) -> GitServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture(scope="session", name="git_server")
def git_server_fixture(tmp_path_factory: pytest.TempPathFactory):
    if git_backend() is None:
        pytest.skip("git http-backend not available")
    root = tmp_path_factory.mktemp("gitsrv")
    populate(root)
    with GitServer(root) as srv:
        yield srv


def test_server_serves_public_and_refuses_private_without_auth(git_server: GitServer, tmp_path: Path) -> None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    ok = subprocess.run(["git", "ls-remote", git_server.url("public.git")], env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and "refs/heads/main" in ok.stdout
    bad = subprocess.run(["git", "ls-remote", git_server.url("private.git")], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "terminal prompts disabled" in bad.stderr
    bare = subprocess.run(["git", "ls-remote", git_server.url("private")], env=env, capture_output=True, text=True)
    assert bare.returncode != 0 and "terminal prompts disabled" in bare.stderr
    auth = git_server.url("private.git").replace("http://", f"http://{USER}:{PASSWORD}@")
    good = subprocess.run(["git", "ls-remote", auth], env=env, capture_output=True, text=True)
    assert good.returncode == 0 and "refs/heads/main" in good.stdout


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    if not (target / "public.git").exists():
        populate(target)
    with GitServer(target) as srv:
        print(srv.port, flush=True)
        threading.Event().wait()
