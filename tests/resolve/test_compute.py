"""Static evaluation of deterministic command substitutions.

Every modelled case is checked twice: against the expected text, and against what real bash
prints for the same pipeline (skipped where bash is missing), so the model cannot drift from
the shell it imitates.
"""

from __future__ import annotations

import base64
import shlex
import shutil
import subprocess

import pytest

from guard.resolve.compute import MAX_BYTES, SUPPORTED, evaluate

P = list[tuple[str, ...]]

CASES: list[tuple[P, str]] = [
    # echo
    ([("echo", "git")], "git\n"),
    ([("echo", "git", "push")], "git push\n"),
    ([("echo",)], "\n"),
    ([("echo", "-n", "git")], "git"),
    ([("echo", "-e", "g\\x69t\\tpush")], "git\tpush\n"),
    ([("echo", "-e", "\\0147it")], "git\n"),
    ([("echo", "-e", "git\\c push")], "git"),
    ([("echo", "-E", "a\\tb")], "a\\tb\n"),
    ([("echo", "a\\tb")], "a\\tb\n"),
    ([("echo", "-ne", "a\\n")], "a\n"),
    ([("echo", "-x", "a")], "-x a\n"),
    ([("echo", "--", "a")], "-- a\n"),
    # printf
    ([("printf", "%s", "git")], "git"),
    ([("printf", "%s\\n", "git")], "git\n"),
    ([("printf", "%s %s", "git", "push")], "git push"),
    ([("printf", "%s-", "a", "b", "c")], "a-b-c-"),
    ([("printf", "%s=%s\\n", "a", "b", "c")], "a=b\nc=\n"),
    ([("printf", "%d|%5s|%-3d|", "42", "ab", "7")], "42|   ab|7  |"),
    ([("printf", "%03d", "7")], "007"),
    ([("printf", "%x %o %X", "255", "8", "171")], "ff 10 AB"),
    ([("printf", "%d", "'A")], "65"),
    ([("printf", "%c", "git")], "g"),
    ([("printf", "%b", "g\\151t\\n")], "git\n"),
    ([("printf", "%b", "a\\nb\\c zz")], "a\nb"),
    ([("printf", "\\147\\x69t")], "git"),
    ([("printf", "%%s")], "%s"),
    ([("printf", "%q\\n", "a b")], "a\\ b\n"),
    ([("printf", "%q", "it's")], "it\\'s"),
    ([("printf", "%q", "")], "''"),
    ([("printf", "%q", "x\ty")], "$'x\\ty'"),
    ([("printf", "%.2s", "git")], "gi"),
    ([("printf", "%5.1f", "3.14159")], "  3.1"),
    ([("printf", "%s")], ""),
    ([("printf", "--", "%s", "x")], "x"),
    # base64 / xxd
    ([("echo", "Z2l0"), ("base64", "-d")], "git"),
    ([("echo", "Z2l0IHB1c2g="), ("base64", "--decode")], "git push"),
    ([("echo", "-n", "git push"), ("base64",)], "Z2l0IHB1c2g=\n"),
    ([("printf", "%s", "Z2l0\nIHB1\nc2g="), ("base64", "-d")], "git push"),
    ([("echo", "Z2l0!!"), ("base64", "-di")], "git"),
    ([("echo", "67697420707573680a"), ("xxd", "-r", "-p")], "git push\n"),
    ([("echo", "6769 74"), ("xxd", "-r", "-p")], "git"),
    ([("printf", "git"), ("xxd", "-p")], "676974\n"),
    # rev, tr, cut
    ([("echo", "hsup tig"), ("rev",)], "git push\n"),
    ([("printf", "ab\\ncd\\n"), ("rev",)], "ba\ndc\n"),
    ([("echo", "GIT PUSH"), ("tr", "A-Z", "a-z")], "git push\n"),
    ([("echo", "GIT"), ("tr", "[:upper:]", "[:lower:]")], "git\n"),
    ([("echo", "g_i_t"), ("tr", "-d", "_")], "git\n"),
    ([("echo", "giiit"), ("tr", "-s", "i")], "git\n"),
    ([("echo", "tvg"), ("tr", "a-z", "n-za-m")], "git\n"),
    ([("echo", "g1i2t3"), ("tr", "-cd", "a-z")], "git"),
    ([("echo", "abc"), ("tr", "abc", "x")], "xxx\n"),
    ([("echo", "a.b"), ("tr", ".", "\\n")], "a\nb\n"),
    ([("echo", "x:git:y"), ("cut", "-d:", "-f2")], "git\n"),
    ([("echo", "x:git:push"), ("cut", "-d", ":", "-f", "2-")], "git:push\n"),
    ([("echo", "a b c"), ("cut", "-d", " ", "-f1,3")], "a c\n"),
    ([("echo", "xxgitxx"), ("cut", "-c3-5")], "git\n"),
    ([("echo", "gitpush"), ("cut", "-c", "-3")], "git\n"),
    ([("echo", "nodelim"), ("cut", "-d:", "-f2")], "nodelim\n"),
    ([("echo", "nodelim"), ("cut", "-s", "-d:", "-f2")], ""),
    # cat, head, tail
    ([("echo", "git"), ("cat",)], "git\n"),
    ([("echo", "git"), ("cat", "-")], "git\n"),
    ([("printf", "a\\nb\\nc\\n"), ("head", "-n", "1")], "a\n"),
    ([("printf", "a\\nb\\nc\\n"), ("head", "-2")], "a\nb\n"),
    ([("printf", "a\\nb\\nc\\n"), ("head", "-n", "-1")], "a\nb\n"),
    ([("printf", "gitpush"), ("head", "-c", "3")], "git"),
    ([("printf", "a\\nb\\nc\\n"), ("tail", "-n", "1")], "c\n"),
    ([("printf", "a\\nb\\nc\\n"), ("tail", "-n", "+2")], "b\nc\n"),
    ([("printf", "pushgit"), ("tail", "-c", "3")], "git"),
    # basename, dirname, true
    ([("basename", "/usr/bin/git")], "git\n"),
    ([("basename", "/a/b/c.txt", ".txt")], "c\n"),
    ([("basename", "-s", ".sh", "/x/a.sh", "b.sh")], "a\nb\n"),
    ([("basename", "/a/b/")], "b\n"),
    ([("basename", "/")], "/\n"),
    ([("dirname", "/usr/bin/git")], "/usr/bin\n"),
    ([("dirname", "git")], ".\n"),
    ([("dirname", "/git")], "/\n"),
    ([("dirname", "a//b//")], "a\n"),
    ([("true",)], ""),
    # chains
    ([("echo", "aGVsbG8K"), ("base64", "-d"), ("tr", "a-z", "A-Z")], "HELLO\n"),
    ([("echo", "hsup tig"), ("rev",), ("cut", "-d", " ", "-f1")], "git\n"),
    ([("printf", "%s", "tig"), ("rev",), ("base64",), ("base64", "-d")], "git"),
]


