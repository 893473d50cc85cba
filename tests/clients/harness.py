"""Driving the published agent clients: where each is installed, how it is pointed at the
scripted model (``tests.clients.model``), and how guard is put in front of it.

Each run gets its own HOME, tree, model server and audit log, so runs are independent and can
go side by side. Versions are pinned in ``versions.json`` (read by ``.ci/install-clients`` too);
clients live in ``.tools/clients/<name>`` or ``$GUARD_CLIENTS_DIR/<name>``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.clients.model import ModelServer, Script

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PINS: dict[str, dict[str, str]] = json.loads((HERE / "versions.json").read_text())
CLIENTS_DIR = Path(os.environ.get("GUARD_CLIENTS_DIR") or REPO / ".tools" / "clients")
BIN = Path(sys.executable).parent
PROMPT = "Run the command."
RUN_TIMEOUT = 90  # seconds a client gets for one two-turn conversation


def installed(name: str) -> tuple[Path | None, str]:
    """The client's launcher and its installed version, or (None, why not)."""
    pin = PINS[name]
    prefix = CLIENTS_DIR / name
    launcher = prefix / "node_modules" / ".bin" / pin["bin"]
    if not launcher.exists():
        return None, f"{pin['package']} is not installed in {prefix} (run .ci/install-clients)"
    try:
        version = json.loads((prefix / "node_modules" / pin["package"] / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        version = "?"
    if shutil.which("node") is None:
        return None, "node is not on PATH"
    return launcher, version


@dataclass
class Run:
    """One conversation: what the model saw and what guard and git left behind."""

    client: str
    placement: str
    command: str
    returncode: int
    stdout: str
    stderr: str
    script: Script
    home: Path
    tree: Path
    audit: list[dict[str, object]]
    traces: list[dict[str, object]]
    seconds: float

    @property
    def result(self) -> str | None:
        return self.script.result

    @property
    def seen(self) -> str:
        """Everything the model was sent with the tool result (a host may put a hook's context
        beside the result rather than in it)."""
        return json.dumps(self.script.followup, ensure_ascii=False) if self.script.followup else ""

    def git_commands(self) -> list[list[str]]:
        """Every git started during the run, by its argv (from GIT_TRACE2 events)."""
        return [list(t.get("argv") or []) for t in self.traces if t.get("event") == "start"]

    def explain(self) -> str:
        reqs = "\n".join(f"  {p}" for p, _ in self.script.requests)
        return (f"{self.client}/{self.placement} rc={self.returncode} in {self.seconds:.1f}s\n"
                f"tool called: {self.script.called} {self.script.call_arguments}\n"
                f"result: {self.result!r}\nrequests:\n{reqs}\n"
                f"stdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-3000:]}\naudit: {self.audit}")


@dataclass
class Client:
    name: str  # key in versions.json
    audit_name: str  # "client" in guard's audit lines
    host: str  # guard install HOST / guard hook HOST
    argv: Callable[[Path], list[str]]
    env: Callable[[str, Path], dict[str, str]]  # (model url, home) -> variables
    prepare: Callable[[str, Path], None] = lambda url, home: None  # files the client needs in HOME
    shell: Callable[[Path], dict[str, str]] | None = None  # the shell placement's variables
    normalise: tuple[tuple[str, str], ...] = ()  # per-run ids in a tool result
    session_in_shell: bool = True  # the host tells its commands its session id
    extra: dict[str, str] = field(default_factory=dict)


def _launcher(name: str) -> Path:
    got, why = installed(name)
    if got is None:
        raise RuntimeError(why)
    return got


def guard_bash() -> Path:
    """guard-shell under a name Claude Code accepts as a shell (it must contain bash or zsh)."""
    path = BIN / "guard-bash"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: reinstall guard (pip install -e .)")
    return path


def bash_dir(home: Path) -> Path:
    """A folder whose ``bash`` is guard-shell, for clients that run ``bash`` from PATH."""
    d = home / ".guard-shell-bin"
    d.mkdir(exist_ok=True)
    link = d / "bash"
    if not link.exists():
        link.symlink_to(BIN / "guard-shell")
    return d


def _codex_config(url: str, home: Path) -> None:
    d = home / ".codex"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "scripted"\ncheck_for_update_on_startup = false\n\n'
        "[model_providers.scripted]\n"
        f'name = "scripted"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
        'env_key = "SCRIPTED_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n')


def _gemini_settings(url: str, home: Path) -> None:
    d = home / ".gemini"
    d.mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "privacy": {"usageStatisticsEnabled": False}}
    (d / "settings.json").write_text(json.dumps(settings))


