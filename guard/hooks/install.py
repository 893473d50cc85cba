"""``guard install HOST`` / ``guard uninstall HOST``: guard's hooks in a host's settings.

Each host gets two hooks: one before its shell tool runs (guard refuses there) and one after
(guard's annotation rules explain a failure they recognise, such as git's credential prompt).
Install merges guard's entries into the host's settings file and keeps everything else in it
(the user's own hooks and settings, key order); installing again replaces guard's entries rather
than adding more. Uninstall removes guard's entries, and the containers that only they filled,
and nothing else. ``--print`` shows the entries and the file without writing.

What install writes and what it could not do is said line by line, for each host as it really
behaves (checked against each host's own code at the versions tests/clients pins):

- No host setting makes a failing hook block (Claude Code has no ``onFailure``); with
  ``--fail-closed`` (or ``GUARD_FAIL=closed``) the installed pre-tool command is a small ``sh``
  program that answers the host's refusal itself when guard is missing, fails or is too slow.
- Codex runs a hook it has not trusted never, and says nothing: install records the trust the
  way Codex does (Codex's own app server: ``hooks/list`` then ``config/value/write`` of
  ``hooks.state.KEY.trusted_hash``), or exits non-zero saying the hooks are not active.
- Copilot CLI loads ``$COPILOT_HOME/hooks/*.json`` (default ``~/.copilot/hooks``) with no trust
  step; a repository's ``.github/hooks`` only in a folder it trusts.
- Nothing is ever written inside the shared tree (``GUARD_TREE``): a file there would be in every
  agent's listing and in the shared history.

guard's entries are recognised by their command: the guard launcher, ``hook``, the host name.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from typing import Any

from guard.record import dataclass

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
TIMEOUT_SECONDS = 10
FAIL_CLOSED_SECONDS = 8  # the fail-closed wrapper's limit for guard: it answers before the host gives up
PLUGIN_MARKER = "guard-opencode-plugin"
# hosts that block the command when a pre-tool hook cannot run or exits non-zero (tested with the
# real clients: Gemini CLI 0.61, Copilot CLI 1.0); Claude Code 2.1 and Codex 0.171 run it
HOST_REFUSES_ON_FAILURE = {"gemini", "copilot"}
WRAPPER_MARK = "guard could not check this command"


@dataclass(frozen=True)
class Spec:
    """Where a host keeps its hooks and what guard's entries there look like.

    ``kind`` is ``"merge"`` (a JSON settings file shared with the user: ``events`` are the keys
    under ``"hooks"`` with guard's item for each) or ``"file"`` (a file of guard's own).
    ``events`` lists (event, entry builder, is the pre-tool one).
    """

    host: str
    kind: str
    user: str | None  # path under $HOME, None when the host has no user-level file
    project: str | None  # path under the project folder
    events: tuple[tuple[str, Callable[[str], dict[str, Any]], bool], ...] = ()
    top: tuple[tuple[str, Any], ...] = ()  # keys the file must have at its top level
    user_env: tuple[str, str] = ("", "")  # (variable, path under it) that moves the user-level file
    note: str = ""
    shell: str = ""  # the shell placement, or why the host has none

    @property
    def event(self) -> str:
        return self.events[0][0] if self.events else ""


def _matcher(tool: str, cmd: str, **extra: Any) -> dict[str, Any]:
    return {"matcher": tool, "hooks": [{"type": "command", "command": cmd, "timeout": TIMEOUT_SECONDS, **extra}]}


def _claude(cmd: str) -> dict[str, Any]:
    return _matcher("Bash", cmd)


def _codex(cmd: str) -> dict[str, Any]:
    return _matcher("Bash", cmd, statusMessage="guard: checking the command")


def _codex_after(cmd: str) -> dict[str, Any]:
    return _matcher("Bash", cmd)


def _gemini(cmd: str) -> dict[str, Any]:
    return {"matcher": "run_shell_command", "hooks": [{"name": "guard", "type": "command", "command": cmd,
                                                       "timeout": TIMEOUT_SECONDS * 1000,
                                                       "description": "guard: refuse git in the shared tree"}]}


def _gemini_after(cmd: str) -> dict[str, Any]:
    return {"matcher": "run_shell_command", "hooks": [{"name": "guard-explain", "type": "command", "command": cmd,
                                                       "timeout": TIMEOUT_SECONDS * 1000,
                                                       "description": "guard: explain a failure it recognises"}]}


def _cursor(cmd: str) -> dict[str, Any]:
    return {"command": cmd, "timeout": TIMEOUT_SECONDS, "failClosed": True}


def _copilot_item(cmd: str) -> dict[str, Any]:
    return {"type": "command", "bash": cmd, "timeoutSec": TIMEOUT_SECONDS}


def _copilot(pre: str, post: str | None = None) -> dict[str, Any]:
    hooks: dict[str, Any] = {"preToolUse": [_copilot_item(pre)]}
    if post:
        hooks["postToolUse"] = [_copilot_item(post)]
        hooks["postToolUseFailure"] = [_copilot_item(post)]
    return {"version": 1, "hooks": hooks}


SPECS: dict[str, Spec] = {
    "claude": Spec("claude", "merge", ".claude/settings.json", ".claude/settings.json",
                   (("PreToolUse", _claude, True), ("PostToolUse", _claude, False),
                    ("PostToolUseFailure", _claude, False)),
                   user_env=("CLAUDE_CONFIG_DIR", "settings.json"),
                   note=f"timeout {TIMEOUT_SECONDS} s",
                   shell="also possible: CLAUDE_CODE_SHELL={bin}/guard-bash in the agent's environment (Claude "
                         "Code takes a shell only when its path contains bash or zsh)"),
    "codex": Spec("codex", "merge", ".codex/hooks.json", ".codex/hooks.json",
                  (("PreToolUse", _codex, True), ("PostToolUse", _codex_after, False)),
                  user_env=("CODEX_HOME", "hooks.json"), note=f"timeout {TIMEOUT_SECONDS} s",
                  shell="no shell placement: Codex runs the login shell of the password database, not $SHELL"),
    "gemini": Spec("gemini", "merge", ".gemini/settings.json", ".gemini/settings.json",
                   (("BeforeTool", _gemini, True), ("AfterTool", _gemini_after, False)),
                   note=f"timeout {TIMEOUT_SECONDS * 1000} ms",
                   shell="also possible: a folder whose bash is guard-shell first on the agent's PATH (Gemini CLI "
                         "runs bash from PATH, not $SHELL)"),
    "cursor": Spec("cursor", "merge", ".cursor/hooks.json", ".cursor/hooks.json",
                   (("beforeShellExecution", _cursor, True),), top=(("version", 1),),
                   note=f"timeout {TIMEOUT_SECONDS} s; failClosed: true (a guard that fails or times out "
                        "blocks the command)"),
    "copilot": Spec("copilot", "file", ".copilot/hooks/guard.json", ".github/hooks/guard.json",
                    user_env=("COPILOT_HOME", "hooks/guard.json"),
                    note=f"preToolUse, postToolUse and postToolUseFailure, timeoutSec {TIMEOUT_SECONDS}; Copilot CLI loads "
                         "$COPILOT_HOME/hooks/*.json with no trust step",
                    shell="no shell placement: Copilot CLI runs /bin/bash by its absolute path"),
    "opencode": Spec("opencode", "file", ".config/opencode/plugin/guard.js", ".opencode/plugin/guard.js",
                     user_env=("XDG_CONFIG_HOME", "opencode/plugin/guard.js"),
                     note="the plugin asks guard hook opencode before every bash tool call and throws its "
                          "refusal, and after it appends guard's explanation; if guard cannot run it lets the "
                          "command through unless GUARD_FAIL=closed",
                     shell="also possible: SHELL={bin}/guard-shell in the agent's environment"),
}


class InstallError(Exception):
    pass


# --------------------------------------------------------------------------- guard's command


def guard_launcher() -> str:
    """The absolute path of the ``guard`` launcher this process runs from, else the one on PATH."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "guard" and os.path.isfile(argv0):
        return os.path.abspath(argv0)
    beside = os.path.join(os.path.dirname(sys.executable), "guard")
    if os.path.isfile(beside):
        return beside
    return shutil.which("guard") or "guard"


