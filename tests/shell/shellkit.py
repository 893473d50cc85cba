"""Helpers shared by the guard-shell tests: which guard-shell to run, environments, fixtures."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "fixtures" / "shell"
REAL_SHELL = os.environ.get("GUARD_REAL_SHELL") or "/bin/bash"


def real_guard_shell() -> str:
    """The installed console script (next to this Python), else the one on PATH."""
    cand = Path(sys.executable).parent / "guard-shell"
    if cand.exists():
        return str(cand)
    found = shutil.which("guard-shell")
    if not found:
        raise RuntimeError("guard-shell is not installed")
    return found


def write_fake_guard_shell(bindir: Path) -> str:
    """A ``guard-shell`` that uses the test double engine (tests/shell/fake_engine.py)."""
    bindir.mkdir(parents=True, exist_ok=True)
    path = bindir / "guard-shell"
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import fake_engine\n"
        "fake_engine.install()\n"
        "from guard.shell.main import main\n"
        "main()\n"
    )
    path.chmod(0o755)
    return str(path)


_ENGINE_READY: bool | None = None


def engine_ready() -> bool:
    """True once the real engine refuses ``git push`` inside a tree."""
    global _ENGINE_READY
    if _ENGINE_READY is None:
        try:
            from guard.context import Context
            from guard.engine import analyze

            v = analyze("git push", Context.from_environ(cwd="/workspace/app", trees=("/workspace",)))
            _ENGINE_READY = getattr(v, "verdict", None) == "refuse"
        except Exception:  # noqa: BLE001
            _ENGINE_READY = False
    return _ENGINE_READY


def base_env(home: Path, tree: Path, **extra: str) -> dict[str, str]:
    """A small, fixed environment: the same for bash and guard-shell runs."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "GUARD_TREE": str(tree),
        "GUARD_AUDIT_LOG": str(home / "audit.jsonl"),
    }
    env.update(extra)
    return env


def load_differential() -> list[dict]:
    """The differential cases as ``{"argv": [...], "stdin"?: str, "script"?: str, "line": n}``."""
    cases = []
    path = FIXTURES / "differential.txt"
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        item = json.loads(line)
        case = {"argv": ["-c", item]} if isinstance(item, str) else dict(item)
        case["line"] = n
        cases.append(case)
    return cases
