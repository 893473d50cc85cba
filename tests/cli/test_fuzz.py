"""A generated fuzz corpus (tests/cli/fuzzgen.py) through ``guard check --jsonl`` under a memory
limit, and a sample of it through ``guard-shell -c`` against bash under a PATH of harmless stubs.

The first must answer every line, in order, with its id: no traceback, no hang, no ``error``
verdict (every line is a valid request). The second must end exactly as bash does (stdout,
stderr, exit status) for every command guard allows; refused ones run nothing.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.cli import fuzzgen
from tests.conftest import guard_bin

SEED = 20261201
LINES = 1000
SAMPLE = 150
PARENT_MEMORY_MIB = 4096  # the whole `guard check` process tree; each worker adds its own budget
# tighter than the defaults so a run stays within minutes on a loaded machine; the defaults are
# measured by bench/check_budget_bench.py
BUDGET = ["--time-budget", "3", "--memory-budget", "512"]


def test_fuzz_corpus_through_the_check_stream(shared: Path) -> None:
    lines = [line for _, line in fuzzgen.fuzz_lines(LINES, SEED, shared)]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (PARENT_MEMORY_MIB << 20, PARENT_MEMORY_MIB << 20))

    start = time.monotonic()
    p = subprocess.run([guard_bin(), "check", "--jsonl", "--tree", "/workspace", "--cwd", "/workspace/app", *BUDGET],
                       input=b"".join(x + b"\n" for x in lines), capture_output=True, timeout=1200, preexec_fn=limit)
    elapsed = time.monotonic() - start
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr[-3000:]
    out = [json.loads(x) for x in p.stdout.split(b"\n")[:-1]]
    assert [a.get("id") for a in out] == list(range(LINES))
    kinds = Counter(a["verdict"] for a in out)
    assert set(kinds) <= {"allow", "refuse"}, [(lines[i][:150], a) for i, a in enumerate(out)
                                               if a["verdict"] not in ("allow", "refuse")][:3]
    stopped = Counter(a["unresolved"][0].split(":")[1].strip()[:40] for a in out
                      if a["unresolved"] and a["unresolved"][0].startswith("analysis stopped"))
    print(f"fuzz stream: {LINES} lines in {elapsed:.1f} s: {dict(kinds)}; stopped by the budget: {dict(stopped)}")


# --------------------------------------------------------------------------- against bash

# Commands whose output depends on the process, the clock or chance, or that act on other
# processes or the machine: left out of the comparison.
UNSTABLE = re.compile(r"\$\$|\bRANDOM|BASHPID|PPID|SECONDS|EPOCH|/proc/|\bkill\b|\bulimit\b|\bexec\b|\btrap\b|"
                      r"\bwait\b|\bsleep\b|\btimes\b|\bjobs\b|\bdisown\b|\bsuspend\b|\benable\b|\bread\b|&\s*$|\{1\.\.|"
                      r"\bwhile\b|\buntil\b|\bselect\b|\bcoproc\b|\bhistory\b|\bfc\b|\bcompgen\b|\bset\b|\bdeclare\b|"
                      r"\btypeset\b|\bexport -p\b|\benv\b|\bprintenv\b|\bulimit\b|\bumask\b|\bcd\b|\bpushd\b|\bsource\b|"
                      r"(^|[^a-z])\.\s|\bcommand -v\b|\btype\b|\bhash\b|\bwhich\b")
STUB = "#!/bin/sh\nprintf '%s' \"${0##*/}\"\nfor a in \"$@\"; do printf ' [%s]' \"$a\"; done\necho\n"


@pytest.fixture(scope="module")
def world():
    """A folder of the test's own, outside the repository, removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="guard-fuzz-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def stub_path(world: Path) -> str:
    """A folder holding a stub for every program on this machine's PATH: each prints its name
    and arguments and does nothing else."""
    d = world / "stubs"
    d.mkdir()
    names: set[str] = set()
    for folder in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
                   str(Path(sys.executable).parent)):
        try:
            names.update(os.listdir(folder))
        except OSError:
            pass
    for name in sorted(names):
        if "/" in name or name.startswith("."):
            continue
        path = d / name
        path.write_text(STUB)
        path.chmod(0o755)
    d.chmod(0o755)
    return str(d)


_QUIET_REDIRECTS = re.compile(r"[0-9&]?>>?\s*/dev/null|[0-9]?>&[0-9-]")


def harmless(cmd: str) -> bool:
    """Every program is a stub; what is left that could touch the machine is bash's own
    redirections (and ``cd`` before them): only those to /dev/null or between descriptors stay."""
    return ">" not in _QUIET_REDIRECTS.sub("", cmd) and not UNSTABLE.search(cmd)


def sample(shared: Path) -> list[str]:
    out = []
    for _, line in fuzzgen.fuzz_lines(LINES, SEED, shared):
        cmd = json.loads(line.decode("utf-8", "replace"))["command"].replace("\0", "")
        if len(cmd) < 4000 and harmless(cmd):
            out.append(cmd)
    return out[:SAMPLE]


def test_fuzz_sample_through_guard_shell_against_bash(shared: Path, stub_path: str, world: Path) -> None:
    guard_shell = str(Path(guard_bin("guard-shell")).resolve())
    scratch = world / "scratch"
    home = world / "home"
    for d in (scratch, home):
        d.mkdir()
        d.chmod(0o777)
    env = {"PATH": stub_path, "HOME": str(home), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "GUARD_SERVER": "0",
           "GUARD_TREE": "/workspace", "GUARD_AUDIT_LOG": str(home / "audit.jsonl"), "TMPDIR": str(scratch)}
    counts: Counter[str] = Counter()
    differences = []
    for cmd in sample(shared):
        runs = []
        for argv in (["/bin/bash", "-c", cmd], [guard_shell, "-c", cmd]):
            for f in scratch.iterdir():
                shutil.rmtree(f, ignore_errors=True) if f.is_dir() else f.unlink()
            try:
                runs.append(subprocess.run(argv, capture_output=True, cwd=scratch, env=env, timeout=30,
                                           stdin=subprocess.DEVNULL))
            except subprocess.TimeoutExpired:
                runs.append(None)
        bash, guarded = runs
        if bash is None:
            counts["bash itself hangs"] += 1
            continue
        assert guarded is not None, f"guard-shell hangs where bash does not: {cmd[:300]!r}"
        assert b"Traceback" not in guarded.stderr and b"internal error" not in guarded.stderr, (cmd[:300],
                                                                                                 guarded.stderr)
        if guarded.returncode == 126 and guarded.stdout == b"" and bash.returncode != 126:
            counts["refused"] += 1
            continue
        if (guarded.stdout, guarded.stderr, guarded.returncode) != (bash.stdout, bash.stderr, bash.returncode):
            differences.append((cmd[:200], bash, guarded))
        counts["same as bash" if not differences or differences[-1][0] != cmd[:200] else "different"] += 1
    print(f"fuzz sample: {dict(counts)}")
    assert not differences, differences[:3]
    assert counts["same as bash"] > SAMPLE // 2