def _bash_of(pipeline: P) -> str:
    return " | ".join(shlex.join(argv) for argv in pipeline)


@pytest.mark.parametrize(("pipeline", "expected"), CASES, ids=[_bash_of(p)[:60] for p, _ in CASES])
def test_evaluate(pipeline: P, expected: str) -> None:
    assert evaluate(pipeline) == expected


_BASH = shutil.which("bash")


@pytest.mark.skipif(_BASH is None, reason="bash not installed")
@pytest.mark.parametrize(("pipeline", "expected"), CASES, ids=[_bash_of(p)[:60] for p, _ in CASES])
def test_matches_real_bash(pipeline: P, expected: str) -> None:
    real = subprocess.run([_BASH, "--norc", "--noprofile", "-c", _bash_of(pipeline)], capture_output=True,
                          text=True, check=False, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}).stdout
    assert real == expected


# --------------------------------------------------------------------------- lookups


@pytest.mark.parametrize(
    ("pipeline", "expected"),
    [
        ([("which", "git")], "/usr/bin/git\n"),
        ([("command", "-v", "git")], "/usr/bin/git\n"),
        ([("command", "-v", "gh")], "/usr/bin/gh\n"),
        ([("which", "-a", "git")], "/usr/bin/git\n"),
        ([("which", "/opt/x/git")], "/opt/x/git\n"),
        ([("command", "-v", "cd")], "cd\n"),
        ([("command", "-v", "echo")], "echo\n"),
        ([("/usr/bin/which", "git")], "/usr/bin/git\n"),
    ],
)
def test_lookups_use_a_neutral_path(pipeline: P, expected: str) -> None:
    assert evaluate(pipeline) == expected