def hook_command(host: str, launcher: str | None = None, fail_closed: bool = False) -> str:
    """The command a host runs: ``guard hook HOST``; with ``fail_closed``, wrapped in a small
    ``sh`` program that answers the host's own refusal when guard is missing, exits non-zero,
    or has not answered within FAIL_CLOSED_SECONDS (no host setting does this)."""
    plain = f"{shlex.quote(launcher or guard_launcher())} hook {host}"
    if not fail_closed:
        return plain
    from guard.hooks.protocols import HOSTS, Refusal

    reason = (f"{WRAPPER_MARK} (guard is missing, failed or was too slow), and it is installed fail-closed, "
              "so the command was not run")
    deny = HOSTS[host].deny(Refusal(reason, {})).stdout
    script = (f'o=$(timeout -k 1 {FAIL_CLOSED_SECONDS} "$0" hook {host}) && {{ printf "%s\\n" "$o"; exit 0; }}; '
              f"printf '%s\\n' {shlex.quote(deny)}")
    return f"sh -c {shlex.quote(script)} {shlex.quote(launcher or guard_launcher())}"


def is_guard_command(value: object, host: str) -> bool:
    if not isinstance(value, str):
        return False
    try:
        words = shlex.split(value)
    except ValueError:
        return False
    if len(words) == 4 and words[:2] == ["sh", "-c"] and f'"$0" hook {host})' in words[2]:
        return os.path.basename(words[3]) == "guard"  # the fail-closed form
    return len(words) == 3 and os.path.basename(words[0]) == "guard" and words[1:] == ["hook", host]


