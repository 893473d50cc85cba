"""Rules on trial: refuse, warn and observe, set per rule, per category or for everything, and
what each front does with them (guard check, guard-shell, a hook, the audit and its report).

Each front is run as a real process, with real bash and a private audit log; warn and observe
must leave the command's stdout, exit status and effects exactly as bash gives them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.record import replace
from guard.ruleset.actions import effective, mode_of
from guard.ruleset.model import Rule
from tests.conftest import guard_bin

PUSH = "git push origin feature"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env.update(GUARD_TREE=str(tmp_path / "ws"), GUARD_AUDIT_LOG=str(tmp_path / "audit.jsonl"), GUARD_SERVER="0",
               GUARD_AGENT="a1", GUARD_THREAD="t1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.update(extra)
    return env


def _records(tmp_path: Path) -> list[dict]:
    log = tmp_path / "audit.jsonl"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def app(tmp_path: Path) -> Path:
    d = tmp_path / "ws" / "app"
    d.mkdir(parents=True)
    return d


# ------------------------------------------------------------------ the action, as data


def test_the_most_specific_setting_wins() -> None:
    rule = Rule("git-push", {"program": "git", "subcommand": "push"}, category="publish")
    assert effective(rule, {}, None) == ("refuse", "the default")
    assert effective(replace(rule, action="observe"), {}, None)[0] == "observe"
    assert effective(replace(rule, action="observe"), {"mode": "warn"}, None)[0] == "warn"
    assert effective(rule, {"mode": "warn"}, "observe") == ("observe", "GUARD_MODE")
    assert effective(rule, {"category_actions": {"publish": "refuse"}}, "observe")[0] == "refuse"
    cfg = {"category_actions": {"publish": "observe"}, "rule_actions": {"git-push": "warn"}}
    assert effective(rule, cfg, "refuse") == ("warn", "config rule_actions[git-push]")


def test_a_bad_mode_is_named_and_ignored() -> None:
    assert mode_of("Observe") == ("observe", None)
    mode, note = mode_of("audit")
    assert mode is None and note and "GUARD_MODE='audit'" in note
    v = analyze(PUSH, Context(cwd="/workspace/app", env={"GUARD_MODE": "audit"}, mode="audit"))
    assert v.verdict == "refuse" and any("GUARD_MODE" in u for u in v.unresolved)


def test_a_rule_on_observe_answers_for_its_invocation_and_the_strongest_action_decides() -> None:
    ctx = Context(cwd="/workspace/app", mode=None)
    base = analyze(f"{PUSH}; git commit -m x", ctx)
    assert (base.verdict, base.rule, base.action) == ("refuse", "git-push", "refuse")
    trial = analyze(f"{PUSH}; git commit -m x", Context(cwd="/workspace/app", mode="observe"))
    assert (trial.verdict, trial.rule, trial.action, trial.action_source) == ("allow", "git-push", "observe", "GUARD_MODE")
    # git-push on observe does not hand git push to a catch-all behind it
    assert analyze(PUSH, Context(cwd="/workspace/app", mode="observe")).rule == "git-push"


def test_config_layers_set_actions_and_rules_lint_accepts_them(tmp_path: Path, app: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("config:\n  mode: observe\n  rule_actions:\n    git-mutate: warn\n")
    env = _env(tmp_path, GUARD_CONFIG=str(cfg))
    out = subprocess.run([guard_bin(), "check", "--json", "--cwd", str(app), "--", "git commit -m x"],
                         capture_output=True, text=True, env=env, timeout=60)
    got = json.loads(out.stdout)
    assert out.returncode == 0
    assert (got["verdict"], got["action"], got["action_source"]) == ("allow", "warn", "config rule_actions[git-mutate]")
    assert got["message"].startswith("Warning: git commit.")
    listed = subprocess.run([guard_bin(), "rules", "list"], capture_output=True, text=True, env=env, timeout=60)
    rows = {ln.split()[0]: ln.split() for ln in listed.stdout.splitlines() if ln and not ln.startswith("id ")}
    assert rows["git-mutate"][2] == "warn" and rows["git-push"][2] == "observe" and rows["git-info"][2] == "-"
    bad = tmp_path / "bad.yaml"
    bad.write_text("config:\n  rule_actions:\n    git-push: ignore\n")
    lint = subprocess.run([guard_bin(), "rules", "lint", str(bad)], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=60)
    assert lint.returncode != 0 and "bad.yaml" in lint.stdout + lint.stderr


# ------------------------------------------------------------------ guard-shell


def _shell(cmd: str, app: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    shell = str(Path(guard_bin()).with_name("guard-shell"))
    return subprocess.run([shell, "-c", cmd], cwd=app, capture_output=True, env=env, timeout=60)


@pytest.mark.parametrize("mode", ["warn", "observe"])
def test_a_rule_on_trial_runs_the_command_as_bash_would(mode: str, tmp_path: Path, app: Path) -> None:
    # git's own work goes to a repository outside the tree; the probe is judged by its cwd
    cmd = "git status --porcelain; echo out; echo err >&2; exit 3"
    bash = subprocess.run(["bash", "-c", cmd], cwd=app, capture_output=True, env=_env(tmp_path), timeout=60)
    got = _shell(cmd, app, _env(tmp_path, GUARD_MODE=mode))
    assert (got.returncode, got.stdout) == (bash.returncode, bash.stdout) == (3, b"out\n")
    warnings = got.stderr.decode().count("Warning: git status.")
    assert warnings == (1 if mode == "warn" else 0)
    assert bash.stderr in got.stderr  # the command's own stderr, whole
    recs = [r for r in _records(tmp_path) if r["kind"] != "annotation"]
    assert [(r["kind"], r["verdict"], r["action"], r["rule"]) for r in recs] == \
        [("trial", "allow", {"warn": "warned", "observe": "observed"}[mode], "git-read-probe")]
    assert recs[0]["command"] == cmd and recs[0]["agent"] == "a1"


def test_refuse_stays_a_refusal_with_its_action_recorded(tmp_path: Path, app: Path) -> None:
    got = _shell("git commit -m x", app, _env(tmp_path))
    assert got.returncode == 126 and got.stderr.decode().startswith("Refused: git commit.")
    (rec,) = _records(tmp_path)
    assert (rec["kind"], rec["verdict"], rec["action"]) == ("refusal", "refuse", "refused")


# ------------------------------------------------------------------ a hook


def test_a_hook_gives_a_warning_as_context_and_no_decision(tmp_path: Path, app: Path) -> None:
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "s1",
                          "tool_input": {"command": PUSH}, "cwd": str(app)})
    for mode, wants_context in (("warn", True), ("observe", False)):
        got = subprocess.run([guard_bin(), "hook", "claude"], input=payload, capture_output=True, text=True,
                             env=_env(tmp_path, GUARD_MODE=mode), timeout=60)
        assert got.returncode == 0
        answer = json.loads(got.stdout) if got.stdout.strip() else {}
        out = answer.get("hookSpecificOutput", {})
        assert "permissionDecision" not in out  # never a decision: the command runs
        assert ("additionalContext" in out) == wants_context
        if wants_context:
            assert out["additionalContext"].startswith("Warning: git push.")
    recs = _records(tmp_path)
    assert [(r["kind"], r["action"], r.get("client")) for r in recs] == \
        [("trial", "warned", "claude-code"), ("trial", "observed", "claude-code")]


# ------------------------------------------------------------------ the audit report


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_the_report_keeps_trial_records_apart(engine: str, tmp_path: Path, app: Path) -> None:
    pytest.importorskip("duckdb") if engine == "duckdb" else None
    for _ in range(3):
        _shell(PUSH, app, _env(tmp_path, GUARD_MODE="observe"))
    _shell("git status", app, _env(tmp_path, GUARD_MODE="warn"))
    _shell("git commit -m x", app, _env(tmp_path))
    env = _env(tmp_path)
    log = str(tmp_path / "audit.jsonl")
    rep = subprocess.run([guard_bin(), "audit", "--json", "--engine", engine, log], capture_output=True, text=True,
                         env=env, timeout=120)
    data = json.loads(rep.stdout)
    s = data["summary"]  # the trial records are neither refusals nor annotations
    assert s["refusals"] == 1 and s["records"] == s["refusals"] + s["annotations"]
    assert s["annotations"] == sum(1 for r in _records(tmp_path) if r["kind"] == "annotation")
    trial = {r["rule"]: r for r in data["trial"]}
    assert (trial["git-push"]["matches"], trial["git-push"]["observed"], trial["git-push"]["repeats"]) == (3, 3, 2)
    assert (trial["git-read-probe"]["warned"], trial["git-read-probe"]["threads"]) == (1, 1)
    text = subprocess.run([guard_bin(), "audit", "--engine", engine, log], capture_output=True, text=True,
                          env=env, timeout=120).stdout
    assert "Rules on trial (warn, observe)" in text
    records = subprocess.run([guard_bin(), "audit", "--records", "--engine", engine, log], capture_output=True,
                             text=True, env=env, timeout=120).stdout.splitlines()
    assert len(records) == s["records"] + 4  # --records lists the trial records too


def test_rules_diff_replays_observed_records(tmp_path: Path, app: Path) -> None:
    _shell(PUSH, app, _env(tmp_path, GUARD_MODE="observe"))
    old = tmp_path / "old.yaml"
    old.write_text("config:\n  rule_actions:\n    git-push: observe\n")
    new = tmp_path / "new.yaml"
    new.write_text("config:\n  rule_actions:\n    git-push: refuse\n")
    got = subprocess.run([guard_bin(), "rules", "diff", "--old", str(old), "--new", str(new), "--commands",
                          str(tmp_path / "audit.jsonl")], capture_output=True, text=True, env=_env(tmp_path),
                         timeout=120)
    assert got.returncode == 1, got.stdout + got.stderr
    assert "1 newly refused" in got.stdout and "allow (observe by git-push)" in got.stdout


def test_a_refusing_rule_beats_a_rule_on_trial_in_the_same_command(tmp_path: Path, app: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("config:\n  rule_actions:\n    git-push: observe\n")
    env = _env(tmp_path, GUARD_CONFIG=str(cfg))
    run = [guard_bin(), "check", "--json", "--cwd", str(app), "--"]
    both = json.loads(subprocess.run([*run, f"{PUSH}; git commit -m x"], capture_output=True, text=True,
                                     env=env, timeout=60).stdout)
    assert (both["verdict"], both["rule"]) == ("refuse", "git-mutate")
    assert "Also refused" not in both["message"]  # a rule on trial is not reported as a refusal
    alone = json.loads(subprocess.run([*run, PUSH], capture_output=True, text=True, env=env, timeout=60).stdout)
    assert (alone["verdict"], alone["rule"], alone["action"]) == ("allow", "git-push", "observe")


def test_doctor_names_every_rule_on_trial(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("config:\n  rule_actions:\n    git-push: warn\n")
    env = _env(tmp_path, GUARD_CONFIG=str(cfg), PATH="/usr/bin:/bin")  # no agent client on PATH
    out = subprocess.run([guard_bin(), "doctor"], capture_output=True, text=True, env=env, timeout=60).stdout
    first = out.splitlines()[0]
    assert first.startswith("rules: ") and "on trial, not refusing: git-push (warn)" in first
    calm = subprocess.run([guard_bin(), "doctor"], capture_output=True, text=True,
                          env=_env(tmp_path, PATH="/usr/bin:/bin"), timeout=60).stdout
    assert "none on trial" in calm.splitlines()[0]