def _opencode_config(url: str) -> str:
    return json.dumps({
        "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "scripted",
                                  "options": {"baseURL": f"{url}/v1", "apiKey": "sk-test"},
                                  "models": {"m": {"name": "m", "tool_call": True}}}},
        "model": "scripted/m", "permission": {"bash": "allow"}, "autoupdate": False, "share": "disabled"})


CLIENTS: dict[str, Client] = {
    "claude-code": Client(
        "claude-code", "claude-code", "claude",
        argv=lambda home: [str(_launcher("claude-code")), "-p", PROMPT, "--dangerously-skip-permissions"],
        env=lambda url, home: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-test", "IS_SANDBOX": "1",
                               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"},
        shell=lambda home: {"CLAUDE_CODE_SHELL": str(guard_bash())},
    ),
    "codex": Client(
        "codex", "codex", "codex",
        argv=lambda home: [str(_launcher("codex")), "exec", "--skip-git-repo-check",
                           "--dangerously-bypass-approvals-and-sandbox", PROMPT],
        env=lambda url, home: {"SCRIPTED_API_KEY": "sk-test", "CODEX_HOME": str(home / ".codex")},
        prepare=_codex_config,
        normalise=((r"Chunk ID: \w+", "Chunk ID: X"), (r"Wall time: [\d.]+ seconds", "Wall time: X"),
                   (r"Original token count: \d+", "Original token count: X")),
    ),
    "gemini": Client(
        "gemini", "gemini-cli", "gemini",
        argv=lambda home: [str(_launcher("gemini")), "-p", PROMPT, "--yolo", "--skip-trust", "-m", "gemini-2.5-flash"],
        env=lambda url, home: {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "sk-test"},
        prepare=_gemini_settings,
        shell=lambda home: {"PATH": f"{bash_dir(home)}:{os.environ['PATH']}"},
        normalise=((r"Process Group PGID: \d+", "Process Group PGID: X"),),
        session_in_shell=False,
    ),
    "opencode": Client(
        "opencode", "opencode", "opencode",
        argv=lambda home: [str(_launcher("opencode")), "run", PROMPT],
        env=lambda url, home: {"OPENCODE_CONFIG_CONTENT": _opencode_config(url), "OPENCODE_DISABLE_AUTOUPDATE": "1",
                               "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                               "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1",
                               "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1"},
        shell=lambda home: {"SHELL": str(BIN / "guard-shell")},
        session_in_shell=False,
    ),
    "copilot": Client(
        "copilot", "copilot-cli", "copilot",
        argv=lambda home: [str(_launcher("copilot")), "-p", PROMPT, "--allow-all-tools"],
        env=lambda url, home: {"COPILOT_PROVIDER_BASE_URL": f"{url}/v1", "COPILOT_PROVIDER_TYPE": "openai",
                               "COPILOT_PROVIDER_API_KEY": "sk-test", "COPILOT_MODEL": "m", "COPILOT_OFFLINE": "1",
                               "COPILOT_AUTO_UPDATE": "false"},
    ),
}


def placements(client: Client) -> list[str]:
    """Every placement guard documents for the client: the hooks, and the shell where the
    client takes one from its environment."""
    return (["shell"] if client.shell else []) + ["hook"]


def base_env(home: Path, tree: Path, traces: Path, shared_cache: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", "USER": "agent",
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CACHE_HOME": str(shared_cache),
        "TMPDIR": str(home / "tmp"),
        # the sandbox as guard expects it: no credential, git never prompts
        "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@example.invalid",
        "GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@example.invalid",
        # every git started records itself; no shell start-up file can take this away
        "GIT_TRACE2_EVENT": str(traces) + "/",
        "GUARD_TREE": str(tree), "GUARD_AUDIT_LOG": str(home / "audit.jsonl"), "GUARD_SERVER": "0",
    }


def make_tree(root: Path) -> Path:
    tree = root / "tree"
    (tree / "app").mkdir(parents=True)
    (tree / "README.md").write_text("shared tree\n")
    (tree / "app" / "main.py").write_text("print('hi')\n")
    return tree


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    out = []
    try:
        text = path.read_text()
    except OSError:
        return []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _traces(folder: Path) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for f in sorted(folder.glob("*")):
        out.extend(_read_jsonl(f))
    return out