# --------------------------------------------------------------------------- merging


def _is_ours(item: object, host: str) -> bool:
    return isinstance(item, dict) and (is_guard_command(item.get("command"), host)
                                       or is_guard_command(item.get("bash"), host))


def remove_entries(settings: dict[str, Any], spec: Spec) -> dict[str, Any]:
    """``settings`` without guard's entries for ``spec.host`` (a new object)."""
    out = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event, _entry, _pre in spec.events:
        if not isinstance(hooks.get(event), list):
            continue
        kept = []
        for item in hooks[event]:
            if _is_ours(item, spec.host):
                continue
            if isinstance(item, dict) and isinstance(item.get("hooks"), list):
                inner = [h for h in item["hooks"] if not _is_ours(h, spec.host)]
                if len(inner) < len(item["hooks"]):
                    if not inner:
                        continue  # a group guard made, holding only guard's hook
                    item = dict(item, hooks=inner)
            kept.append(item)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def add_entry(settings: dict[str, Any], spec: Spec, command: str, after: str | None = None) -> dict[str, Any]:
    """``settings`` with guard's entries: ``command`` before the tool, ``after`` (default the
    same) after it."""
    out = remove_entries(settings, spec)
    for key, value in spec.top:
        out.setdefault(key, value)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError('"hooks" is not an object')
    for event, entry, pre in spec.events:
        items = hooks.setdefault(event, [])
        if not isinstance(items, list):
            raise InstallError(f'"hooks.{event}" is not a list')
        items.append(entry(command if pre else (after or command)))
    return out


# --------------------------------------------------------------------------- files


def tree_roots(env: dict[str, str] | os._Environ[str]) -> list[str]:
    raw = env.get("GUARD_TREE") or "/workspace"
    return [os.path.realpath(r) for r in raw.split(":") if r]