def test_lookup_result_feeds_basename() -> None:
    path = evaluate([("command", "-v", "git")])
    assert path is not None
    assert evaluate([("basename", path.strip())]) == "git\n"


# --------------------------------------------------------------------------- unknown on purpose

UNKNOWN_CASES: list[tuple[P, str | None]] = [
    ([("cat", "/etc/passwd")], None),  # reads a file
    ([("cat",)], None),  # reads the terminal
    ([("base64", "-d", "secret.txt")], None),
    ([("head", "-n", "1", "f")], None),
    ([("date",)], None),  # not deterministic
    ([("git", "rev-parse", "HEAD")], None),  # runs git
    ([("curl", "https://x")], None),
    ([("printf", "-v", "x", "y")], None),  # assigns a variable
    ([("command", "git", "push")], None),  # runs git
    ([("echo", "!!!"), ("base64", "-d")], None),  # invalid input
    ([("echo", "Z2l"), ("base64", "-d")], None),  # truncated
    ([("echo", "//79"), ("base64", "-d")], None),  # binary output
    ([("printf", "%d", "abc")], None),  # bash prints an error
    ([("tr", "a-z")], None),
    ([("echo", "x"), ("tr", "z-a", "a-z")], None),
    ([("echo", "x"), ("cut", "-f")], None),
    ([("echo", "x"), ("sed", "s/x/y/")], None),
    ([], None),
    ([()], None),
    ([("which",)], None),
    ([("which", "$(x)")], None),
]


@pytest.mark.parametrize(("pipeline", "expected"), UNKNOWN_CASES, ids=[repr(p)[:60] for p, _ in UNKNOWN_CASES])
def test_unknown_stays_unknown(pipeline: P, expected: str | None) -> None:
    assert evaluate(pipeline) is expected


def test_stdin_argument_feeds_first_stage() -> None:
    assert evaluate([("base64", "-d")], stdin="Z2l0\n") == "git"
    assert evaluate([("rev",)], stdin="tig\n") == "git\n"
    assert evaluate([("echo", "x")], stdin="ignored") == "x\n"


def test_supported_set() -> None:
    assert {"echo", "printf", "base64", "xxd", "rev", "tr", "cut", "cat", "head", "tail", "which", "command",
            "basename", "dirname", "true"} <= SUPPORTED


# --------------------------------------------------------------------------- bounds


def test_one_megabyte_base64_blob() -> None:
    payload = ("git push\n" * 90_000)[: 700_000]
    blob = base64.b64encode(payload.encode()).decode()
    assert len(blob) > 900_000
    assert evaluate([("base64", "-d")], stdin=blob) == payload


def test_input_over_cap_is_unknown() -> None:
    assert evaluate([("cat",)], stdin="x" * (MAX_BYTES + 1)) is None


def test_output_over_cap_is_unknown() -> None:
    big = "y" * (MAX_BYTES // 2 + 10)
    assert evaluate([("echo", big, big)]) is None
    assert evaluate([("printf", "%s%s", big, big)]) is None


def test_printf_repeat_is_bounded() -> None:
    args = tuple(str(i) for i in range(200_000))
    assert evaluate([("printf", "%s-----\\n", *args)]) is None


def test_huge_width_is_unknown() -> None:
    assert evaluate([("printf", "%2000000s", "x")]) is None


def test_huge_tr_range_is_bounded() -> None:
    assert evaluate([("echo", "x"), ("tr", "\\000-\\377", "a")]) is not None
