"""Rule files → one checked, layered rule set (cold path: the loader calls ``compile_for_load``
only when its cache misses). Command rules, annotation rules, program specs and config are read
by the same reader, checked by the same validator and reported the same way, every mistake of
a file in one pass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard.ruleset.catalogue import catalogue_problems
from guard.ruleset.checks import (
    Entry,
    annotation_problems,
    archive_problems,
    config_problems,
    dialect_problems,
    inline_problems,
    recipes_problems,
    rule_problems,
    runs_problems,
)
from guard.ruleset.examples import ExampleResult, Runner
from guard.ruleset.layers import Layer, merge_config
from guard.ruleset.model import RuleSet, rule_of
from guard.ruleset.read import Diagnostic, Doc, read_doc
from guard.ruleset.schema import check_schema, vocabulary


@dataclass
class Compiled:
    ruleset: RuleSet
    entries: list[Entry]
    docs: list[Doc]
    diagnostics: list[Diagnostic]  # everything but example results
    examples: list[ExampleResult] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)  # id → earlier sources
    annotations: list[dict[str, Any]] = field(default_factory=list)  # checked stderr rules (runtime form)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def failures(self) -> list[ExampleResult]:
        return [r for r in self.examples if not r.ok]



COMPILED_DROP = frozenset({"examples", "enabled"})


def compile_files(layers: list[Layer], *, examples: str = "all", run: Runner | None = None,
                  skip: frozenset[tuple[str, int]] = frozenset(), docs: dict[Path, Doc] | None = None) -> Compiled:
    """Read, check and layer the rule files; run examples of ``all``, ``unshipped`` or ``none`` rules
    with ``run`` (the pipeline lives above this layer: its caller passes it in).

    ``skip`` holds (file name, rule index) entries to leave out (rules whose examples fail)."""
    if examples != "none" and run is None:
        raise ValueError(f"compile_files(examples={examples!r}) needs the examples' runner")
    import hashlib

    docs = {} if docs is None else docs
    diags: list[Diagnostic] = []
    config: dict[str, Any] = {}
    programs: dict[str, dict[str, Any]] = {}
    dialects: dict[str, dict[str, Any]] = {}
    entries: list[Entry] = []
    found_ann: list[tuple[Doc, int, dict[str, Any], bool]] = []
    notes: list[str] = []
    digest = hashlib.sha256()
    ordered: list[Doc] = []
    for n, layer in enumerate(layers):
        specified: dict[str, str] = {}  # program → where this layer specified it
        for f in layer.files:
            doc = docs.get(f) or read_doc(f)
            docs[f] = doc
            ordered.append(doc)
            try:
                digest.update(f.read_bytes())
            except OSError:
                pass
            diags.extend(doc.problems)
            found, bad = check_schema(doc)
            diags.extend(found)
            if not isinstance(doc.data, dict):
                continue
            cfg = doc.data.get("config")
            if isinstance(cfg, dict) and ("config",) not in bad:
                said: list[str] = []
                merge_config(config, {k: v for k, v in cfg.items() if ("config", k) not in bad},
                             said if not layer.shipped else None)
                notes += [f"{doc.name}: config {s}" for s in said]
            diags.extend(config_problems(doc))
            diags.extend(runs_problems(doc))
            diags.extend(catalogue_problems(doc))
            diags.extend(archive_problems(doc))
            diags.extend(recipes_problems(doc))
            diags.extend(inline_problems(doc))
            if examples == "all" or (examples == "unshipped" and not layer.shipped):
                diags.extend(dialect_problems(doc))  # imports each grammar: the shipped tables are CI's
            tables = doc.data.get("dialects")
            if isinstance(tables, list):
                for i, table in enumerate(tables):
                    if isinstance(table, dict) and ("dialects", i) not in bad:
                        dialects[str(table.get("dialect"))] = {k: v for k, v in table.items() if k != "examples"}
            specs = doc.data.get("programs")
            if isinstance(specs, list):
                for i, spec in enumerate(specs):
                    if isinstance(spec, dict) and ("programs", i) not in bad:
                        names = spec.get("program")
                        for name in names if isinstance(names, list) else [names]:
                            if str(name) in specified:  # one layer, one entry: a second would replace it whole
                                diags.append(doc.diag(("programs", i, "program"), f"{name!r} is specified again; "
                                                      f"{specified[name]} already does, and a later entry "
                                                      "replaces it whole: put its keys in that entry",
                                                      "duplicate-program"))
                            specified[str(name)] = f"{doc.name}:{doc.at(('programs', i))[0]}"
                            programs[str(name)] = {k: v for k, v in spec.items() if k not in ("program", "description")}
            items = doc.data.get("annotations")
            if isinstance(items, list) and ("annotations",) not in bad:
                found_ann += [(doc, i, a, ("annotations", i) not in bad) for i, a in enumerate(items)
                              if isinstance(a, dict)]
            rules = doc.data.get("rules")
            if isinstance(rules, list):
                for i, r in enumerate(rules):
                    if isinstance(r, dict):
                        entries.append(Entry(r, doc, i, n, layer.shipped, ("rules", i) not in bad))
    tools = config.get("tools") if isinstance(config.get("tools"), dict) else {}
    from guard.ruleset.programs import compile_specs

    specs = compile_specs(programs)
    effective: dict[str, dict[str, Any]] = {}
    replaced: dict[str, list[str]] = {}
    disabled: list[dict[str, str]] = []
    seen: dict[tuple[int, str], Entry] = {}
    for e in entries:
        rid = e.id
        if (e.layer, rid) in seen and "id" in e.rule:
            first = seen[(e.layer, rid)]
            diags.append(e.doc.diag((*e.path, "id"), f"duplicate id {rid!r}: already defined at {first.source} in the "
                                    "same layer (ids are unique within a layer; a later layer may replace one)",
                                    "duplicate-id"))
            continue
        seen[(e.layer, rid)] = e
        if (e.doc.name, e.index) in skip:
            continue
        if not e.valid:  # still say what the schema cannot, so one pass shows every mistake
            diags.extend(rule_problems(e, e.rule, tools, specs))
            continue
        if e.rule.get("enabled", True) is False:
            if rid in effective:
                disabled.append({"id": rid, "source": effective.pop(rid)["source"], "by": e.source})
            else:
                diags.append(e.doc.diag((*e.path, "enabled"), f"disables {rid!r}, which no earlier layer defines",
                                        "disable-nothing", severity="warning"))
            continue
        if "match" not in e.rule:
            if rid not in effective:
                diags.append(e.doc.diag(e.path, f"required: a match (no earlier layer defines a rule {rid!r} for this "
                                        "entry to change)", "missing-field", field_path=(*e.path, "match")))
                continue
            merged = {**effective[rid], **{k: v for k, v in e.rule.items() if k not in COMPILED_DROP}}
        else:
            merged = {k: v for k, v in e.rule.items() if k not in COMPILED_DROP}
        found = rule_problems(e, merged, tools, specs)
        diags.extend(found)
        if any(d.severity == "error" for d in found):
            e.valid = False
            continue
        if rid in effective:
            replaced.setdefault(rid, []).append(effective[rid]["source"])
        merged["source"] = e.source
        merged["examples"] = e.rule.get("examples") or {}
        effective[rid] = merged  # a replacement keeps its place in the order
    annotations = _annotations(found_ann, tools, diags)
    rules = [rule_of(r) for r in effective.values()]
    rs = RuleSet(rules, config, digest.hexdigest()[:16], [str(f) for layer in layers for f in layer.files],
                 [str(d) for d in diags if d.severity == "error"], disabled=disabled, programs=programs,
                 dialects=dialects, annotations=annotations, vocabulary={k: list(v) for k, v in vocabulary().items()}, notes=notes)
    out = Compiled(rs, entries, ordered, diags, replaced=replaced, annotations=annotations)
    if run is not None and (examples == "all" or (examples == "unshipped" and not rs.errors)):  # lint: despite mistakes
        live = {r["source"]: r for r in effective.values()}
        for e in entries:
            if e.source in live and (examples == "all" or not e.shipped):
                out.examples.extend(run(e, rs))
    return out


def compile_for_load(layers: list[Layer], run: Runner) -> RuleSet:
    """What the loader caches: the checked set, without rules (not shipped) whose examples fail."""
    docs: dict[Path, Doc] = {}
    first = compile_files(layers, examples="unshipped", run=run, docs=docs)
    if first.ruleset.errors or not first.failures:
        return first.ruleset
    skip = frozenset((r.entry.doc.name, r.entry.index) for r in first.failures)
    again = compile_files(layers, examples="none", skip=skip, docs=docs)
    lines = []
    for name, index in sorted(skip):
        fail = next(r for r in first.failures if (r.entry.doc.name, r.entry.index) == (name, index))
        lines.append(f"{fail.entry.source}: rule {fail.entry.id} not loaded: its examples fail "
                     f"(examples.{fail.kind}[{fail.index}]); run guard rules test {fail.entry.doc.name}")
    again.ruleset.dropped = lines
    return again.ruleset


# =========================================================================== stderr rules


def _annotations(found: list[tuple[Doc, int, dict[str, Any], bool]], tools: Mapping[str, Any],
                 diags: list[Diagnostic]) -> list[dict[str, Any]]:
    """The annotation rules of every layer, checked as the annotator checks them (and against the
    config's tools and the ids in effect); their mistakes join ``diags``. One the schema already
    rejected is still checked, so one pass shows every mistake, but not kept."""
    from guard.ruleset.annotations import runtime_dict

    ids = frozenset(str(a.get("id")) for _, _, a, _ in found)
    out: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for doc, i, item, valid in found:
        mistakes = annotation_problems(doc, i, item, tools, ids)
        diags.extend(mistakes)
        if not valid or any(d.severity == "error" for d in mistakes):
            continue
        where_ = f"{doc.name}:{doc.at(('annotations', i))[0]}"
        if item["id"] in seen:
            diags.append(doc.diag(("annotations", i, "id"), f"duplicate id {item['id']!r}: already defined at "
                                  f"{seen[item['id']]}", "duplicate-id"))
            continue
        seen[item["id"]] = where_
        d = runtime_dict(item, doc.at(("annotations", i))[0])
        d["source"] = str(doc.path) if doc.path is not None else doc.name
        out.append(d)
    return out