def inside_tree(path: str, env: dict[str, str] | os._Environ[str]) -> str | None:
    """The tree root ``path`` is in, or None."""
    real = os.path.realpath(path)
    for root in tree_roots(env):
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return root
    return None


def target_path(spec: Spec, scope: str, home: str, project: str, env: dict[str, str] | None = None) -> str:
    rel = spec.user if scope == "user" else spec.project
    if rel is None:
        other = "project" if scope == "user" else "user"
        raise InstallError(f"{spec.host} has no {scope}-level hook file; use --scope {other}")
    env = dict(os.environ) if env is None else env
    if scope == "user" and spec.user_env[0] and env.get(spec.user_env[0]):
        path = os.path.join(env[spec.user_env[0]], spec.user_env[1])
    else:
        path = os.path.join(home if scope == "user" else project, rel)
    root = inside_tree(path, env)
    if root is not None:
        raise InstallError(f"{path} is inside the shared tree {root} (GUARD_TREE): guard never writes there "
                           "(every agent would list it and it would join the shared history); "
                           + ("use --scope user" if scope == "project" else "set HOME outside the tree"))
    return path


def read_settings(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise InstallError(f"{path}: {e.strerror}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InstallError(f"{path} is not valid JSON ({e}); not changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; not changed")
    return data


FOLDER_MODE = 0o755  # a folder install creates (whatever the umask)
FILE_MODE = 0o644  # a settings file install creates; an existing one keeps its mode


def _make_folders(folder: str) -> None:
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder.rstrip("/"))
    for f in reversed(missing):
        os.mkdir(f, FOLDER_MODE)
        os.chmod(f, FOLDER_MODE)


def write_text(path: str, text: str) -> None:
    """Replace ``path`` atomically, keeping its permissions. A symbolic link stays one: the file
    it points to is the one rewritten."""
    if os.path.islink(path):
        path = os.path.realpath(path)
    folder = os.path.dirname(path) or "."
    _make_folders(folder)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = FILE_MODE
    tmp = os.path.join(folder, f".{os.path.basename(path)}.guard-{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def dumps(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def plugin_text(launcher: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "opencode.js"), encoding="utf-8") as fh:
        text = fh.read()
    return text.replace('"__GUARD_LAUNCHER__"', json.dumps(launcher))


def file_content(spec: Spec, launcher: str, fail_closed: bool = False) -> str:
    if spec.host == "opencode":
        return plugin_text(launcher)
    return dumps(_copilot(hook_command(spec.host, launcher, fail_closed), hook_command(spec.host, launcher)))


def _file_is_ours(spec: Spec, path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return False
    if spec.host == "opencode":
        return PLUGIN_MARKER in text
    try:
        data = json.loads(text)
        items = [i for event in data["hooks"].values() for i in event]
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return bool(items) and all(_is_ours(i, spec.host) for i in items)


# --------------------------------------------------------------------------- Codex's hook trust


def _codex_program(env: dict[str, str]) -> str | None:
    return env.get("GUARD_CODEX") or shutil.which("codex", path=env.get("PATH"))


def codex_trust(hooks_file: str, cwd: str, env: dict[str, str], timeout: float = 60.0) -> tuple[bool, str]:
    """Record Codex's trust in guard's hooks the way Codex records it: its own app server lists
    the hooks with the hash it will check (``hooks/list``), and the trust goes into its config as
    ``hooks.state."KEY".trusted_hash`` (``config/value/write``). (trusted, what happened)."""

    codex = _codex_program(env)
    if codex is None:
        return False, "codex is not on PATH (or GUARD_CODEX), so its trust could not be recorded"

    def request(rid: int, method: str, params: dict[str, Any]) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def talk(lines: list[str]) -> dict[int, Any]:
        return codex_app_server(codex, lines, cwd, env, timeout)

    def ours(listing: Any) -> list[dict[str, Any]]:
        found = []
        for entry in (listing or {}).get("data", []) if isinstance(listing, dict) else []:
            for h in entry.get("hooks", []):
                if h.get("sourcePath") == hooks_file and is_guard_command(h.get("command"), "codex"):
                    found.append(h)
        return found

    try:
        listed = ours(talk([request(1, "hooks/list", {"cwds": [cwd]})]).get(1))
        if not listed:
            return False, f"Codex ({codex}) does not list guard's hooks from {hooks_file}"
        state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in listed if h.get("trustStatus") != "trusted"}
        if state:
            got = talk([request(2, "config/value/write", {"keyPath": "hooks.state", "value": state,
                                                           "mergeStrategy": "upsert"}),
                        request(3, "hooks/list", {"cwds": [cwd]})])
            listed = ours(got.get(3))
        untrusted = [h["key"] for h in listed if h.get("trustStatus") != "trusted"]
        if untrusted or not listed:
            return False, f"Codex ({codex}) still lists guard's hooks as untrusted: {', '.join(untrusted)}"
        return True, f"trusted in Codex's config ({len(listed)} hooks, hooks.state.<key>.trusted_hash, via {codex} app-server)"
    except (OSError, KeyError, TypeError, ValueError) as e:
        return False, f"Codex ({codex}) could not record the trust: {type(e).__name__}: {e}"


def codex_app_server(codex: str, lines: list[str], cwd: str, env: dict[str, str], timeout: float = 60.0) -> dict[int, Any]:
    """Send JSON-RPC requests to ``codex app-server`` one at a time, after its initialisation;
    the results by request id."""
    import select
    import subprocess
    import time

    proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd, env=env, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    got: dict[int, Any] = {}
    want = {json.loads(line)["id"] for line in lines}
    pending = list(lines)
    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"clientInfo": {"name": "guard", "version": "install"}}}
        proc.stdin.write(json.dumps(init) + "\n" + json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not want <= set(got):
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = proc.stdout.readline()
            if not line:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            rid = msg.get("id")
            if not isinstance(rid, int) or "method" in msg:
                continue
            if rid in want:
                got[rid] = msg.get("result", msg.get("error"))
            if (rid == 0 or rid in want) and pending:
                proc.stdin.write(pending.pop(0) + "\n")
                proc.stdin.flush()
    finally:
        proc.kill()
        proc.wait()
    return got


def codex_hooks_list(codex: str, cwd: str, env: dict[str, str]) -> dict[str, Any] | None:
    got = codex_app_server(codex, [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hooks/list",
                                                "params": {"cwds": [cwd]}})], cwd, env, 30.0).get(1)
    return got if isinstance(got, dict) else None


