"""Last-known-good under load: a rule file in a GUARD_RULES folder is corrupted in several ways
while 24 `guard check` processes run in a loop. Every answer must come from a good rule set
(the custom rule keeps refusing), no process may crash or report a configuration error, and each
process says at most once that it is using the last good rule set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

LFS = """\
rules:
  - id: lfs-push
    category: publish
    tool: git_push
    message: "Refused: {what}. Push with {tool_call}."
    match: {program: git, subcommand: lfs, action: push}
    examples:
      refuse: ["git lfs push origin feature"]
      allow: ["git lfs ls-files"]
"""

CORRUPTIONS = [
    LFS.replace("match: {program: git,", "match: {program: git"),  # YAML syntax
    LFS.replace("category: publish", "category: pubish"),  # schema: unknown category
    LFS.replace("    tool: git_push\n", "\ttool: git_push\n"),  # a tab
    LFS[: LFS.index("action: push") + 8],  # a truncated write, cut inside the flow mapping
    LFS + "  - id: lfs-push\n    enabled: maybe\n",  # duplicate id, wrong type
]

CASES = [
    ("git lfs push origin x", 1, "lfs-push"),
    ("git status", 1, "git-read-probe"),
    ("ls -la", 0, None),
]

WORKERS = 20


def replace_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(".tmp-" + path.name)
    tmp.write_text(text)
    os.replace(tmp, path)


def test_fleet_keeps_answering_while_a_rule_file_is_corrupted(tmp_path):
    rules = tmp_path / "rules.d"
    rules.mkdir()
    f = rules / "lfs.yaml"
    f.write_text(LFS)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "GUARD_RULES": str(rules)}
    for k in ("GUARD_CONFIG", "GUARD_TREE"):
        env.pop(k, None)

    def check(command: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "guard.cli.main", "check", "--json", "--cwd", "/workspace/app",
                "--tree", "/workspace", "--", command]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

    first = check("git lfs push origin x")  # the good set is loaded once before the fleet starts
    assert first.returncode == 1 and json.loads(first.stdout)["rule"] == "lfs-push"

    results: list[tuple[str, int, str | None, subprocess.CompletedProcess[str], int]] = []
    lock = threading.Lock()
    stop = threading.Event()
    phase = [0]  # 0: good file; k: CORRUPTIONS[k - 1] in place

    def worker(n: int) -> None:
        i = n
        while not stop.is_set():
            command, code, rule = CASES[i % len(CASES)]
            i += 1
            started = phase[0]
            out = check(command)
            with lock:
                results.append((command, code, rule, out, started if phase[0] == started else -1))

    def settled(k: int) -> int:
        with lock:
            return sum(1 for r in results if r[4] == k)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
    for t in threads:
        t.start()
    try:
        for k, bad in enumerate([None, *CORRUPTIONS]):
            if bad is not None:
                replace_atomically(f, bad)
                phase[0] = k
            deadline = time.monotonic() + 120
            while settled(k) < WORKERS // 4 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=120)

    for k in range(len(CORRUPTIONS) + 1):
        assert sum(1 for r in results if r[4] == k) >= WORKERS // 4, k  # every state was seen by the fleet
    warned = 0
    for command, code, rule, out, _ in results:
        assert "Traceback" not in out.stderr, out.stderr
        assert out.returncode == code, (command, out.returncode, out.stdout, out.stderr)
        v = json.loads(out.stdout)
        assert v["rule"] == rule, (command, v["rule"], out.stderr)
        assert out.stderr.count("guard: rules:") <= 1, out.stderr
        if "using the last good rule set" in out.stderr:
            warned += 1
            assert out.stderr.startswith(f"guard: rules: {f}:")
    assert warned > 0

    # while the file is still broken, lint says what to fix
    lint = subprocess.run([sys.executable, "-m", "guard.cli.main", "rules", "lint"], env=env, capture_output=True, text=True)
    assert lint.returncode == 1
    assert f"{f}:11:14: rules[1].enabled: expected true or false" in lint.stdout
    assert f"{f}:10:9: rules[1].id: duplicate id 'lfs-push'" in lint.stdout
