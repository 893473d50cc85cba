"""The published schemas: they describe the shipped files, the validator understands every
keyword they use, and the match schema knows every fact the engine computes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from guard.context import Context
from guard.engine import rule_examples
from guard.ruleset import layers as rlayers
from guard.ruleset import load as loader
from guard.ruleset import read as rread
from guard.ruleset import schema as rschema

REPO = Path(__file__).resolve().parents[2]
KEYWORDS = {
    "$schema", "$id", "$ref", "$defs", "title", "description", "type", "properties", "required",
    "additionalProperties", "items", "enum", "pattern", "minLength", "minItems", "minProperties", "anyOf",
    "x-kind", "x-kind-empty", "x-expected", "x-reject", "x-unknown", "x-writes", "x-default",
}


def walk(node, path=()):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            if k in ("properties", "$defs"):
                for name, sub in v.items():
                    yield from walk(sub, (*path, k, name))
            elif isinstance(v, dict | list):
                yield from walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, (*path, i))


@pytest.mark.parametrize("name", ["command-rules", "config", "annotations"])
def test_schema_uses_only_keywords_the_validator_knows(name):
    s = rschema.schema(name)
    assert s["$schema"].startswith("https://json-schema.org/")
    nodes = list(walk(s))
    assert len(nodes) > 10
    for path, node in nodes:
        assert set(node) <= KEYWORDS, (path, set(node) - KEYWORDS)


def test_schemas_ship_as_package_data():
    text = (REPO / "pyproject.toml").read_text()
    assert '"guard.ruleset" = ["schema/*.json", "precheck-shipped.txt"]' in text
    for name in ("command-rules", "config", "annotations", "programs"):
        assert (rschema.SCHEMA_DIR / f"{name}.json").is_file()


def test_shipped_stderr_rules_fit_the_annotation_schema():
    s = rschema.schema("annotations")
    files = sorted((REPO / "rules" / "stderr").glob("*.yaml"))
    assert files
    for f in files:
        data = yaml.safe_load(f.read_text())
        assert rschema.validate(data, s, s) == [], f


@pytest.mark.parametrize("bad, kind", [
    ({"annotations": [{"id": "x", "pattern": "p"}]}, "missing-field"),
    ({"annotations": [{"id": "x", "pattern": "p", "message": "m", "wen": {}}]}, "unknown-key"),
    ({"annotations": [{"id": "X Y", "pattern": "p", "message": "m"}]}, "bad-format"),
    ({"annotations": [{"id": "x", "pattern": [], "message": "m"}]}, "empty"),
    ({"annotations": [{"id": "x", "pattern": 3, "message": "m"}]}, "wrong-type"),
])
def test_annotation_schema_rejects_what_the_annotator_loader_rejects(bad, kind, tmp_path):
    s = rschema.schema("annotations")
    assert [i.kind for i in rschema.validate(bad, s, s)] == [kind]
    from guard.ruleset.annotations import parse_text

    rules, problems = parse_text(yaml.safe_dump(bad), "x.yaml")
    assert rules == [] and len(problems) == 1


def test_shipped_config_and_rules_fit_their_schemas():
    for f in rlayers.rule_files((), None):
        doc = rread.read_doc(f)
        assert doc.problems == [] and rschema.check_schema(doc)[0] == [], f


def test_every_fact_the_engine_computes_is_known_to_the_match_schema():
    """Run the labelled commands through the engine and collect the facts of every invocation."""
    from guard import parse, resolve
    from guard.policy import classify as classifier
    from guard.policy.facts import facts_for

    rows = [json.loads(x) for x in (REPO / "fixtures/commands/labelled.jsonl").read_text().splitlines()]
    rs = loader.load(run=rule_examples)
    seen: set[str] = set()
    for r in rows:
        ctx = Context(cwd=r.get("cwd", "/workspace/app"), trees=("/workspace",), env={"HOME": "/root", **r.get("env", {})})
        ctx = classifier.effective_context(ctx, rs)
        res = resolve.resolve(parse.parse(r["command"]), ctx)
        for inv in res.invocations:
            seen.update(facts_for(inv, classifier.world_of(ctx, rs)))
    match = rschema.schema("command-rules")["$defs"]["match"]["properties"]
    assert len(seen) > 20
    assert seen - set(match) == set()
