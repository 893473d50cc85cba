"""guard-shell as a process: refusals run nothing, failures fail open, odd input stays bounded.

These use the test-double engine (tests/shell/fake_engine.py), which refuses ``git push``;
tests/integration/test_shell_engine.py repeats the essentials with the real engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import shellkit

REFUSAL = b"guard-fake: refused git push\n"


def run(shell: str, args: list, sandbox: dict[str, Path], stdin: bytes = b"", **env: str):
    """Run ``shell`` with ``args`` in the scratch dir; the fake guard-shell's folder leads PATH
    (for both shells, so their environments are the same)."""
    e = shellkit.base_env(sandbox["home"], sandbox["tree"], **env)
    e["PATH"] = f"{sandbox['bin']}:{e['PATH']}"
    return subprocess.run([shell, *args], input=stdin, capture_output=True, cwd=sandbox["scratch"], env=e, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "touch canary; git push"],
        ["-lc", "touch canary; git push"],
        ["-euo", "pipefail", "-c", "touch canary\ngit push origin"],
        ["-c", "touch canary; git push", "name", "arg1"],
        ["--norc", "--noprofile", "-c", "touch canary && git push"],
    ],
)
def test_refused_command_runs_nothing(fake_shell: str, sandbox, args: list) -> None:
    p = run(fake_shell, args, sandbox)
    assert p.returncode == 126
    assert p.stdout == b""
    assert p.stderr.startswith(b"guard-fake: refused git push")
    assert p.stderr.count(b"\n") == 1
    assert not (sandbox["scratch"] / "canary").exists()


def test_refusal_message_is_exact(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "git push"], sandbox)
    assert (p.returncode, p.stdout, p.stderr) == (126, b"", REFUSAL)


def test_refusal_is_audited(fake_shell: str, sandbox) -> None:
    run(fake_shell, ["-c", "git push"], sandbox, GUARD_AGENT="agent-7")
    lines = (sandbox["home"] / "audit.jsonl").read_text().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert (rec["verdict"], rec["command"], rec["agent"], rec["category"]) == ("refuse", "git push", "agent-7", "publish")


def test_stdin_script_runs_command_by_command_as_bash_reads_it(fake_shell: str, sandbox) -> None:
    # bash runs each complete command as soon as it has read it; the refused one runs nothing,
    # leaves $? at 126, and the shell goes on
    p = run(fake_shell, [], sandbox, stdin=b"touch canary\necho ran\ngit push\necho after=$?\ntouch x; git push\n")
    assert (p.returncode, p.stdout, p.stderr) == (126, b"ran\nafter=126\n", REFUSAL + REFUSAL)
    assert (sandbox["scratch"] / "canary").exists()
    assert not (sandbox["scratch"] / "x").exists()


def test_script_file_is_checked(fake_shell: str, sandbox) -> None:
    (sandbox["scratch"] / "s.sh").write_text("touch canary\ngit push\n")
    p = run(fake_shell, ["s.sh", "a"], sandbox)
    assert (p.returncode, p.stderr) == (126, REFUSAL)
    assert not (sandbox["scratch"] / "canary").exists()


def test_dash_s_with_arguments_is_checked(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-s", "x"], sandbox, stdin=b"touch canary; git push\n")
    assert p.returncode == 126 and not (sandbox["scratch"] / "canary").exists()


@pytest.mark.parametrize(
    "env",
    [
        {"GUARD_DISABLE": "1"},
        {"GUARD_OFF": "1"},
        {"GUARD_SKIP": "1"},
        {"GUARD_ANNOTATING": "1"},
        {"GUARD_FAIL": "open"},
        {"GUARD_REAL_SHELL": "/bin/bash"},
        {"GUARD_STRICT": "0"},
    ],
)
def test_nested_guard_shell_checks_again(fake_shell: str, sandbox, env: dict) -> None:
    inner = "touch canary; git push"
    outer = "export " + " ".join(f"{k}={v}" for k, v in env.items()) + f"; guard-shell -c '{inner}'; echo inner=$?"
    p = run(fake_shell, ["-c", outer], sandbox)
    assert p.returncode == 0
    assert p.stdout == b"inner=126\n"
    assert p.stderr == REFUSAL
    assert not (sandbox["scratch"] / "canary").exists()


def test_nested_through_stdin_and_script(fake_shell: str, sandbox) -> None:
    (sandbox["scratch"] / "inner.sh").write_text("touch canary\ngit push\n")
    p = run(fake_shell, ["-c", "guard-shell inner.sh; echo a=$?; echo 'git push' | guard-shell; echo b=$?"], sandbox)
    assert p.stdout == b"a=126\nb=126\n"
    assert not (sandbox["scratch"] / "canary").exists()


def test_engine_failure_fails_open(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "echo ran FAKE_RAISE; exit 3"], sandbox)
    assert p.returncode == 3
    assert p.stdout == b"ran FAKE_RAISE\n"
    assert p.stderr == b"guard: internal error, running the command unchecked: RuntimeError: fake engine failure\n"


def test_engine_failure_fail_closed(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "touch canary; : FAKE_RAISE"], sandbox, GUARD_FAIL="closed")
    assert p.returncode == 126
    assert p.stderr == (
        b"guard: internal error, refusing the command (GUARD_FAIL=closed): RuntimeError: fake engine failure\n"
    )
    assert not (sandbox["scratch"] / "canary").exists()


def test_invalid_utf8_argv_reaches_bash_unchanged(fake_shell: str, sandbox) -> None:
    log = sandbox["home"] / "engine.jsonl"
    p = run(fake_shell, [b"-c", b"printf '%s' '\xff\xfe' | od -An -tx1"], sandbox, FAKE_ENGINE_LOG=str(log))
    assert p.returncode == 0 and p.stdout.split() == [b"ff", b"fe"]
    assert json.loads(log.read_text())["command"] == "printf '%s' '\ufffd\ufffd' | od -An -tx1"


def test_invalid_utf8_refused(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, [b"-c", b"git push \xff"], sandbox)
    assert p.returncode == 126


def _both(shell: str, args: list, sandbox, stdin: bytes = b""):
    bash = run(shellkit.REAL_SHELL, args, sandbox, stdin=stdin)
    guarded = run(shell, args, sandbox, stdin=stdin)
    return bash, guarded


def test_nul_bytes_in_stdin_script(checked_shell: str, sandbox) -> None:
    bash, guarded = _both(checked_shell, [], sandbox, stdin=b"echo a\0b\necho c\n")
    assert (guarded.returncode, guarded.stdout, guarded.stderr) == (bash.returncode, bash.stdout, bash.stderr)


def test_nul_bytes_in_script_file(checked_shell: str, sandbox) -> None:
    (sandbox["scratch"] / "bin.sh").write_bytes(b"echo a\0\x01\x02\xff\n")
    bash, guarded = _both(checked_shell, ["bin.sh"], sandbox)
    assert (guarded.returncode, guarded.stderr) == (bash.returncode, bash.stderr)


def test_ten_megabyte_stdin_script(checked_shell: str, sandbox) -> None:
    # 10 MB in 10,000 commands: each is checked and run before the next is read
    script = b": " + b"x" * 1000 + b"\n"
    data = script * (10_000_000 // len(script)) + b"echo done\n"
    bash, guarded = _both(checked_shell, [], sandbox, stdin=data)
    assert guarded.returncode == bash.returncode == 0
    assert guarded.stdout == b"done\n"


def test_largest_dash_c_string(checked_shell: str, sandbox) -> None:
    big = ": " + "y" * (128 * 1024 - 20) + "; echo big"
    bash, guarded = _both(checked_shell, ["-c", big], sandbox)
    assert (guarded.returncode, guarded.stdout) == (bash.returncode, bash.stdout) == (0, b"big\n")


def test_ten_megabyte_dash_c_string_gets_a_clear_error(sandbox) -> None:
    # The kernel refuses a 10 MB argument, so call the entry point in-process, as a caller
    # that got past that limit would; bash itself cannot be started with it either.
    code = (
        f"import sys; sys.path.insert(0, {str(shellkit.HERE)!r}); import fake_engine; fake_engine.install();"
        "from guard.shell.main import run; sys.exit(run(['-c', 'echo ' + 'x' * 10_000_000]))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, cwd=sandbox["scratch"])
    assert p.returncode == 126
    assert p.stderr == b"guard: /bin/bash: Argument list too long\n"


@pytest.fixture
def sandbox(sandbox: dict[str, Path], fake_shell: str) -> dict[str, Path]:
    return {**sandbox, "bin": Path(fake_shell).parent}


@pytest.mark.parametrize(
    "command",
    [
        # bash needs minutes to *run* 1000 nested $( ), so that one is compared under -n
        "-n " + "echo " + "$(echo " * 1000 + "x" + ")" * 1000,
        "(" * 1000 + "echo deep" + ")" * 1000,
        "{ " * 1000 + "echo deep; " + "}; " * 1000,
        "a=1; " + "if true; then " * 1000 + "echo deep; " + "fi; " * 1000,
    ],
    ids=["cmdsub", "subshell", "group", "if"],
)
def test_thousand_deep_nesting_has_a_clear_result(checked_shell: str, sandbox, command: str) -> None:
    flags = ["-n"] if command.startswith("-n ") else []
    bash, guarded = _both(checked_shell, [*flags, "-c", command.removeprefix("-n ")], sandbox)
    if guarded.returncode == 126:  # refused or failed closed: one clear line, nothing run
        assert guarded.stdout == b"" and guarded.stderr.count(b"\n") == 1
    else:
        assert (guarded.returncode, guarded.stdout) == (bash.returncode, bash.stdout)
        extra = guarded.stderr.replace(bash.stderr, b"", 1)
        assert extra in (b"",) or extra.startswith(b"guard: internal error, running the command unchecked: ")


def test_missing_real_shell(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "echo hi"], sandbox, GUARD_REAL_SHELL="/nonexistent/bash")
    assert p.returncode == 127
    assert p.stderr == b"guard: /nonexistent/bash: No such file or directory\n"


def test_environment_is_untouched(fake_shell: str, sandbox) -> None:
    # LANG=C makes Python coerce the locale (adding LC_CTYPE); bash must not see that. The one
    # variable allowed to differ is the relay's nesting marker, GUARD_ANNOTATING.
    env = {"LC_ALL": "", "LANG": "C", "ODD": "a\nb"}
    bash = run(shellkit.REAL_SHELL, ["-c", "env | sort"], sandbox, **env)
    guarded = run(fake_shell, ["-c", "env | sort"], sandbox, **env)
    strip = lambda out: b"\n".join(x for x in out.split(b"\n") if not x.startswith(b"GUARD_ANNOTATING="))  # noqa: E731
    assert strip(guarded.stdout) == strip(bash.stdout)


def test_hot_path_imports_stay_light(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "true"], sandbox, PYTHONPROFILEIMPORTTIME="1")
    imported = {line.split("|")[-1].strip() for line in p.stderr.decode().splitlines() if "|" in line}
    for heavy in ("yaml", "bashlex", "pexpect", "subprocess", "tree_sitter", "guard.shell.interactive"):
        assert heavy not in imported, heavy
    assert "guard.shell.main" in imported


def test_no_python_traceback_on_bad_cwd(fake_shell: str, sandbox) -> None:
    gone = sandbox["scratch"] / "gone"
    gone.mkdir()
    e = shellkit.base_env(sandbox["home"], sandbox["tree"])
    p = subprocess.run(
        [shellkit.REAL_SHELL, "-c", f'cd {gone} && rmdir {gone} && "$0" -c "echo still"', fake_shell],
        capture_output=True,
        env=e,
        timeout=60,
    )
    assert b"Traceback" not in p.stderr
    assert p.stdout == b"still\n"


if os.environ.get("GUARD_SHELL_SKIP_SLOW"):  # pragma: no cover
    pytest.skip("slow tests skipped", allow_module_level=True)


def test_bash_env_file_is_checked(fake_shell: str, sandbox) -> None:
    (sandbox["home"] / "env.sh").write_text("touch canary\ngit push\n")
    p = run(fake_shell, ["-c", "echo hi"], sandbox, BASH_ENV=str(sandbox["home"] / "env.sh"))
    assert (p.returncode, p.stdout, p.stderr) == (126, b"", REFUSAL)
    assert not (sandbox["scratch"] / "canary").exists()


def test_bash_env_expansion_is_checked(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "echo hi"], sandbox, BASH_ENV="$(touch canary; git push)")
    assert p.returncode == 126
    assert not (sandbox["scratch"] / "canary").exists()


def test_harmless_bash_env_runs(fake_shell: str, sandbox) -> None:
    (sandbox["home"] / "env.sh").write_text("GREETING=hello\n")
    p = run(fake_shell, ["-c", "echo $GREETING"], sandbox, BASH_ENV=str(sandbox["home"] / "env.sh"))
    assert (p.returncode, p.stdout) == (0, b"hello\n")


def test_exported_functions_are_passed_to_the_analysis(fake_shell: str, sandbox) -> None:
    p = run(fake_shell, ["-c", "git() { command git push; }; export -f git; guard-shell -c 'touch canary; git status'"], sandbox)
    assert p.stderr.startswith(b"guard-fake: refused git")
    assert not (sandbox["scratch"] / "canary").exists()


@pytest.mark.parametrize("disposition", ["''", "-"], ids=["ignored", "default"])
def test_inherited_sigint_disposition(checked_shell: str, sandbox, disposition: str) -> None:
    outer = f'trap {disposition} INT; "$0" -c "kill -INT \\$\\$; echo survived"; echo status=$?'
    bash = run(shellkit.REAL_SHELL, ["-c", outer, shellkit.REAL_SHELL], sandbox)
    guarded = run(shellkit.REAL_SHELL, ["-c", outer, checked_shell], sandbox)
    assert (guarded.returncode, guarded.stdout) == (bash.returncode, bash.stdout)



def _pids(shell: str, sandbox, env: dict, stderr: int) -> tuple[int, int, int]:
    """guard-shell's pid, and bash's $$ and $PPID for an analysed command it runs."""
    p = subprocess.Popen([shell, "-c", "x=$(echo hi); echo $$ $PPID"], cwd=sandbox["scratch"], env=env,
                         stdout=subprocess.PIPE, stderr=stderr)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    bash_pid, bash_ppid = map(int, out.split())
    return p.pid, bash_pid, bash_ppid


@pytest.mark.parametrize("how", ["nested", "stderr-null"])
def test_an_analysed_command_the_relay_would_not_annotate_is_execd(checked_shell: str, sandbox, how: str) -> None:
    """Under a guard that already relays (GUARD_ANNOTATING=1), or with stderr on /dev/null, an
    analysed command is exec'd like a plain one: bash keeps guard-shell's pid and there is no
    setpriv start. With stderr a pipe and no marker it runs under the relay, as a child."""
    env = shellkit.base_env(sandbox["home"], sandbox["tree"])
    env.pop("GUARD_ANNOTATING", None)
    if how == "nested":
        guard_pid, bash_pid, bash_ppid = _pids(checked_shell, sandbox, {**env, "GUARD_ANNOTATING": "1"},
                                               subprocess.PIPE)
    else:
        guard_pid, bash_pid, bash_ppid = _pids(checked_shell, sandbox, env, subprocess.DEVNULL)
    assert (bash_pid, bash_ppid) == (guard_pid, os.getpid())
    guard_pid, bash_pid, bash_ppid = _pids(checked_shell, sandbox, env, subprocess.PIPE)
    assert bash_pid != guard_pid and bash_ppid == guard_pid  # the relay's child
