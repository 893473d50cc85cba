"""Recorded real stderr (fixtures/stderr/) through the shipped rules: exactly the expected note."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.act.annotate import PREFIX, Annotator, load_rules

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "fixtures" / "stderr").glob("*.txt"))


def parse_fixture(path: Path) -> tuple[dict[str, str], bytes]:
    raw = path.read_bytes()
    head, sep, body = raw.partition(b"# ---\n")
    assert sep, f"{path.name}: no '# ---' line ending the header"
    meta: dict[str, str] = {}
    for line in head.decode().splitlines():
        key, _, value = line.lstrip("# ").partition(": ")
        meta[key] = value
    assert meta.get("produced by"), f"{path.name}: says nothing of how it was produced"
    return meta, body


def annotate(body: bytes, meta: dict[str, str], chunk: int) -> list[str]:
    env = dict(kv.split("=", 1) for kv in meta.get("env", "").split() if "=" in kv)
    ann = Annotator(load_rules(), env=env, in_tree=meta.get("cwd_in_tree") == "true",
                    programs=("sh",), command="", audit=False)
    for i in range(0, len(body), chunk):
        ann.feed(body[i : i + chunk])
    return [r.id for r, _ in ann.fired()], ann.finish(1).decode()


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) >= 4


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
@pytest.mark.parametrize("chunk", [1 << 20, 5])
def test_fixture_gets_exactly_its_annotation(path: Path, chunk: int) -> None:
    meta, body = parse_fixture(path)
    fired, out = annotate(body, meta, chunk)
    assert fired == [meta["expect"]]
    assert out.count(PREFIX) == 1 and out.startswith(PREFIX) and out.endswith("\n")


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_without_its_conditions_is_quiet(path: Path) -> None:
    meta, body = parse_fixture(path)
    if meta.get("cwd_in_tree") == "true":
        meta = {**meta, "cwd_in_tree": "false"}
    else:
        meta = {**meta, "env": "GIT_TERMINAL_PROMPT=1"}
    assert annotate(body, meta, 1 << 20)[0] == []
