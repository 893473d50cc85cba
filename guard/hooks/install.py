"""``guard install HOST`` / ``guard uninstall HOST``: guard's hook entry in a host's settings.

Install merges one entry into the host's settings file and keeps everything else in it (the
user's own hooks and settings, key order); installing again replaces guard's entry rather than
adding a second. Uninstall removes guard's entries, and the containers that only they filled,
and nothing else. ``--print`` shows the entry and the file without writing. Where the host
offers fail-closed hooks, the entry asks for it; every timeout is in the host's own unit.

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
PLUGIN_MARKER = "guard-opencode-plugin"


@dataclass(frozen=True)
class Spec:
    """Where a host keeps its hooks and what guard's entry there looks like.

    ``kind`` is ``"merge"`` (a JSON settings file shared with the user: ``event`` is the key
    under ``"hooks"`` and ``entry`` builds guard's item) or ``"file"`` (a file of guard's own).
    """

    host: str
    kind: str
    user: str | None  # path under $HOME, None when the host has no user-level file
    project: str | None  # path under the project folder
    event: str = ""
    entry: Callable[[str], dict[str, Any]] | None = None
    top: tuple[tuple[str, Any], ...] = ()  # keys the file must have at its top level
    note: str = ""


def _claude(cmd: str) -> dict[str, Any]:
    return {"matcher": "Bash", "hooks": [{"type": "command", "command": cmd, "timeout": TIMEOUT_SECONDS,
                                          "onFailure": "block"}]}


def _codex(cmd: str) -> dict[str, Any]:
    return {"matcher": "Bash", "hooks": [{"type": "command", "command": cmd, "timeout": TIMEOUT_SECONDS,
                                          "statusMessage": "guard: checking the command"}]}


def _gemini(cmd: str) -> dict[str, Any]:
    return {"matcher": "run_shell_command", "hooks": [{"name": "guard", "type": "command", "command": cmd,
                                                       "timeout": TIMEOUT_SECONDS * 1000,
                                                       "description": "guard: refuse git in the shared tree"}]}


def _cursor(cmd: str) -> dict[str, Any]:
    return {"command": cmd, "timeout": TIMEOUT_SECONDS, "failClosed": True}


def _copilot(cmd: str) -> dict[str, Any]:
    return {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": cmd,
                                                    "timeoutSec": TIMEOUT_SECONDS}]}}


SPECS: dict[str, Spec] = {
    "claude": Spec("claude", "merge", ".claude/settings.json", ".claude/settings.json", "PreToolUse", _claude,
                   note=f"timeout {TIMEOUT_SECONDS} s; onFailure: block (a guard that fails, cannot start or "
                        "times out blocks the command instead of letting it through)"),
    "codex": Spec("codex", "merge", ".codex/hooks.json", ".codex/hooks.json", "PreToolUse", _codex,
                  note=f"timeout {TIMEOUT_SECONDS} s; Codex has no fail-closed setting for hooks"),
    "gemini": Spec("gemini", "merge", ".gemini/settings.json", ".gemini/settings.json", "BeforeTool", _gemini,
                   note=f"timeout {TIMEOUT_SECONDS * 1000} ms; Gemini CLI has no fail-closed setting for hooks"),
    "cursor": Spec("cursor", "merge", ".cursor/hooks.json", ".cursor/hooks.json", "beforeShellExecution",
                   _cursor, top=(("version", 1),),
                   note=f"timeout {TIMEOUT_SECONDS} s; failClosed: true (a guard that fails or times out "
                        "blocks the command)"),
    "copilot": Spec("copilot", "file", None, ".github/hooks/guard.json", entry=_copilot,
                    note=f"timeoutSec {TIMEOUT_SECONDS}; Copilot CLI loads .github/hooks/*.json of the repository"),
    "opencode": Spec("opencode", "file", ".config/opencode/plugin/guard.js", ".opencode/plugin/guard.js",
                     note="the plugin runs guard hook opencode before every bash tool call and throws its "
                          "refusal; if guard cannot run it lets the command through unless GUARD_FAIL=closed"),
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


def hook_command(host: str, launcher: str | None = None) -> str:
    return f"{shlex.quote(launcher or guard_launcher())} hook {host}"


def is_guard_command(value: object, host: str) -> bool:
    if not isinstance(value, str):
        return False
    try:
        words = shlex.split(value)
    except ValueError:
        return False
    return len(words) == 3 and os.path.basename(words[0]) == "guard" and words[1:] == ["hook", host]


# --------------------------------------------------------------------------- merging


def _is_ours(item: object, host: str) -> bool:
    return isinstance(item, dict) and (is_guard_command(item.get("command"), host)
                                       or is_guard_command(item.get("bash"), host))


def remove_entries(settings: dict[str, Any], spec: Spec) -> dict[str, Any]:
    """``settings`` without guard's entries for ``spec.host`` (a new object)."""
    out = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(spec.event), list):
        return out
    kept = []
    for item in hooks[spec.event]:
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
        hooks[spec.event] = kept
    else:
        del hooks[spec.event]
        if not hooks:
            del out["hooks"]
    return out


