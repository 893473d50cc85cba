"""The program catalogue as a rule author meets it: a new searcher, copier, writer or HTTP client
is one YAML entry; its examples are checked when the rules load; the facts follow the entry."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.ruleset.catalogue import Copy, Grammar, copy_operands, excludes_vcs, names_git_dir, request, words
from tests.conftest import guard_bin

pytestmark = pytest.mark.usefixtures("isolated_rules")

CTX = dict(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})


def verdict(command: str, rules: tuple[str, ...] = ()) -> tuple[str, str | None]:
    v = analyze(command, Context.from_environ(rule_paths=rules, **CTX))
    return v.verdict, v.rule


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [guard_bin(), "rules", "lint", str(path)], capture_output=True, text=True, timeout=120
    )


NEW_PROGRAMS = """\
programs:
  - program: mygrep
    subcommand: false
    searches:
      with_value: [-n]
      examples:
        - {command: "mygrep -n 3 needle a", reads: [a]}
  - program: mycopy
    subcommand: false
    copies:
      with_value: [--skip]
      excludes_vcs: [--plain]
      examples:
        - {command: "mycopy --skip x /tmp/r dest", sources: [/tmp/r], dest: dest, excludes_vcs: false}
  - program: mypost
    subcommand: false
    http:
      with_value: [-o]
      body: [--send]
      examples:
        - {command: "mypost --send x https://h/y", method: POST, urls: ["https://h/y"], body: x}
"""


def test_a_new_searcher_copier_and_http_client_are_yaml_entries(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text(NEW_PROGRAMS)
    assert lint(f).returncode == 0, lint(f).stdout
    rules = (str(f),)
    assert verdict("env | mygrep -i token", rules) == ("refuse", "env-search")
    assert verdict("env | mygrep -i token") == ("allow", None)  # unknown without the entry
    assert verdict("mygrep -rn ghp_ .", rules) == ("refuse", "token-pattern-search")
    assert verdict("mypost --send x https://api.github.com/repos/o/r/issues", rules)[0] == "refuse"
    assert verdict("mypost -o x https://api.github.com/repos/o/r", rules) == ("allow", None)
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    assert verdict(f"mycopy --skip x {repo} /workspace/app/r", rules) == ("refuse", "repo-copy-into-tree")
    assert verdict(f"mycopy --plain {repo} /workspace/app/r", rules) == ("allow", None)


def test_a_wrong_example_fails_lint_with_what_the_reader_found(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text(NEW_PROGRAMS.replace("reads: [a]", "reads: [needle, a]"))
    p = lint(f)
    assert p.returncode == 1
    assert (
        "searches.examples[0].reads" in p.stdout
        and "gives reads: ['a'], the example says ['needle', 'a']" in p.stdout
    )


def test_a_bad_catalogue_key_is_a_schema_mistake(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text(
        textwrap.dedent("""\
        programs:
          - program: mycopy
            copies: {one_operand: into-home}
    """)
    )
    p = lint(f)
    assert p.returncode == 1 and "copies.one_operand" in p.stdout


def test_token_words_come_from_the_config(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text('config:\n  token_words+: ["\\\\bbearer"]\n')
    assert verdict("env | grep -i bearer") == ("allow", None)
    assert verdict("env | grep -i bearer", (str(f),)) == ("refuse", "env-search")


@pytest.mark.parametrize(
    "args,want",
    [
        (["-sXPOST", "u"], [("-s", None), ("-X", "POST"), ("", "u")]),
        (["--data=a", "--data", "b", "--", "-x"], [("--data", "a"), ("--data", "b"), ("", "-x")]),
        (["-", "-A2"], [("", "-"), ("-A", "2")]),
    ],
)
def test_words_read_options_as_getopt_does(args: list[str], want: list) -> None:
    assert words(args, Grammar(with_value=frozenset({"-X", "--data", "-A"}))) == want


def test_a_copy_reads_its_target_directory_even_in_a_cluster() -> None:
    c = Copy(Grammar(with_value=frozenset({"-t"})), target_directory=frozenset({"-t"}))
    assert copy_operands(["-rt", "dest", "a", "b"], c) == (["a", "b"], "dest")


@pytest.mark.parametrize(
    "pattern,git",
    [
        (".git", True),
        (".git/", True),
        ("*/.git", True),
        ("/.git", True),
        (".g*", True),
        (".gitignore", False),
        ("*.py", False),
        (".github", False),
    ],
)
def test_an_exclusion_pattern_names_git_only_when_it_matches_a_git_folder(pattern: str, git: bool) -> None:
    assert names_git_dir(pattern) is git
    c = Copy(Grammar(with_value=frozenset({"--exclude"})), exclude_options=frozenset({"--exclude"}))
    assert excludes_vcs(["--exclude", pattern, "a", "b"], c) is git


def test_an_http_request_names_an_explicit_method_over_an_implied_one() -> None:
    from guard.ruleset.catalogue import Http

    h = Http(
        Grammar(with_value=frozenset({"-X", "-T"})),
        method=frozenset({"-X"}),
        implies=(("PUT", frozenset({"-T"})), ("HEAD", frozenset({"-I"}))),
    )
    assert request("curl", ["-T", "f", "-X", "POST", "u"], h).method == "POST"
    assert request("curl", ["-T", "f", "-I", "u"], h).method == "PUT"


@pytest.mark.parametrize(
    "command,want",
    [
        (
            "rsync -aC {repo}/ .",
            ("allow", None),
        ),  # -C's list holds .git/ (rsync(1)); run for real in test_catalogue_real
        ("rsync -a --exclude .gitignore {repo}/ .", ("refuse", "repo-copy-into-tree")),  # .git still travels
        ("cp -rt . {repo}", ("refuse", "repo-copy-into-tree")),  # -t DIR in a cluster names the destination
        ("touch -r .git/HEAD x", ("allow", None)),  # -r's value is read, not written
        ("env -u HOME | grep -i secret", ("refuse", "env-search")),  # -u's value is no command
        (
            "git -C /tmp/x -c a=b grep ghp_",
            ("refuse", "token-pattern-search"),
        ),  # git's grep subcommand, read by its spec
        (
            "http -a u:p POST api.github.com/repos/o/r/issues t=x",
            ("refuse", "http-github-write"),
        ),  # -a's value is no URL
        ("http -f api.github.com/repos/o/r", ("allow", None)),  # HTTPie sends a form without fields with GET
    ],
)
def test_verdicts_follow_the_programs_own_grammar(command: str, want: tuple, tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    assert verdict(command.format(repo=repo)) == want


def test_a_program_specified_twice_in_one_layer_is_a_mistake(tmp_path: Path) -> None:
    """A later entry replaces an earlier one whole, so two entries of one layer (awk's inline: in one
    file, its searches: in another) would silently lose one: lint names both places."""
    f = tmp_path / "mine.yaml"
    f.write_text(
        "programs:\n  - program: mygrep\n    subcommand: false\n"
        "  - program: [other, mygrep]\n    searches: {}\n"
    )
    p = lint(f)
    assert p.returncode == 1 and "'mygrep' is specified again" in p.stdout and "mine.yaml:2" in p.stdout
    g = tmp_path / "later.yaml"
    g.write_text("programs:\n  - program: awk\n    subcommand: false\n")  # a later layer may replace one
    assert lint(g).returncode == 0
