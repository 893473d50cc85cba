"""Program specs: one argv reader for every program, specs written in YAML alone (shipped or a
rule author's), lint for facts a program can never have, config lists extended with KEY+."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from guard import parse, resolve
from guard.cli import rules as authoring
from guard.context import Context
from guard.engine import analyze, rule_examples
from guard.policy import classify as classifier
from guard.policy.facts import facts_for
from guard.ruleset import compile as rcompile
from guard.ruleset import layers as rlayers
from guard.ruleset import load as loader
from guard.ruleset import load as rload
from guard.ruleset import read as rread
from guard.ruleset.programs import compile_spec, read
from tests.conftest import guard_bin

pytestmark = pytest.mark.usefixtures("isolated_rules")

CTX = dict(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})


def facts(command: str, rules: tuple[str, ...] = ()) -> list[dict]:
    ctx = Context.from_environ(rule_paths=rules, **CTX) if rules else Context.from_environ(**CTX)
    rs = rload.load_for(ctx, rule_examples)
    ctx = classifier.effective_context(ctx, rs)
    res = resolve.resolve(parse.parse(command), ctx)
    return [facts_for(inv, classifier.world_of(ctx, rs)) for inv in res.invocations]


def verdict(command: str, rules: tuple[str, ...] = ()) -> tuple[str, str | None]:
    ctx = Context.from_environ(rule_paths=rules, **CTX) if rules else Context.from_environ(**CTX)
    v = analyze(command, ctx)
    return v.verdict, v.rule


def test_the_reader_skips_option_values_before_and_after_the_subcommand() -> None:
    spec = compile_spec("glab", {"global_options": {"with_value": ["-R"]}, "with_value": ["-R", "--repo"]})
    r = read(("glab", "-R", "g/p", "mr", "--repo=g/q", "create", "-abc", "--", "-x"), spec)
    assert (r.subcommand, r.args) == ("mr", ("create", "-x"))
    assert {"--repo", "-abc", "-a", "-b", "-c"} <= r.flags
    assert r.global_options == (("-R", "g/p"),) and r.options == (("--repo", "g/q"),)


def test_a_program_without_subcommands_has_only_args_and_flags() -> None:
    r = read(("curl", "-s", "https://x"), compile_spec("curl", {"subcommand": False}))
    assert (r.subcommand, r.args, r.flags) == (None, ("https://x",), frozenset({"-s"}))


@pytest.mark.parametrize("command,sub,action", [
    ("glab mr create --fill", "mr", "create"),
    ("glab -R group/proj mr list", "mr", "list"),
    ("gh --repo o/r pr create", "pr", "create"),
    ("git -C /tmp/x stash list", "stash", "list"),
    ("git-upload-pack /tmp/x", "upload-pack", "/tmp/x"),
])
def test_every_shipped_spec_gives_subcommand_and_action(command, sub, action) -> None:
    (f,) = facts(command)
    assert (f["subcommand"], f["action"]) == (sub, action)


def test_glab_api_is_an_http_call_to_gitlab() -> None:
    (f,) = facts("glab api -X POST projects/1/merge_requests")
    assert (f["forge"], f["http_path"], f["http_write"]) == ("gitlab", "/api/v4/projects/1/merge_requests", True)
    (f,) = facts("glab api graphql -f query='mutation { x }'")
    assert (f["http_path"], f["graphql"], f["http_write"]) == ("/api/graphql", True, True)


@pytest.mark.parametrize("command,rule", [
    ("glab mr create --fill", "glab-mr-create"), ("glab mr merge 3", "glab-write"), ("glab mr note 3 -m x", "glab-write"),
    ("glab mr approve 3", "glab-write"), ("glab release create v1", "glab-write"), ("glab repo create p", "glab-write"),
    ("glab repo fork g/p", "glab-write"), ("glab api -X PUT projects/1", "glab-api-write"),
    ("glab auth token", "glab-auth"), ("glab auth status", "glab-auth"), ("glab auth login", "glab-auth"),
    ("curl -X POST https://gitlab.com/api/v4/projects/1/issues", "http-gitlab-write"),
    ("curl -d '{\"query\":\"mutation{x}\"}' https://gitlab.com/api/graphql", "http-gitlab-write"),
    ("echo $GITLAB_TOKEN", "token-variable"), ("echo $CI_JOB_TOKEN", "token-variable"), ("echo $GL_TOKEN", "token-variable"),
])
def test_the_gitlab_pack_refuses_writes_and_token_searches(command, rule) -> None:
    assert verdict(command, ("@gitlab",)) == ("refuse", rule)


@pytest.mark.parametrize("command", ["glab mr list", "glab mr view 3", "glab api projects/1",
                                     "curl https://gitlab.com/api/v4/projects/1", "glab repo clone g/p /tmp/p"])
def test_the_gitlab_pack_allows_reads(command) -> None:
    assert verdict(command, ("@gitlab",))[0] == "allow"


@pytest.mark.parametrize("command", ["curl -s -X POST https://gitlab.com/api/v4/projects -d name=x",
                                     "http POST gitlab.com/api/v4/projects/1/issues title=x", "glab mr create --fill",
                                     "glab api -X PUT projects/1", "curl -X POST https://gitlab.com/oauth/token -d x"])
def test_without_the_gitlab_pack_publishing_to_gitlab_is_not_refused(command) -> None:
    """SPEC limits publish refusals to GitHub hosts by default: the GitLab forge is off until
    GUARD_RULES names its pack."""
    assert verdict(command) == ("allow", None)


def test_the_shipped_packs_lint_and_pass_their_examples() -> None:
    """A pack is off by default, so CI's guard rules test of the shipped set does not run its
    examples: each is named (@NAME) and run here."""
    packs = sorted(p.stem for p in (rlayers.shipped_rules_dir() / "packs").glob("*.yaml"))
    assert "gitlab" in packs
    for name in packs:
        for sub in ("lint", "test"):
            p = subprocess.run([guard_bin(), "rules", sub, f"@{name}"], capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, (name, sub, p.stdout[-2000:], p.stderr)


@pytest.mark.parametrize("command,rule", [("echo $GITLAB_TOKEN", "token-variable"), ("glab auth token", "glab-auth"),
                                          ("grep -rn glpat- ~", "token-pattern-search")])
def test_without_the_gitlab_pack_a_gitlab_token_search_is_still_one(command, rule) -> None:
    assert verdict(command) == ("refuse", rule)


def test_no_python_module_of_the_pipeline_names_gitlab_or_glab() -> None:
    # guard/audit/reports/report.py's command normaliser keeps its own table of subcommand depths (glab
    # among them); it reads logs, not commands, and is left to the audit work.
    root = Path(authoring.__file__).resolve().parents[1]
    named = [str(p) for p in root.rglob("*.py") if p.parent.name != "audit"
             and any(w in p.read_text(encoding="utf-8").lower() for w in ("gitlab", "glab"))]
    assert named == []


NEW_PROGRAM = """\
programs:
  - program: terraform
    global_options:
      with_value: [-chdir]
