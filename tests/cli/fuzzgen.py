"""Generated hostile input for ``guard check --jsonl`` and ``guard-shell -c``: mutated agent
commands (spliced quotes, unbalanced heredocs, NUL bytes, invalid UTF-8, megabyte lines, huge
pipelines, deep nesting) and lines that attack the stream itself.

Everything is derived from a seed, so a failure names the seed and line that reproduce it.
The base commands come from the shared corpus when it is there, else from a small list.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

FALLBACK = [
    "ls -la", "git status", "cd src && make test", "python3 -m pytest -q tests/", "grep -rn 'TODO' .",
    "cat <<'EOF' > /tmp/x.py\nprint(1)\nEOF", "for f in *.py; do echo $f; done", "echo \"$(date)\" | tee log",
    "git push origin main", "find . -name '*.pyc' -delete", "x=$(printf '%s' git); $x push",
]


def base_commands(shared: Path | None, limit: int = 5000, seed: int = 0) -> list[str]:
    """Up to ``limit`` commands from the shared corpus (a fixed sample), else the fallback list."""
    path = shared / "corpus" / "agent-commands.jsonl" if shared else None
    if path is None or not path.exists():
        return list(FALLBACK)
    with path.open(encoding="utf-8") as fh:
        commands = [json.loads(x)["command"] for x in fh if x.strip()]
    rng = random.Random(seed)
    return rng.sample(commands, min(limit, len(commands)))


# --------------------------------------------------------------------------- command mutations


def splice_quotes(rng: random.Random, cmd: str) -> str:
    for _ in range(rng.randint(1, 4)):
        i = rng.randint(0, len(cmd))
        cmd = cmd[:i] + rng.choice(["'", '"', "`", "$(", "${", "\\", ")", "}"]) + cmd[i:]
    return cmd


def unbalanced_heredoc(rng: random.Random, cmd: str) -> str:
    return rng.choice([f"cat <<EOF\n{cmd}\n", f"{cmd} <<'X'\nbody\n", f"bash <<EOF\n{cmd}\nEO", f"cat <<-\n{cmd}"])


def nul_bytes(rng: random.Random, cmd: str) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(cmd))
        cmd = cmd[:i] + "\0" + cmd[i:]
    return cmd


def megabyte_line(rng: random.Random, cmd: str) -> str:
    unit = (cmd.replace("\n", " ") or "x") + rng.choice(["; ", " && ", " ", " | "])
    return (unit * (1_000_000 // len(unit) + 1))[:1_000_000]


def huge_pipeline(rng: random.Random, cmd: str) -> str:
    stage = cmd.split("\n")[0][:40] or "cat"
    return " | ".join([stage] * rng.choice([1000, 10_000, 30_000]))


def deep_nesting(rng: random.Random, cmd: str) -> str:
    n = rng.choice([100, 1000, 5000])
    return rng.choice([
        "$(" * n + cmd + ")" * n,
        "(" * n + cmd + ")" * n,
        "{ " * n + cmd + "; }" * n,
        "if true; then " * n + cmd + "; fi" * n,
        "bash -c " + "'bash -c \"" * 3 + cmd,
        "eval " * n + cmd,
        "$(" * n + cmd,
    ])


def unreached_bomb(rng: random.Random, cmd: str) -> str:
    doubling = "; ".join(["a=gitgit"] + ["a=$a$a"] * 30)
    return rng.choice([
        f"if false; then {doubling}; fi; {cmd}",
        f"if false; then printf '%0900000000d'; fi; {cmd}",
        f"echo {{1..10000000}} >/dev/null; {cmd}",
        f"if false; then bash /dev/stdin; . /dev/fd/0; source /proc/self/fd/0; fi; {cmd}",
        f"if false; then source /dev/tty; bash /dev/zero; . /dev/urandom; fi; {cmd}",
    ])


MUTATIONS = [splice_quotes, unbalanced_heredoc, nul_bytes, megabyte_line, huge_pipeline, deep_nesting,
             unreached_bomb]
# the expensive ones are rarer, so a run of thousands stays within minutes
WEIGHTS = [30, 20, 20, 2, 2, 4, 4]


def mutated(rng: random.Random, base: list[str]) -> str:
    cmd = rng.choice(base)
    for fn in rng.choices(MUTATIONS, WEIGHTS, k=rng.choice([1, 1, 2])):
        cmd = fn(rng, cmd)
        if len(cmd) > 2_000_000:
            break
    return cmd


def as_line(rng: random.Random, obj: dict) -> bytes:
    """One JSON line; sometimes with invalid UTF-8 bytes inside the command string."""
    raw = json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode("utf-8")
    if rng.random() < 0.1:
        k = raw.rfind(b'"command": "')
        if k >= 0:
            k += len(b'"command": "')
            raw = raw[:k] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xfe"]) + raw[k:]
    return raw


def fuzz_lines(n: int, seed: int, shared: Path | None = None) -> Iterator[tuple[int, bytes]]:
    """``n`` valid JSON lines (objects with a string ``command`` and an integer ``id``)."""
    rng = random.Random(seed)
    base = base_commands(shared, seed=seed)
    for i in range(n):
        yield i, as_line(rng, {"id": i, "command": mutated(rng, base)})


# --------------------------------------------------------------------------- stream attacks


def hostile_lines(n: int = 0, seed: int = 0) -> list[bytes]:
    """Lines that attack the stream, not just the analysis: each must be answered (with its id
    when it has one) and nothing after it may be lost."""
    lines = [
        b'{"id": "stdin-heredoc", "command": ". /dev/stdin <<< \\"git push\\""}',
        b'{"id": "stdin-bash", "command": "bash /dev/stdin <<\'EOF\'\\ngit push\\nEOF"}',
        b'{"id": "fd0", "command": "echo \'git push\' | sh /dev/fd/0"}',
        b'{"id": "proc-fd0", "command": "python3 /proc/self/fd/0 < x; cat /proc/self/fd/0"}',
        b'{"id": "curl-K", "command": "curl -K /dev/stdin <<EOF\\nurl = https://x\\nEOF"}',
        b'{"id": "tty", "command": "source /dev/tty; bash /dev/tty"}',
        b'{"id": "zero", "command": "bash /dev/zero; . /dev/urandom"}',
        b'{"id": "raw-nul", "command": "git\x00 push origin main"}',
        b'{"id": "escaped-nul", "command": "source x\\u0000y.sh; git push"}',
        b'{"id": "bad-utf8", "command": "echo \xff\xfe \xed\xa0\x80"}',
        b'{"id": "not-json", "command": ',
        b'not json at all',
        b'{"id": "no-command"}',
        b'{"id": "command-number", "command": 5}',
        b'["a", "list"]',
        b'{"id": {"nested": [1, 2]}, "command": "ls"}',
        b'{"id": "line\\nbreak\\u2028sep", "command": "ls"}',
        b'{"id": null, "command": "ls"}',
        b'{"command": "ls", "id": 1e400}',
        b'[' * 100_000 + b']' * 100_000,
        b'{"id": "deep-json", "command": "ls", "x": ' + b'[' * 50_000 + b']' * 50_000 + b'}',
        b'{"id": "cwd-odd", "command": "git push", "cwd": "\\u0000/\\udc80"}',
        b'{"id": "env-odd", "command": "echo $X", "env": {"X": "\\u0000", "\\u0000": 1}}',
        b'{"id": "env-list", "command": "ls", "env": [1, 2]}',
        b'',
        b'   ',
        b'{"id": "crlf", "command": "ls"}\r',
        b'{"id": "doubling", "command": "if false; then a=gitgit; ' + b"a=$a$a; " * 30 + b'fi"}',
        b'{"id": "printf-bomb", "command": "if false; then printf \'%0900000000d\'; fi"}',
        b'{"id": "pipeline-10k", "command": "' + b" | ".join([b"cat"] * 10_000) + b'"}',
        b'{"id": "pipeline-1mb", "command": "' + b" | ".join([b"x"] * 250_000) + b'"}',
        b'{"id": "words-1m", "command": "echo ' + b"w " * 1_000_000 + b'"}',
        b'{"id": "nest-subst", "command": "' + b"$(" * 5000 + b"git push" + b")" * 5000 + b'"}',
        b'{"id": "nest-paren", "command": "' + b"(" * 20_000 + b"ls" + b")" * 20_000 + b'"}',
        b'{"id": "brace-bomb", "command": "echo {1..100000000}{a..z}"}',
        b'{"id": "glob", "command": "ls ' + b"*/" * 200 + b'*"}',
        b'{"id": "heredoc-open", "command": "cat <<EOF\\ngit push"}',
    ]
    rng = random.Random(seed)
    while len(lines) < n:
        lines.append(as_line(rng, {"id": f"gen-{len(lines)}", "command": mutated(rng, FALLBACK)}))
    return lines


def spread(ordinary: list[bytes], hostile: list[bytes], seed: int = 0) -> list[bytes]:
    """``ordinary`` lines with every ``hostile`` one placed at a random point among them."""
    rng = random.Random(seed)
    out = list(ordinary)
    for line in hostile:
        out.insert(rng.randint(0, len(out)), line)
    return out