# --------------------------------------------------------------------------- commands


def install(spec: Spec, path: str, launcher: str, show: bool, fail_closed: bool = False) -> list[str]:
    """Write guard's entries; the lines that say what was done."""
    pre = hook_command(spec.host, launcher, fail_closed)
    post = hook_command(spec.host, launcher)
    if spec.kind == "file":
        text = file_content(spec, launcher, fail_closed)
        if os.path.exists(path) and not _file_is_ours(spec, path):
            raise InstallError(f"{path} exists and is not guard's; not changed")
        if show:
            return [f"# {path}", text.rstrip("\n")]
        write_text(path, text)
        return [f"guard: installed the {spec.host} hooks in {path} ({spec.note})"]
    before = read_settings(path)
    after = add_entry(before, spec, pre, post)
    events = ", ".join(f"hooks.{e}" for e, _, _ in spec.events)
    if show:
        lines = [f"# {path}: {events} gain"]
        for event, entry, is_pre in spec.events:
            lines.append(f"{event}: " + json.dumps(entry(pre if is_pre else post), indent=2))
        return lines
    if after != before:
        write_text(path, dumps(after))
    return [f"guard: installed the {spec.host} hooks in {path} ({events}; {spec.note})"]


def uninstall(spec: Spec, path: str) -> str:
    if spec.kind == "file":
        if not os.path.exists(path):
            return f"guard: no {spec.host} hook in {path}"
        if not _file_is_ours(spec, path):
            raise InstallError(f"{path} is not guard's; not removed")
        os.unlink(path)
        return f"guard: removed {path}"
    before = read_settings(path)
    after = remove_entries(before, spec)
    if after == before:
        return f"guard: no {spec.host} hook in {path}"
    write_text(path, dumps(after))
    return f"guard: removed the {spec.host} hooks from {path}"


