"""Interactive guard-shell on a real terminal (pexpect): one live bash session, every complete
command checked with that session's current state."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pexpect
import pytest
import shellkit

PROMPT = "PS1>> "


@pytest.fixture
def session(fake_shell: str, sandbox: dict[str, Path]):
    env = shellkit.base_env(sandbox["home"], sandbox["tree"], TERM="xterm", PS1=PROMPT)
    env["FAKE_ENGINE_LOG"] = str(sandbox["home"] / "engine.jsonl")
    child = pexpect.spawn(
        fake_shell, ["--norc"], env=env, cwd=str(sandbox["scratch"]), encoding="utf-8", timeout=10,
        dimensions=(40, 120),
    )
    child.expect_exact(PROMPT)
    yield child
    if child.isalive():
        child.terminate(force=True)


def do(child: pexpect.spawn, line: str) -> str:
    """Type one line, wait for the next prompt, return what was printed in between."""
    child.sendline(line)
    child.expect_exact(PROMPT)
    return child.before.replace("\r\n", "\n")


def engine_calls(sandbox: dict[str, Path]) -> list[dict]:
    return [json.loads(x) for x in (sandbox["home"] / "engine.jsonl").read_text().splitlines()]


def test_alias_from_an_earlier_line_is_seen(session, sandbox) -> None:
    do(session, "alias g=git")
    out = do(session, f"touch {sandbox['scratch']}/canary; g push origin")
    assert "guard-fake: refused git push origin" in out
    assert not (sandbox["scratch"] / "canary").exists()
    assert do(session, "echo status=$?").endswith("status=126\n")


def test_function_variable_and_cwd_are_passed(session, sandbox) -> None:
    do(session, "pub() { git push; }")
    do(session, "FOO=bar")
    do(session, f"cd {sandbox['tree']}")
    assert "refused" in do(session, "pub")
    last = engine_calls(sandbox)[-1]
    assert last["command"] == "pub\n"
    assert last["functions"] == ["pub"]
    assert last["env_FOO"] == "bar"
    assert last["cwd"] == str(sandbox["tree"])


def test_cd_out_of_the_tree_allows_git(session, sandbox) -> None:
    do(session, f"cd {sandbox['tree']}")
    assert "guard-fake: refused git --version" in do(session, "git --version")
    do(session, f"cd {sandbox['scratch']}")
    assert "git version" in do(session, "git --version")


def test_session_variables_cannot_change_the_trees(session, sandbox) -> None:
    do(session, "export GUARD_TREE=/nowhere")
    do(session, f"cd {sandbox['tree']}")
    assert "refused" in do(session, "git status")


def test_heredoc_typed_line_by_line(session) -> None:
    session.sendline("cat <<EOF")
    session.expect_exact("> ")
    session.sendline("first $((1+1))")
    session.expect_exact("> ")
    session.sendline("EOF")
    session.expect_exact(PROMPT)
    assert session.before.replace("\r\n", "\n").endswith("first 2\n")


def test_continuations_and_open_quotes(session) -> None:
    session.sendline('echo "a')
    session.expect_exact("> ")
    session.sendline('b" \\')
    session.expect_exact("> ")
    session.sendline("c")
    session.expect_exact(PROMPT)
    assert session.before.replace("\r\n", "\n").endswith("a\nb c\n")


def test_refusal_leaves_the_session_alive(session, sandbox) -> None:
    do(session, "X=kept")
    assert "refused" in do(session, "git push")
    assert do(session, "echo $X").endswith("kept\n")


def test_ctrl_c_interrupts_the_command_not_the_session(session) -> None:
    session.sendline("echo started; sleep 30")
    session.expect_exact("started\r\n")
    time.sleep(0.2)
    session.sendintr()
    session.expect_exact(PROMPT, timeout=5)
    assert do(session, "echo rc=$?").endswith("rc=130\n")


def test_ctrl_c_at_the_prompt_drops_the_line(session) -> None:
    session.send("echo never")
    time.sleep(0.1)
    session.sendintr()
    session.expect_exact(PROMPT)
    assert "never" not in do(session, "echo next").split("\n", 1)[-1]


def test_ctrl_d_ends_the_session_with_the_last_status(session) -> None:
    do(session, "false")
    session.sendeof()
    session.expect(pexpect.EOF)
    session.close()
    assert session.exitstatus == 1


def test_exit_status(session) -> None:
    session.sendline("exit 7")
    session.expect(pexpect.EOF)
    session.close()
    assert session.exitstatus == 7


def test_read_gets_the_typed_line(session) -> None:
    session.sendline("read x; echo got=$x")
    time.sleep(0.3)
    session.sendline("typed")
    session.expect_exact("got=typed")
    session.expect_exact(PROMPT)


def test_lines_typed_ahead_are_checked_too(session, sandbox) -> None:
    session.sendline("sleep 0.5")
    time.sleep(0.1)
    session.sendline(f"touch {sandbox['scratch']}/canary; git push")
    session.sendline("echo after")
    session.expect_exact("guard-fake: refused git push")
    session.expect_exact("after\r\n")
    session.expect_exact(PROMPT)
    assert not (sandbox["scratch"] / "canary").exists()


def test_job_control(session) -> None:
    session.sendline("echo started; sleep 30")
    session.expect_exact("started\r\n")
    time.sleep(0.2)
    session.sendcontrol("z")
    session.expect("Stopped")
    session.expect_exact(PROMPT)
    assert "sleep 30" in do(session, "jobs")
    do(session, "kill %1")
    out = do(session, "sleep 0.1 & wait $!; echo bg=$?")
    assert "bg=0" in out


def test_full_screen_program(session, sandbox) -> None:
    (sandbox["scratch"] / "f.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    session.sendline("less f.txt")
    session.expect_exact("line 10")
    session.send("q")
    session.expect_exact(PROMPT)
    assert do(session, "echo back").endswith("back\n")


def test_ctrl_z_at_the_prompt_does_not_stop_the_session(session) -> None:
    session.sendcontrol("z")
    time.sleep(0.2)
    assert do(session, "echo alive").endswith("alive\n")


def test_engine_failure_fails_open_in_a_session(session) -> None:
    out = do(session, "echo 'ran FAKE_RAISE'")
    assert "guard: internal error, running the command unchecked: RuntimeError: fake engine failure" in out
    assert out.endswith("ran FAKE_RAISE\n")


def test_prompt_follows_ps1_changes(session) -> None:
    session.sendline("PS1='new\\$ '")
    session.expect_exact("new$ " if os.geteuid() else "new# ")


def test_sigterm_to_the_guard_ends_the_session_cleanly(fake_shell: str, sandbox) -> None:
    tmp = sandbox["home"] / "tmp"
    tmp.mkdir()
    env = shellkit.base_env(sandbox["home"], sandbox["tree"], TERM="xterm", PS1=PROMPT, TMPDIR=str(tmp))
    child = pexpect.spawn(fake_shell, ["--norc"], env=env, encoding="utf-8", timeout=10)
    child.expect_exact(PROMPT)
    assert len(list(tmp.iterdir())) == 1  # the session's private folder
    bash_pid = int(do(child, "echo pid=$$").split("pid=")[-1].split()[0])
    child.kill(15)
    child.expect(pexpect.EOF)
    child.close()
    assert list(tmp.iterdir()) == []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(bash_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the session's bash outlived the guard")


def test_kill_int_to_the_guard_is_ignored(session) -> None:
    session.kill(2)  # at the prompt: like ^C, a fresh prompt (bash does the same)
    session.expect_exact(PROMPT)
    assert do(session, "echo alive").endswith("alive\n")
    session.sendline("echo started; sleep 1; echo finished")  # and while a command runs
    session.expect_exact("started\r\n")
    session.kill(2)
    session.expect_exact("finished", timeout=5)
    session.expect_exact(PROMPT)



def test_vi_edits_a_file(session, sandbox) -> None:
    session.sendline("vi -u NONE notes.txt")
    time.sleep(1.0)
    session.send("ihello from vi\x1b")
    time.sleep(0.3)
    session.send(":wq\r")
    session.expect_exact(PROMPT, timeout=10)
    assert (sandbox["scratch"] / "notes.txt").read_text() == "hello from vi\n"