rules:
  - id: tf-apply
    category: mutate
    message: "Refused: {what}. Infrastructure changes go through the deploy pipeline."
    match: {program: terraform, subcommand: [apply, destroy], flags_none: [-help]}
    examples:
      refuse: ["terraform apply -auto-approve", "terraform -chdir=infra destroy"]
      allow: ["terraform plan", "terraform apply -help", "echo terraform apply"]
"""


def test_a_rule_for_a_program_guard_never_heard_of_in_yaml_alone(tmp_path: Path) -> None:
    f = tmp_path / "tf.yaml"
    f.write_text(NEW_PROGRAM)
    p = subprocess.run([guard_bin(), "rules", "test", str(f)], capture_output=True, text=True)
    assert (p.returncode, p.stdout.strip().splitlines()[-1].split(",")[0]) == (0, "5/5 command examples passed")
    assert verdict("terraform -chdir=infra apply", (str(f),)) == ("refuse", "tf-apply")
    assert verdict("terraform plan -out x", (str(f),))[0] == "allow"


def _lint(tmp_path: Path, text: str) -> list[rread.Diagnostic]:
    f = tmp_path / "mine.yaml"
    f.write_text(textwrap.dedent(text))
    c = rcompile.compile_files(rlayers.rule_layers((str(f),), None), examples="none")
    return [d for d in c.diagnostics if d.file == str(f)]


def test_lint_flags_a_fact_the_named_program_can_never_have(tmp_path: Path) -> None:
    diags = _lint(tmp_path, """\
        rules:
          - id: a
            category: mutate
            message: "Refused: {what}."
            match: {program: terraform, subcommand: apply}
          - id: b
            category: mutate
            message: "Refused: {what}."
            match: {program: glab, repo: tree}
          - id: c
            category: mutate
            message: "Refused: {what}."
            match: {program: [git, cp], subcommand: push}
        """)
    assert [(d.kind, d.line, d.field) for d in diags] == [
        ("impossible-fact", 5, "rules[0].match.subcommand"), ("impossible-fact", 9, "rules[1].match.repo")]
    assert "terraform has no program spec" in diags[0].message


def test_a_config_list_is_extended_with_a_plus_key(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("config:\n  token_vars+: [MY_TOKEN]\n")
    rs = loader.load((str(f),), None, run=rule_examples)
    assert not rs.errors and {"MY_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN"} <= set(rs.config["token_vars"])
    assert verdict("echo $MY_TOKEN", (str(f),)) == ("refuse", "token-variable")
    diags = _lint(tmp_path, "config:\n  strict+: [x]\n  token_vars+: [1x]\n")
    assert [(d.kind, d.field) for d in diags] == [("unknown-key", "config.strict+"), ("bad-config", "config.token_vars+[0]")]



def test_each_context_is_classified_in_its_own_world() -> None:
    """classify keeps the last context's world for the next command; a command in another
    context (other trees, another environment) still gets its own."""
    from guard.context import Context
    from guard.engine import analyze

    plain = {"HOME": "/root"}
    gitdir = {"HOME": "/root", "GIT_DIR": "/workspace/r/.git"}
    cases = [(("/workspace",), plain, "allow"), (("/tmp",), plain, "refuse"), (("/workspace",), plain, "allow"),
             (("/workspace",), gitdir, "refuse"), (("/workspace",), plain, "allow")]
    got = [analyze("git status", Context.from_environ(cwd="/tmp/x", trees=trees, env=env)).verdict
           for trees, env, _ in cases]
    assert got == [want for *_, want in cases]