def add_entry(settings: dict[str, Any], spec: Spec, command: str) -> dict[str, Any]:
    assert spec.entry is not None
    out = remove_entries(settings, spec)
    for key, value in spec.top:
        out.setdefault(key, value)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError('"hooks" is not an object')
    event = hooks.setdefault(spec.event, [])
    if not isinstance(event, list):
        raise InstallError(f'"hooks.{spec.event}" is not a list')
    event.append(spec.entry(command))
    return out


# --------------------------------------------------------------------------- files


def target_path(spec: Spec, scope: str, home: str, project: str) -> str:
    rel = spec.user if scope == "user" else spec.project
    if rel is None:
        other = "project" if scope == "user" else "user"
        raise InstallError(f"{spec.host} has no {scope}-level hook file; use --scope {other}")
    return os.path.join(home if scope == "user" else project, rel)


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


def write_text(path: str, text: str) -> None:
    """Replace ``path`` atomically, keeping its permissions."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    tmp = os.path.join(folder, f".{os.path.basename(path)}.guard-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
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


def file_content(spec: Spec, launcher: str) -> str:
    if spec.host == "opencode":
        return plugin_text(launcher)
    assert spec.entry is not None
    return dumps(spec.entry(hook_command(spec.host, launcher)))


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
        items = data["hooks"]["preToolUse"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(items) and all(_is_ours(i, spec.host) for i in items)


# --------------------------------------------------------------------------- commands


def install(spec: Spec, path: str, launcher: str, show: bool) -> str:
    command = hook_command(spec.host, launcher)
    if spec.kind == "file":
        text = file_content(spec, launcher)
        if os.path.exists(path) and not _file_is_ours(spec, path):
            raise InstallError(f"{path} exists and is not guard's; not changed")
        if show:
            return f"# {path}\n{text}"
        write_text(path, text)
        return f"guard: installed the {spec.host} hook in {path} ({spec.note})"
    before = read_settings(path)
    after = add_entry(before, spec, command)
    if show:
        assert spec.entry is not None
        return f"# {path}: hooks.{spec.event} gains\n{json.dumps(spec.entry(command), indent=2)}"
    if after != before:
        write_text(path, dumps(after))
    return f"guard: installed the {spec.host} hook in {path} (hooks.{spec.event}; {spec.note})"


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
    return f"guard: removed the {spec.host} hook from {path}"


def _usage(verb: str) -> str:
    return f"guard: usage: guard {verb} {'|'.join(SPECS)} [--scope user|project] [--project DIR]" + (
        " [--print]" if verb == "install" else "")


def main(verb: str, argv: list[str]) -> int:
    host, scope, show, project = None, None, False, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            print(_usage(verb))
            return EXIT_OK
        if a == "--print" and verb == "install":
            show = True
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
    spec = SPECS[host]
    scope = scope or ("user" if spec.user else "project")
    home = os.environ.get("HOME") or os.path.expanduser("~")
    try:
        path = target_path(spec, scope, home, os.path.abspath(project or os.getcwd()))
        out = install(spec, path, guard_launcher(), show) if verb == "install" else uninstall(spec, path)
    except InstallError as e:
        print(f"guard: {e}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:
        print(f"guard: {getattr(e, 'filename', '') or ''}: {e.strerror or e}", file=sys.stderr)
        return EXIT_ERROR
    print(out)
    return EXIT_OK
