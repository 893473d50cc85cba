"""The loader: layering, the content-keyed cache, rules whose examples fail, last-known-good."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze, rule_examples
from guard.ruleset import load as loader
from guard.ruleset import model as rmodel

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("isolated_rules")


LFS = """\
# git lfs push publishes large files
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


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def verdict(cmd: str, *rules: str, config: str | None = None):
    ctx = Context(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"}, rule_paths=rules,
                  config_path=config)
    return analyze(cmd, ctx)


def ids(rs: rmodel.RuleSet) -> list[str]:
    return [r.id for r in rs.rules]


# --------------------------------------------------------------------------- layering


def test_a_rule_folder_adds_rules_and_explain_names_the_line(tmp_path):
    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    v = verdict("git lfs push origin feature", str(tmp_path / "d"))
    assert (v.verdict, v.rule, v.category) == ("refuse", "lfs-push", "publish")
    assert v.rule_source == f"{f}:3"


def test_shipped_sources_are_the_line_of_the_id(tmp_path):
    rs = loader.load(run=rule_examples)
    for r in rs.rules:
        file, line = r.source.rsplit(":", 1)
        text = (REPO / file).read_text().splitlines()[int(line) - 1]
        assert text.strip().startswith(f"- id: {r.id}"), (r.source, text)


def test_same_id_replaces_in_place(tmp_path):
    shipped = ids(loader.load(run=rule_examples))
    write(tmp_path / "d" / "push.yaml", """\
        rules:
          - id: git-push
            category: publish
            message: "Refused: {what}. Ask the coordinator."
            match: {program: git, subcommand: push}
        """)
    rs = loader.load((str(tmp_path / "d"),), run=rule_examples)
    assert ids(rs) == shipped
    assert "Ask the coordinator" in verdict("git push", str(tmp_path / "d")).message


def test_enabled_false_removes_and_a_rule_without_match_changes_fields(tmp_path):
    write(tmp_path / "d" / "x.yaml", """\
        rules:
          - id: gh-auth
            enabled: false
          - id: git-push
            message: "Refused: {what}. Use the push tool."
        """)
    rs = loader.load((str(tmp_path / "d"),), run=rule_examples)
    assert "gh-auth" not in ids(rs)
    assert rs.disabled and rs.disabled[0]["id"] == "gh-auth"
    assert verdict("gh auth status", str(tmp_path / "d")).verdict == "allow"
    push = verdict("git push", str(tmp_path / "d"))
    assert push.rule == "git-push" and push.message.startswith("Refused: git push. Use the push tool.")


def test_config_layer_comes_last(tmp_path):
    d = write(tmp_path / "d" / "lfs.yaml", LFS)
    cfg = write(tmp_path / "guard.yaml", "rules:\n  - id: lfs-push\n    enabled: false\n")
    assert verdict("git lfs push", str(d.parent)).rule == "lfs-push"
    assert verdict("git lfs push", str(d.parent), config=str(cfg)).rule != "lfs-push"


# --------------------------------------------------------------------------- examples gate loading


def test_a_rule_whose_examples_fail_does_not_load(tmp_path, capfd):
    bad = LFS.replace('allow: ["git lfs ls-files"]', 'allow: ["git lfs ls-files", "git lfs push --all"]')
    lock = LFS.split("rules:\n", 1)[1].replace("lfs-push", "lfs-lock").replace("action: push", "action: lock")
    f = write(tmp_path / "d" / "lfs.yaml", bad + lock.replace("lfs push origin feature", "lfs lock big.bin"))
    rs = loader.load((str(tmp_path / "d"),), run=rule_examples)
    assert "lfs-push" not in ids(rs) and "lfs-lock" in ids(rs)
    err = capfd.readouterr().err
    assert err.count("\n") == 1
    assert f"guard: rules: {f}:3: rule lfs-push not loaded: its examples fail (examples.allow[1])" in err
    assert rs.dropped and not rs.errors


def test_a_failing_override_leaves_the_earlier_rule_in_place(tmp_path):
    write(tmp_path / "d" / "push.yaml", """\
        rules:
          - id: git-push
            category: publish
            message: "Refused: {what}. Narrowed."
            match: {program: git, subcommand: push, flags_any: [--force]}
            examples:
              refuse: ["git push origin main"]
        """)
    rs = loader.load((str(tmp_path / "d"),), run=rule_examples)
    push = next(r for r in rs.rules if r.id == "git-push")
    assert push.source.startswith("rules/commands/")


