"""The package's layers, enforced: every import in guard/ (module level, inside functions and under
TYPE_CHECKING alike) may only reach its own layer or one below it.

    base (ir, record, context, text, system) ← parse ← resolve ← ruleset ← policy ← engine
        ← audit (the log writer) ← act ← shell ← serve, hooks, audit.reports ← cli

What a lower layer needs from a higher one is passed in: ``resolve.resolve`` takes the parse step,
the rule set's loader takes the runner of rules' examples (``guard.engine.rule_examples``). No
edge reaches up; one added must be listed in KNOWN_UP with its reason, and the test fails when a
listed one is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "guard"

RANK = {
    "base": 0, "parse": 1, "resolve": 2, "ruleset": 3, "policy": 4, "engine": 5,
    "audit": 6, "act": 7, "shell": 8, "serve": 9, "hooks": 9, "reports": 9, "cli": 10,
}
BASE = {"ir", "record", "context", "text", "system", "_spawn", "__version__"}

# (importer layer, imported layer) → why it still reaches up. Empty: keep it so.
KNOWN_UP: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in BASE:
        return "base"
    if parts[1] in ("engine", "warmup"):
        return "engine"
    if parts[1] == "audit":
        return "reports" if len(parts) > 2 and parts[2] == "reports" else "audit"
    return parts[1]


def module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [f"{node.module}.{a.name}" for a in node.names]
    return [m for m in out if m == "guard" or m.startswith("guard.")]


def edges() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        src = module_of(path)
        for target in imports(path):
            a, b = layer_of(src), layer_of(target)
            if a != b:
                found[(a, b)].append(f"{src} imports {target}")
    return found


def test_every_module_has_a_layer() -> None:
    unknown = {layer_of(module_of(p)) for p in PACKAGE.rglob("*.py")} - set(RANK) - {"rules"}
    assert not unknown, f"packages with no layer in RANK: {sorted(unknown)}"


def test_no_import_reaches_up_a_layer() -> None:
    up = {k: v for k, v in edges().items() if RANK[k[1]] >= RANK[k[0]]}
    new = {k: v for k, v in up.items() if k not in KNOWN_UP}
    assert not new, "imports reaching up a layer:\n" + "\n".join(
        f"  {a} -> {b}: {', '.join(sorted(set(v)))}" for (a, b), v in sorted(new.items()))
    gone = set(KNOWN_UP) - set(up)
    assert not gone, f"no longer reaching up, remove from KNOWN_UP: {sorted(gone)}"


def test_the_launcher_path_packages_import_nothing() -> None:
    # guard-shell imports these packages before the command runs: their __init__ stays empty
    for pkg in ("shell", "system", "text"):
        assert (PACKAGE / pkg / "__init__.py").read_text().strip() == "", pkg


def test_layer_of_reads_the_table() -> None:
    assert layer_of("guard.audit.log") == "audit"
    assert layer_of("guard.audit.reports.html") == "reports"
    assert layer_of("guard.text.redact") == "base"
    assert layer_of("guard.shell.precheck") == "shell"