def run_client(client: Client, placement: str, command: str, *, shared_cache: Path,
               setup: Callable[[dict[str, str], Path, Path], None] | None = None,
               cwd_in_tree: str = "") -> Run:
    """One two-turn conversation: the model asks for ``command`` in the client's shell tool,
    the client runs it (in the tree) and sends the result back."""
    root = Path(tempfile.mkdtemp(prefix=f"guard-{client.name}-"))
    home = root / "home"
    (home / "tmp").mkdir(parents=True)
    tree = make_tree(root)
    traces = root / "trace2"
    traces.mkdir()
    (home / ".gitconfig").write_text(f"[trace2]\n\teventTarget = {traces}/\n")
    script = Script(command)
    with ModelServer(script) as server:
        env = base_env(home, tree, traces, shared_cache)
        # the client on PATH, as a user has it (guard install codex asks codex to trust its hooks)
        env["PATH"] = f"{CLIENTS_DIR / client.name / 'node_modules' / '.bin'}:{env['PATH']}"
        client.prepare(server.url, home)
        env.update(client.env(server.url, home))
        if placement == "shell" and client.shell:
            env.update(client.shell(home))
        elif placement in ("hook", "hook-closed"):
            closed = ["--fail-closed"] if placement == "hook-closed" else []
            if placement == "hook-closed" and client.name == "opencode":
                env["GUARD_FAIL"] = "closed"  # the plugin reads it where it runs
            # guard as the hosts will run it: through a link in HOME, which a test may break later
            link = home / "bin" / "guard"
            link.parent.mkdir(exist_ok=True)
            link.symlink_to(BIN / "guard")
            install = subprocess.run([str(link), "install", client.host, *closed], env=env, cwd=tree,
                                     capture_output=True, text=True, timeout=60)
            if install.returncode != 0:
                raise RuntimeError(f"guard install {client.host} failed: {install.stdout}{install.stderr}")
        if setup is not None:
            setup(env, home, tree)
        seeded = _seed_plugin_deps(client, home, shared_cache)
        cwd = tree / cwd_in_tree
        start = time.monotonic()
        try:
            p = subprocess.run(client.argv(home), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=RUN_TIMEOUT, start_new_session=True)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = -1, str(e.stdout or ""), f"timed out after {RUN_TIMEOUT} s\n{e.stderr or ''}"
        seconds = time.monotonic() - start
    if not seeded:
        _keep_plugin_deps(client, home, shared_cache)
    run = Run(client.name, placement, command, rc, out, err, script, home, tree,
              _read_jsonl(home / "audit.jsonl"), _traces(traces), seconds)
    if os.environ.get("GUARD_CLIENTS_KEEP") != "1":
        shutil.rmtree(root, ignore_errors=True)
    _report(run, installed(client.name)[1])
    return run


def _report(run: Run, version: str) -> None:
    """With GUARD_CLIENTS_REPORT=FILE, one JSON line per run: the matrix a closing note gives."""
    path = os.environ.get("GUARD_CLIENTS_REPORT")
    if not path:
        return
    refusals = [r for r in run.audit if r.get("kind") == "refusal"]
    line = {"client": run.client, "version": version, "placement": run.placement, "command": run.command,
            "seconds": round(run.seconds, 1), "tool": run.script.called, "result": run.result,
            "explained": "[guard]" in run.seen, "git": [a[1:3] for a in run.git_commands()],
            "audit": [{k: r.get(k) for k in ("client", "session", "command", "rule")} for r in refusals]}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")


# OpenCode installs @opencode-ai/plugin from the npm registry into its config folder whenever that
# folder holds a plugin (guard's): a dozen seconds a run. The first run's install is kept and the
# later runs start with it.
_PLUGIN_DEPS = ("node_modules", "package.json", "package-lock.json", ".gitignore")


def _seed_plugin_deps(client: Client, home: Path, cache: Path) -> bool:
    kept = cache / "opencode-config-deps"
    target = home / ".config" / "opencode"
    if client.name != "opencode" or not (target / "plugin").is_dir() or not (kept / "node_modules").is_dir():
        return False
    for name in _PLUGIN_DEPS:
        src = kept / name
        if src.is_dir():
            shutil.copytree(src, target / name, symlinks=True, dirs_exist_ok=True)
        elif src.exists():
            shutil.copy2(src, target / name)
    return True


def _keep_plugin_deps(client: Client, home: Path, cache: Path) -> None:
    src = home / ".config" / "opencode"
    kept = cache / "opencode-config-deps"
    if client.name != "opencode" or not (src / "node_modules").is_dir() or kept.exists():
        return
    tmp = cache / f".opencode-config-deps.{os.getpid()}.{id(home)}"
    try:
        tmp.mkdir(parents=True)
        for name in _PLUGIN_DEPS:
            if (src / name).is_dir():
                shutil.copytree(src / name, tmp / name, symlinks=True)
            elif (src / name).exists():
                shutil.copy2(src / name, tmp / name)
        tmp.rename(kept)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def normalised(client: Client, run: Run) -> str | None:
    """The tool result without what differs from run to run: the client's ids, the run's folders."""
    text = run.result
    if text is None:
        return None
    text = text.replace(str(run.tree), "<tree>").replace(str(run.home), "<home>")
    for pattern, repl in client.normalise:
        text = re.sub(pattern, repl, text)
    return text
