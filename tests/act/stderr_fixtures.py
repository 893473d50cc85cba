"""The recorded stderr samples in fixtures/stderr/, and running one through the annotator.

A sample is a header of ``# key: value`` lines, ``# ---``, then the stderr bytes exactly as the
tool wrote them. Keys: ``produced by`` (how it was made), ``tool`` (name and version),
``command`` (the command line, as the agent ran it), ``env`` (``K=V`` words), ``cwd_in_tree``,
``expect`` (rule ids, comma-separated, or ``none``), ``annotation`` (one line per expected
annotation, exact), ``repeat`` (the body is that many copies, for huge outputs). ``PORT`` and
``SSHPORT`` stand for the loopback servers' ports, ``/tmp/T`` for the recording's temporary
directory.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PORT, SSHPORT, TMP = "47123", "47124", "/tmp/guard-replay"  # what the placeholders become
ROOT = REPO / "fixtures" / "stderr"


@dataclass
class Sample:
    path: Path
    meta: dict[str, str]
    annotations: list[str]
    body: bytes

    @property
    def name(self) -> str:
        return str(self.path.relative_to(ROOT).with_suffix(""))

    @property
    def expect(self) -> list[str]:
        raw = self.meta.get("expect", "none").strip()
        return [] if raw == "none" else [x.strip() for x in raw.split(",")]

    @property
    def env(self) -> dict[str, str]:
        return dict(kv.split("=", 1) for kv in self.meta.get("env", "").split() if "=" in kv)

    @property
    def in_tree(self) -> bool:
        return self.meta.get("cwd_in_tree") == "true"

    @property
    def command(self) -> str:
        return self.sub(self.meta.get("command", "").encode()).decode()

    @property
    def expected_lines(self) -> list[str]:
        return [self.sub(a.encode()).decode() for a in self.annotations]

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command) if self.command else []

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else "sh"

    def stderr(self) -> bytes:
        return self.sub(self.body) * int(self.meta.get("repeat", "1"))

    def sub(self, text: bytes) -> bytes:
        """``text`` with the placeholders filled in, as the replay runs it."""
        return text.replace(b"SSHPORT", SSHPORT.encode()).replace(b"PORT", PORT.encode()).replace(b"/tmp/T/", TMP.encode() + b"/")


def load(path: Path) -> Sample:
    raw = path.read_bytes()
    head, sep, body = raw.partition(b"# ---\n")
    assert sep, f"{path.name}: no '# ---' line ending the header"
    meta: dict[str, str] = {}
    annotations: list[str] = []
    for line in head.decode().splitlines():
        key, _, value = line[2:].partition(": ") if line.startswith("# ") else ("", "", "")
        if key == "annotation":
            annotations.append(value)
        elif key:
            meta[key] = value
    assert meta.get("produced by"), f"{path.name}: says nothing of how it was produced"
    return Sample(path, meta, annotations, body)


def samples() -> list[Sample]:
    return [load(p) for p in sorted(ROOT.rglob("*.txt"))]


def annotate(sample: Sample, rules: list, chunk: int = 1 << 20) -> tuple[list[str], list[str]]:
    """(ids of the rules that fired, annotation lines) for ``sample`` through the annotator, fed
    in ``chunk``-byte pieces, with the facts classify would give it (program, argv, tree)."""
    from guard.act.annotate import PREFIX, Annotator, facts_from_verdict
    from guard.ir import Invocation, Verdict

    argv = sample.argv
    verdict = Verdict("allow", invocations=(Invocation(sample.program, tuple(argv), "/w"),) if argv else ())
    facts = facts_from_verdict(verdict)
    env = {**sample.env}
    ann = Annotator(rules, env=env, in_tree=sample.in_tree, programs=facts.programs or ("sh",),
                    argvs=facts.argvs, command=sample.command, audit=False)
    data = sample.stderr()
    for i in range(0, len(data), chunk):
        ann.feed(data[i : i + chunk])
    fired = [r.id for r, _ in ann.fired()]
    out = ann.finish(1).decode()
    return fired, [line for line in out.splitlines() if line.startswith(PREFIX)]
