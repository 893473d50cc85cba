#!/usr/bin/env python3
"""Score guard on the fresh batch (fixtures/fresh/*.jsonl, labels from real bash; see
fixtures/fresh/README.md): per family, the share of cases whose verdict equals the label,
then every miss with guard's answer.

    python3 bench/fresh_batch.py [--json] [--no-world] [--dir DIR] [FAMILY...]

--dir scores another folder of the same format (the second batch: --dir fixtures/fresh2);
the default is fixtures/fresh.

guard is found as $GUARD_BIN, else `guard` on PATH, else bin/guard run with this Python.
Every line goes through one `guard check --jsonl --json` with GUARD_TREE=/workspace.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRESH = ROOT / "fixtures" / "fresh"


def guard_cmd():
    if os.environ.get("GUARD_BIN"):
        return [os.environ["GUARD_BIN"]]
    venv = ROOT / ".venv" / "bin" / "guard"
    if venv.exists():
        return [str(venv)]
    if shutil.which("guard"):
        return [shutil.which("guard")]
    return [sys.executable, str(ROOT / "bin" / "guard")]


def load(families, folder=FRESH):
    cases = []
    for f in sorted(folder.glob("*.jsonl")):
        if families and f.stem not in families:
            continue
        for line in f.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                cases.append(json.loads(line))
    return cases


def make_world():
    """The cases assume a clone in temp space at /tmp/src/proj (a .git, a file, a src/ folder),
    as the labelling run had. guard reads the real file system, so give it the same; made only
    if absent, and removed afterwards. --no-world skips it (copies of the clone then look like
    copies of a missing directory)."""
    proj = Path("/tmp/src/proj")
    if Path("/tmp/src").exists():
        return None
    (proj / ".git" / "refs").mkdir(parents=True)
    (proj / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (proj / "file.txt").write_text("hello\n")
    (proj / "src").mkdir()
    (proj / "src" / "lib.py").write_text("x = 1\n")
    return Path("/tmp/src")


def main(argv):
    made = None if "--no-world" in argv else make_world()
    try:
        run(argv)
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)


def run(argv):
    as_json = "--json" in argv
    folder = FRESH
    if "--dir" in argv:
        i = argv.index("--dir")
        folder = ROOT / argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    families = [a for a in argv if not a.startswith("--")]
    cases = load(families, folder)
    stdin = "".join(json.dumps({"command": c["command"], "cwd": c["cwd"], "id": c["id"]}) + "\n"
                    for c in cases)
    env = dict(os.environ, GUARD_TREE="/workspace")
    for k in ("GUARD_RULES", "GUARD_CONFIG", "GUARD_ROUTE", "GUARD_ROLE"):
        env.pop(k, None)
    p = subprocess.run(guard_cmd() + ["check", "--jsonl", "--json"], input=stdin,
                       capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"guard check --jsonl failed ({p.returncode}): {p.stderr[-2000:]}")
    verdicts = {}
    for line in p.stdout.splitlines():
        v = json.loads(line)
        verdicts[v.get("id")] = v
    report = {}
    for c in cases:
        fam = report.setdefault(c["family"], {"cases": 0, "right": 0, "refuse": 0, "caught": 0,
                                              "allow": 0, "kept": 0, "misses": []})
        v = verdicts.get(c["id"], {})
        got = v.get("verdict", "missing")
        fam["cases"] += 1
        fam[c["label"]] += 1
        if got == c["label"]:
            fam["right"] += 1
            fam["caught" if c["label"] == "refuse" else "kept"] += 1
        else:
            fam["misses"].append({
                "id": c["id"], "command": c["command"], "label": c["label"], "got": got,
                "kind": "false allow" if c["label"] == "refuse" else "false refusal",
                "category": v.get("category"), "rule": v.get("rule"),
                "unresolved": v.get("unresolved"), "checked": c["checked"], "why": c["why"],
            })
    if as_json:
        print(json.dumps(report, indent=1))
        return
    tot = [0, 0]
    for name, fam in report.items():
        tot[0] += fam["cases"]
        tot[1] += fam["right"]
        print(f"{name:<12} {fam['cases']:3d} cases  first try {100.0 * fam['right'] / fam['cases']:5.1f} %  "
              f"(refusals caught {fam['caught']}/{fam['refuse']}, allows kept {fam['kept']}/{fam['allow']})")
    print(f"{'all':<12} {tot[0]:3d} cases  first try {100.0 * tot[1] / max(tot[0], 1):5.1f} %")
    for fam in report.values():
        for m in fam["misses"]:
            print("\nMISS {} ({}; label {}, checked {}): guard {}{}".format(
                m["id"], m["kind"], m["label"], m["checked"], m["got"],
                " [{}/{}]".format(m["category"], m["rule"]) if m["got"] == "refuse" else
                (" unresolved={}".format(m["unresolved"]) if m["unresolved"] else "")))
            print("  $ " + m["command"].replace("\n", "\n    "))
            print("  why: " + m["why"])


if __name__ == "__main__":
    main(sys.argv[1:])