def _usage(verb: str) -> str:
    return f"guard: usage: guard {verb} {'|'.join(SPECS)} [--scope user|project] [--project DIR]" + (
        " [--fail-closed] [--untrusted] [--print]" if verb == "install" else "")


def main(verb: str, argv: list[str]) -> int:
    host, scope, show, project, fail_closed, untrusted = None, None, False, None, False, False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(_usage(verb))
            return EXIT_OK
        if a == "--print" and verb == "install":
            show = True
        elif a == "--fail-closed" and verb == "install":
            fail_closed = True
        elif a == "--untrusted" and verb == "install":
            untrusted = True
        elif a == "--scope" and args:
            scope = args.pop(0)
        elif a.startswith("--scope="):
            scope = a.split("=", 1)[1]
        elif a == "--project" and args:
            project = args.pop(0)
        elif a.startswith("--project="):
            project = a.split("=", 1)[1]
        elif host is None and not a.startswith("-"):
            host = a
        else:
            print(_usage(verb), file=sys.stderr)
            return EXIT_USAGE
    if host not in SPECS or scope not in (None, "user", "project"):
        print(_usage(verb), file=sys.stderr)
        return EXIT_USAGE
    env = dict(os.environ)
    fail_closed = fail_closed or env.get("GUARD_FAIL", "").lower() == "closed"
    spec = SPECS[host]
    scope = scope or ("user" if spec.user else "project")
    home = env.get("HOME") or os.path.expanduser("~")
    cwd = os.path.abspath(project or os.getcwd())
    status = EXIT_OK
    try:
        path = target_path(spec, scope, home, cwd, env)
        if verb != "install":
            print(uninstall(spec, path))
            return EXIT_OK
        launcher = guard_launcher()
        lines = install(spec, path, launcher, show, fail_closed)
        if not show:
            if spec.host == "cursor":
                pass  # Cursor's own failClosed is in the entry
            elif fail_closed and spec.host != "opencode":
                lines.append(f"guard: {host}: fail-closed: the pre-tool command refuses by itself when guard is "
                             f"missing, fails, or takes over {FAIL_CLOSED_SECONDS} s ({host} has no such setting)")
            elif spec.host == "opencode":
                lines.append("guard: opencode: fail-closed only with GUARD_FAIL=closed in the agent's environment")
            elif host in HOST_REFUSES_ON_FAILURE:
                lines.append(f"guard: {host}: a guard that is missing or exits non-zero makes {host} refuse the "
                             "command by itself; --fail-closed also answers for a guard that hangs")
            else:
                lines.append(f"guard: {host}: not fail-closed: if guard is missing or fails, {host} runs the "
                             "command (install with --fail-closed to refuse instead)")
            if spec.host == "codex":
                if untrusted:
                    lines.append("guard: codex: NOT ACTIVE until trusted: Codex skips untrusted hooks without a word; "
                                 "trust them in Codex (/hooks) or install again without --untrusted")
                else:
                    ok, said = codex_trust(path, cwd, env)
                    lines.append(f"guard: codex: {said}")
                    if not ok:
                        lines.append("guard: codex: the hooks are written but NOT ACTIVE: Codex skips untrusted "
                                     "hooks without a word")
                        status = EXIT_ERROR
            if spec.shell:
                lines.append(f"guard: {host}: " + spec.shell.replace("{bin}", os.path.dirname(launcher)))
    except InstallError as e:
        print(f"guard: {e}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:
        print(f"guard: {getattr(e, 'filename', '') or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_ERROR
    print("\n".join(lines))
    return status