# --------------------------------------------------------------------------- cache


def test_cache_is_keyed_by_content_not_mtime(tmp_path):
    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    st = f.stat()
    assert "lfs-push" in ids(loader.load((str(f.parent),), run=rule_examples))
    f.write_text(LFS.replace("lfs-push", "lfs-pish"))  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "lfs-pish" in ids(loader.load((str(f.parent),), run=rule_examples))


def test_the_hot_path_does_not_import_yaml_once_cached(tmp_path):
    d = write(tmp_path / "d" / "lfs.yaml", LFS).parent
    loader.load((str(d),), run=rule_examples)
    code = (f"import sys; from guard.engine import rule_examples; from guard.ruleset import load as loader; "
            f"rs = loader.load(({str(d)!r},), run=rule_examples); "
            "print(len(rs.rules), 'yaml' in sys.modules, 'guard.ruleset.compile' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    n, has_yaml, has_authoring = out.stdout.split()
    assert int(n) > 40 and has_yaml == "False" and has_authoring == "False"


# --------------------------------------------------------------------------- last known good


def test_broken_edit_keeps_the_last_good_set_and_says_so_once(tmp_path, capfd):
    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    d = str(f.parent)
    assert "lfs-push" in ids(loader.load((d,), run=rule_examples))
    f.write_text(LFS.replace("match: {program: git,", "match: {program: git"))  # YAML error
    rs1 = loader.load((d,), run=rule_examples)
    rs2 = loader.load((d,), run=rule_examples)
    assert "lfs-push" in ids(rs1) and ids(rs1) == ids(rs2)
    assert rs1.errors == [] and rs1.fallback
    err = capfd.readouterr().err.splitlines()
    assert err == [f"guard: rules: {f}:7:36: YAML syntax error: expected ',' or '}}', but got ':' "
                   f"(while parsing a flow mapping); using the last good rule set"]


def test_schema_mistake_also_keeps_the_last_good_set(tmp_path, capfd):
    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    d = str(f.parent)
    loader.load((d,), run=rule_examples)
    f.write_text(LFS.replace("category: publish", "category: pubish"))
    rs = loader.load((d,), run=rule_examples)
    assert next(r for r in rs.rules if r.id == "lfs-push").category == "publish"
    assert f"{f}:4:15: rules[0].category: expected one of publish" in capfd.readouterr().err


def test_without_any_good_set_the_shipped_rules_answer(tmp_path, capfd):
    f = write(tmp_path / "d" / "lfs.yaml", LFS.replace("category: publish", "category: pubish"))
    rs = loader.load((str(f.parent),), run=rule_examples)
    assert ids(rs) == ids(loader.load(run=rule_examples)) and "lfs-push" not in ids(rs)
    assert rs.errors and rs.fallback.endswith("; using the shipped rules (no good rule set was loaded before)")
    v = verdict("git push", str(f.parent))  # a shell answers with the shipped rules
    assert v.rule == "git-push"
    err = capfd.readouterr().err
    assert err.count("using the shipped rules") == 1 and f"{f}:4:15: rules[0].category" in err


def test_check_without_any_good_set_is_a_configuration_error(tmp_path):
    f = write(tmp_path / "d" / "lfs.yaml", LFS.replace("category: publish", "category: pubish"))
    out = subprocess.run([sys.executable, "-m", "guard.cli.main", "check", "--rules", str(f), "--", "ls"],
                         env=os.environ, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"guard: configuration error: {f}:4:15: rules[0].category" in out.stderr


def test_fixing_the_file_brings_the_new_set(tmp_path, capfd):
    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    d = str(f.parent)
    loader.load((d,), run=rule_examples)
    f.write_text("rules: [\n")
    loader.load((d,), run=rule_examples)
    f.write_text(LFS.replace("lfs-push", "lfs-push-v2"))
    assert "lfs-push-v2" in ids(loader.load((d,), run=rule_examples))


def test_check_answers_with_the_last_good_set_instead_of_a_configuration_error(tmp_path):
    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    env = {**os.environ, "GUARD_RULES": str(f.parent)}
    cmd = [sys.executable, "-m", "guard.cli.main", "check", "--cwd", "/workspace/app", "--tree", "/workspace", "--",
           "git lfs push origin x"]
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 1
    f.write_text(LFS + "  - {id: broken\n")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    assert out.stderr.count("using the last good rule set") == 1


def test_a_compiler_crash_is_not_cached(tmp_path, monkeypatch, capfd):
    from guard.ruleset import compile as authoring

    def boom(layers, run):
        raise RuntimeError("simulated")

    monkeypatch.setattr(authoring, "compile_for_load", boom)
    rs = loader.load(run=rule_examples)
    assert rs.errors == ["internal error while compiling rules: RuntimeError: simulated"]
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert loader.load(run=rule_examples).errors == [] and len(loader.load(run=rule_examples).rules) > 40


def test_a_crash_after_a_good_load_answers_with_the_last_good_set(tmp_path, monkeypatch, capfd):
    from guard.ruleset import compile as authoring

    f = write(tmp_path / "d" / "lfs.yaml", LFS)
    loader.load((str(f.parent),), run=rule_examples)
    f.write_text(LFS.replace("Push with", "Publish with"))
    monkeypatch.setattr(authoring, "compile_for_load", lambda layers, run: 1 / 0)
    rs = loader.load((str(f.parent),), run=rule_examples)
    assert "lfs-push" in ids(rs) and rs.errors == []
    assert "ZeroDivisionError" in capfd.readouterr().err


# --------------------------------------------------------------------------- reuse in a server


HOUR_AGO_NS = 3600 * 10**9


def _settled(path: Path) -> int:
    """Give ``path`` an mtime an hour old (a file nobody has touched lately); returns it."""
    old = os.stat(path).st_mtime_ns - HOUR_AGO_NS
    os.utime(path, ns=(old, old))
    return old


def _lfs_ctx(mine: Path) -> Context:
    return Context(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"}, rule_paths=(str(mine),))


def _counting_loads(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = loader.load

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(loader, "load", counted)
    return calls


def test_a_settled_unchanged_rule_set_is_reused_after_forget_without_reading_the_files(tmp_path, monkeypatch) -> None:
    mine = write(tmp_path / "lfs.yaml", LFS)
    _settled(mine)
    ctx = _lfs_ctx(mine)
    first = loader.load_for(ctx, rule_examples)
    calls = _counting_loads(monkeypatch)
    loader.forget(keep_unchanged=True)
    assert loader.load_for(ctx, rule_examples) is first and calls == []
    assert analyze("git lfs push origin feature", ctx).rule == "lfs-push"
    loader.forget()  # a plain forget is a fresh process: the files are read again
    loader.load_for(ctx, rule_examples)
    assert calls == [1]


def test_an_edited_settled_rule_file_is_read_again(tmp_path, monkeypatch) -> None:
    mine = write(tmp_path / "lfs.yaml", LFS)
    _settled(mine)
    ctx = _lfs_ctx(mine)
    assert analyze("git lfs push origin feature", ctx).rule == "lfs-push"
    mine.write_text(textwrap.dedent(LFS).replace("enabled: false", "").replace("id: lfs-push", "id: lfs-pushed"))
    loader.forget(keep_unchanged=True)
    assert analyze("git lfs push origin feature", ctx).rule == "lfs-pushed"


def test_a_recently_written_file_is_read_again_even_when_its_stamp_is_the_same(tmp_path, monkeypatch) -> None:
    """git's racy-clean rule: an edit in the same clock tick, at the same size, keeps the stamp,
    so a file whose mtime is this recent is never trusted on its stamp alone."""
    mine = write(tmp_path / "lfs.yaml", LFS)
    ctx = _lfs_ctx(mine)
    assert analyze("git lfs push origin feature", ctx).rule == "lfs-push"
    st = os.stat(mine)
    mine.write_text(textwrap.dedent(LFS).replace("id: lfs-push", "id: lfs-pusk"))  # same size
    os.utime(mine, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime: the stamp is unchanged
    assert os.stat(mine).st_size == st.st_size
    loader.forget(keep_unchanged=True)
    assert analyze("git lfs push origin feature", ctx).rule == "lfs-pusk"


def test_a_broken_set_is_never_reused_so_its_warning_is_said_by_each_load(tmp_path, monkeypatch) -> None:
    mine = write(tmp_path / "broken.yaml", "rules:\n  - id: x\n    categry: publish\n")
    _settled(mine)
    ctx = _lfs_ctx(mine)
    loader.load_for(ctx, rule_examples)
    calls = _counting_loads(monkeypatch)
    loader.forget(keep_unchanged=True)
    loader.load_for(ctx, rule_examples)
    assert calls  # read again (and the shipped rules behind it)
