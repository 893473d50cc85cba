"""The relay with real processes: bytes, promptness, exit status, signals, terminals, nesting."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

REPO = Path(__file__).resolve().parents[2]
GIT_LINE = "fatal: could not read Username for 'https://github.com': terminal prompts disabled"
PY = sys.executable


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.pop("GUARD_ANNOTATING", None)
    e.update(GIT_TERMINAL_PROMPT="0", XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(REPO),
             GUARD_AUDIT_LOG=str(tmp_path / "audit.jsonl"), GUARD_TREE=str(tmp_path / "tree"))
    return e


def guard(*args: str) -> list[str]:
    return [PY, "-m", "guard.cli.annotate", "--", *args]


def run(args: list[str], env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(guard(*args), env=env, capture_output=True, timeout=60, **kw)


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


# --------------------------------------------------------------------------- bytes


def test_fifty_megabytes_of_binary_pass_byte_for_byte(tmp_path: Path, env) -> None:
    rng = random.Random(5)
    data = rng.randbytes(50 << 20)  # binary, with ~200k newlines scattered in it
    src = tmp_path / "blob"
    src.write_bytes(data)
    r = run(sh(f"cat '{src}' >&2; echo stdout-only"), env)
    assert r.returncode == 0
    assert hashlib.sha256(r.stderr).hexdigest() == hashlib.sha256(data).hexdigest()
    assert r.stdout == b"stdout-only\n"


def test_ten_megabyte_lines_pass_unchanged_and_a_long_last_lines_tail_is_matched(tmp_path: Path, env) -> None:
    line = bytes(range(11, 256)) * ((10 << 20) // 245)
    src = tmp_path / "line"
    # a 10 MB line, then a last line longer than the matcher's window, indented as pip indents,
    # with no newline at the end: git's error lies in that line's tail, after real whitespace
    src.write_bytes(line + b"\n" + b" " * 20000 + GIT_LINE.encode())
    r = run(sh(f"cat '{src}' >&2; exit 128"), env)
    assert r.returncode == 128
    body, sep, note = r.stderr.rpartition(b"\n[guard] ")
    assert sep and body == src.read_bytes()
    assert note.startswith(b"git could not authenticate") and note.endswith(b"\n")


def test_stdout_and_stdin_are_the_commands_own(env) -> None:
    r = run(sh("cat; echo err >&2"), env, input=b"in\x00put\n")
    assert r.stdout == b"in\x00put\n" and r.stderr == b"err\n"


def test_memory_stays_bounded_whatever_the_volume(tmp_path: Path, env) -> None:
    probe = (
        "import resource, subprocess, sys; "
        "subprocess.run(sys.argv[1:], stderr=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    cmd = sh("yes 'some ordinary log line, not matching anything' | head -c 300000000 >&2; "
             "head -c 100000000 /dev/zero >&2")
    out = subprocess.run([PY, "-c", probe, *guard(*cmd)], env=env, capture_output=True, text=True, timeout=120)
    peak_kib = int(out.stdout.strip())
    assert peak_kib < 80_000, f"peak RSS {peak_kib} KiB for 400 MB of stderr"


def test_a_line_reaches_the_reader_while_the_command_runs(env) -> None:
    p = subprocess.Popen(guard(*sh("echo first >&2; read x; echo second >&2")), env=env,
                         stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stderr.readline() == b"first\n"  # the command is still waiting on stdin here
    assert p.poll() is None
    p.stdin.write(b"go\n")
    p.stdin.close()
    assert p.stderr.read() == b"second\n"
    assert p.wait(10) == 0


# --------------------------------------------------------------------------- annotations


def test_annotation_is_appended_once_on_a_fresh_line(env) -> None:
    r = run(sh(f"printf \"%s\\n%s\" \"{GIT_LINE}\" \"{GIT_LINE} again, no newline\" >&2; exit 128"), env)
    assert r.returncode == 128
    lines = r.stderr.split(b"\n")
    assert lines[-1] == b"" and lines[-2].startswith(b"[guard] git could not authenticate")
    assert lines[-3].endswith(b"no newline")
    assert r.stderr.count(b"[guard] ") == 1


def test_nested_guards_annotate_once(env) -> None:
    inner = guard(*sh(f"echo \"{GIT_LINE}\" >&2; exit 128"))
    r = run(inner, env)
    assert r.returncode == 128 and r.stderr.count(b"[guard] ") == 1
    r2 = run(["env", "-u", "GUARD_ANNOTATING", *inner], env)
    assert r2.returncode == 128 and r2.stderr.count(b"[guard] ") == 1


def test_conditions_gate_annotations(tmp_path: Path, env) -> None:
    (tmp_path / "tree" / "p").mkdir(parents=True)
    cmd = sh("echo 'fatal: not a git repository (or any of the parent directories): .git' >&2; exit 128")
    inside = subprocess.run(guard(*cmd), env=env, capture_output=True, cwd=tmp_path / "tree" / "p")
    outside = subprocess.run(guard(*cmd), env=env, capture_output=True, cwd=tmp_path)
    assert inside.stderr.count(b"[guard] ") == 1 and b"no .git by design" in inside.stderr
    assert b"[guard]" not in outside.stderr
    no_env = run(sh(f"echo \"{GIT_LINE}\" >&2"), {**env, "GIT_TERMINAL_PROMPT": "1"})
    assert b"[guard]" not in no_env.stderr


def test_annotation_is_audited(tmp_path: Path, env) -> None:
    import json

    r = run(sh(f"echo \"{GIT_LINE}\" >&2; exit 128") + ["x", "https://github.com/o/r.git"], env)
    assert b'git_clone(url="https://github.com/o/r.git")' in r.stderr
    log = tmp_path / "audit.jsonl"
    if log.exists() and log.read_text().strip():  # the audit stage writes it (guard.audit.log)
        (rec,) = [json.loads(x) for x in log.read_text().splitlines()]
        assert rec["rule"] == "git-terminal-prompts-disabled" and rec["verdict"] == "annotate"


def test_broken_rule_file_warns_and_the_rest_still_annotate(tmp_path: Path, env) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("annotations:\n  - id: [\n")
    r = run(sh(f"echo \"{GIT_LINE}\" >&2"), {**env, "GUARD_RULES": str(bad)})
    warnings = [x for x in r.stderr.split(b"\n") if b"warning" in x]
    assert len(warnings) == 1 and b"bad.yaml" in warnings[0]
    assert r.stderr.count(b"[guard] ") == 1 and b"Traceback" not in r.stderr


# --------------------------------------------------------------------------- status & signals


@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_exit_status_is_the_commands(env, code: int) -> None:
    assert run(sh(f"exit {code}"), env).returncode == code


def test_death_by_signal_is_mirrored(env) -> None:
    r = run(sh("echo dying >&2; kill -TERM $$"), env)
    assert r.returncode == -signal.SIGTERM and r.stderr == b"dying\n"


def test_not_found_and_usage(env) -> None:
    r = run(["no-such-program-here"], env)
    assert r.returncode == 127 and r.stderr.count(b"\n") == 1 and b"not found" in r.stderr
    u = subprocess.run([PY, "-m", "guard.cli.annotate"], env=env, capture_output=True)
    assert u.returncode == 2 and u.stderr.startswith(b"guard annotate: ")


def test_signals_sent_to_the_guard_reach_the_command(env) -> None:
    child = ("import signal, sys, time\n"
             "def h(s, f):\n    print('got', s, flush=True); sys.exit(3)\n"
             "signal.signal(signal.SIGTERM, h)\nprint('ready', flush=True)\ntime.sleep(30)\n")
    p = subprocess.Popen(guard(PY, "-c", child), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    p.send_signal(signal.SIGTERM)
    assert p.stdout.readline() == f"got {int(signal.SIGTERM)}\n".encode()
    assert p.wait(10) == 3


def test_stderr_closed_early_by_the_command(env) -> None:
    r = run(sh("echo before >&2; exec 2>&-; sleep 0.2; echo still-running; exit 5"), env)
    assert r.returncode == 5 and r.stderr == b"before\n" and r.stdout == b"still-running\n"


def test_background_writer_is_not_cut_off(tmp_path: Path, env) -> None:
    out = tmp_path / "err"
    with out.open("wb") as f:
        p = subprocess.run(guard(*sh("(sleep 1; echo late >&2) & echo now >&2")), env=env, stderr=f, timeout=30)
    assert p.returncode == 0
    assert out.read_bytes() == b"now\n"  # the guard returned before the background line
    deadline = time.monotonic() + 10
    while out.read_bytes() != b"now\nlate\n" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_bytes() == b"now\nlate\n"  # and the line still got through


# --------------------------------------------------------------------------- terminals


def test_stderr_is_a_terminal_inside_when_it_is_one_outside(env) -> None:
    probe = "import os,sys; sys.stderr.write('tty=%s cols=%s\\n' % (os.isatty(2), os.get_terminal_size(2).columns))"
    child = pexpect.spawn(PY, ["-m", "guard.cli.annotate", "--", PY, "-c", probe], env=env,
                          dimensions=(30, 123), timeout=20)
    child.expect(pexpect.EOF)
    child.close()
    assert b"tty=True cols=123" in child.before
    assert child.exitstatus == 0


def test_not_a_terminal_inside_when_not_outside(env) -> None:
    r = run([PY, "-c", "import os,sys; sys.stderr.write(str(os.isatty(2)))"], env)
    assert r.stderr == b"False"


def test_terminal_interrupt_reaches_the_command_once(env) -> None:
    child_src = (
        "import signal, time, sys\nn = 0\n"
        "def h(s, f):\n    global n\n    n += 1\n"
        "signal.signal(signal.SIGINT, h)\nprint('ready', flush=True)\n"
        "t = time.time()\nwhile not n and time.time() - t < 10: time.sleep(0.01)\n"
        "time.sleep(0.5)\nsys.stderr.write('interrupts=%d\\n' % n)\n"
    )
    child = pexpect.spawn(PY, ["-m", "guard.cli.annotate", "--", PY, "-c", child_src], env=env, timeout=20)
    child.expect("ready")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert b"interrupts=1" in child.before


# --------------------------------------------------------------------------- where stderr goes


FD2 = "readlink /proc/self/fd/2 >&2; "


def test_a_regular_file_gets_the_commands_own_writes_and_the_annotation_after(tmp_path: Path, env) -> None:
    log = tmp_path / "err.log"
    script = FD2 + f"i=0; while [ $i -lt 3000 ]; do echo \"build line $i\" >&2; i=$((i+1)); done; echo \"{GIT_LINE}\" >&2; exit 128"
    with open(log, "wb") as fh:
        p = subprocess.run(guard(*sh(script)), env=env, stderr=fh, stdout=subprocess.PIPE, timeout=60)
    assert p.returncode == 128
    lines = log.read_bytes().decode().splitlines()
    assert lines[0] == str(log)  # the program wrote to the file itself, not to a pipe
    assert lines[1:3001] == [f"build line {i}" for i in range(3000)]
    assert lines[3001] == GIT_LINE
    assert len(lines) == 3003 and lines[3002].startswith("[guard] ") and "git_clone" in lines[3002]


def test_an_appended_file_is_relayed_so_other_writers_lines_are_not_read(tmp_path: Path, env) -> None:
    log = tmp_path / "err.log"
    old = f"an earlier run said:\n{GIT_LINE}\n".encode()
    log.write_bytes(old)
    other = subprocess.Popen(["sh", "-c", f"sleep 0.3; echo \"{GIT_LINE}\" >> {log}"])
    with open(log, "ab") as fh:
        quiet = subprocess.run(guard(*sh(FD2 + "echo all good >&2; sleep 0.8")), env=env, stderr=fh, timeout=60)
    other.wait()
    assert quiet.returncode == 0
    text = log.read_text()
    assert "pipe:[" in text and "all good" in text
    assert "[guard] " not in text  # neither the old line nor the other writer's is this command's
    log.write_bytes(old)
    with open(log, "ab") as fh:
        subprocess.run(guard(*sh(f"printf '%s' \"{GIT_LINE}\" >&2; exit 128")), env=env, stderr=fh, timeout=60)
    tail = log.read_bytes()[len(old):].decode()
    assert tail.startswith(GIT_LINE + "\n[guard] ") and tail.count("[guard] ") == 1


def test_a_large_file_write_is_exact_and_still_annotated(tmp_path: Path, env) -> None:
    log = tmp_path / "err.log"
    script = (f"head -c 20000000 /dev/urandom | od -An -tx1 >&2; echo \"{GIT_LINE}\" >&2; exit 128")
    with open(log, "wb") as fh:
        p = subprocess.run(guard(*sh(script)), env=env, stderr=fh, timeout=120)
    assert p.returncode == 128
    data = log.read_bytes()
    body, _, note = data.rpartition(GIT_LINE.encode() + b"\n")
    assert len(body) > 50_000_000 and note.startswith(b"[guard] ") and note.count(b"\n") == 1


def test_a_file_shared_with_stdout_is_relayed_and_stdout_is_not_read(tmp_path: Path, env) -> None:
    log = tmp_path / "both.log"
    script = FD2 + f"echo \"{GIT_LINE}\"; echo on-stderr >&2; exit 128"
    with open(log, "wb") as fh:
        p = subprocess.run(guard(*sh(script)), env=env, stdout=fh, stderr=fh, timeout=60)
    assert p.returncode == 128
    text = log.read_text()
    # relayed through the guard's pipe; when that line lands beside stdout's own writes is the
    # scheduler's to decide (a relay thread waiting for a CPU lets the echo after it go first)
    assert any(line.startswith("pipe:[") for line in text.splitlines()), text
    assert GIT_LINE in text and "[guard] " not in text  # stdout is the program's own, unread


def test_dev_null_is_inherited_and_nothing_is_relayed(tmp_path: Path, env) -> None:
    out = tmp_path / "seen"
    script = f"readlink /proc/self/fd/2 > {out}; echo \"${{GUARD_ANNOTATING:-unset}}\" >> {out}; " \
             f"echo \"{GIT_LINE}\" >&2; exit 7"
    p = subprocess.run(guard(*sh(script)), env=env, stderr=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 7
    assert out.read_text().split() == ["/dev/null", "unset"]
    assert not (tmp_path / "audit.jsonl").exists()  # no annotation was shown, so none is logged



def test_old_bytes_past_the_offset_of_a_file_are_not_read(tmp_path: Path, env) -> None:
    log = tmp_path / "old.log"
    old = f"{GIT_LINE}\nmore of an old run\n".encode()
    log.write_bytes(old)
    fd = os.open(log, os.O_RDWR)  # 2<>file: writes start at 0, over the old bytes
    try:
        p = subprocess.run(guard(*sh(FD2 + "echo ok >&2")), env=env, stderr=fd, timeout=60)
    finally:
        os.close(fd)
    assert p.returncode == 0
    text = log.read_text()
    assert "pipe:[" in text and "[guard] " not in text
