"""guard.shell.simple_exec against the installed bash: the program, argv and environment it would exec
are what bash execs, for every variable bash knows; and guard-shell then starts no bash."""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from guard.shell import simple_exec
from tests.conftest import guard_bin

BASH = "/bin/bash"
pytestmark = pytest.mark.skipif(not os.access(BASH, os.X_OK), reason="needs /bin/bash")
ENV_PROGRAM = shutil.which("env") or "/usr/bin/env"
BASE = {b"PATH": b"/usr/local/bin:/usr/bin:/bin", b"HOME": b"/nonexistent", b"LANG": b"C.UTF-8"}


def _bash_exec(text: str, env: dict[bytes, bytes], cwd: Path) -> tuple[dict[bytes, bytes], bytes]:
    """The environment bash -c TEXT passed to the program it ran (which prints it with env -0),
    and what bash itself wrote to stderr."""
    p = subprocess.run([BASH, "-c", text], env=env, cwd=cwd, capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return dict(item.split(b"=", 1) for item in p.stdout.split(b"\0") if item), p.stderr


def _ours(text: str, env: dict[bytes, bytes]) -> tuple[bytes, list[bytes], dict[bytes, bytes]] | None:
    got = simple_exec.target(["-c", text], text, env, False)
    assert not isinstance(got, int)
    return got


def _bash_words(*flags: str) -> set[str]:
    out = subprocess.run([BASH, "-c", "compgen " + " ".join(flags)], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_every_builtin_and_keyword_of_the_installed_bash_is_known() -> None:
    assert _bash_words("-b") | _bash_words("-k") <= simple_exec.BUILTINS


def _every_variable_bash_knows() -> list[str]:
    names = _bash_words("-v") | _bash_words("-e")
    # and ones a host or a container commonly sets, ones bash treats specially only when set
    names |= {"PWD", "OLDPWD", "SHLVL", "_", "LC_ALL", "LC_CTYPE", "LANG", "HOSTNAME", "TERM", "ENV",
              "EXECIGNORE", "GLOBIGNORE", "CDPATH", "POSIXLY_CORRECT", "BASH_ENV", "BASH_XTRACEFD",
              "BASH_COMPAT", "BASH_ARGV0", "SRANDOM", "SECONDS", "RANDOM", "PS0", "PS1", "PS2", "TMOUT", "MAIL",
              "a-b", "1X", "X Y", "é", "GUARD_TREE"}
    return sorted(names)


@pytest.mark.parametrize("value", [b"5", b"/tmp", b"", b"C", b"x y", b"() { :; }"])
def test_environment_is_bashs_for_every_variable(value: bytes, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    taken = 0
    for name in _every_variable_bash_knows():
        env = {**BASE, name.encode(): value}
        got = _ours("env -0", env)
        if got is None:
            continue  # bash runs it
        want, complaint = _bash_exec("env -0", env, tmp_path)
        assert complaint == b"", (name, complaint)
        assert got[0] == ENV_PROGRAM.encode() and got[1] == [b"env", b"-0"]
        assert got[2] == want, name
        taken += 1
    assert taken > 50  # the rule is not simply "always leave it to bash"


@pytest.mark.parametrize("level", [None, b"0", b"7", b"007", b"998", b"999", b"1000", b"-3", b" 5", b"+4",
                                   b"5 ", b"0x10", b"abc", b""])
def test_shell_level_is_bashs(level: bytes | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = dict(BASE) if level is None else {**BASE, b"SHLVL": level}
    got = _ours("env -0", env)
    want, complaint = _bash_exec("env -0", env, tmp_path)
    if got is not None:
        assert (got[2], complaint) == (want, b"")
    else:
        assert level not in (None, b"0", b"7", b"998")  # the common cases are taken


def test_working_directory_names_are_bashs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here"
    here.mkdir()
    (tmp_path / "link").symlink_to(here)
    (tmp_path / "file").write_text("")
    monkeypatch.chdir(here)
    cases = {"pwd": [None, str(here), str(tmp_path / "link"), str(tmp_path), "here", "/nonexistent",
                     f"{tmp_path}/../{tmp_path.name}/here", str(tmp_path / "file")],
             "oldpwd": [None, str(tmp_path), str(tmp_path / "file"), "/nonexistent", ""]}
    taken = 0
    for pwd in cases["pwd"]:
        for old in cases["oldpwd"]:
            env = dict(BASE)
            if pwd is not None:
                env[b"PWD"] = pwd.encode()
            if old is not None:
                env[b"OLDPWD"] = old.encode()
            got = _ours("env -0", env)
            if got is None:
                continue
            assert got[2] == _bash_exec("env -0", env, here)[0], (pwd, old)
            taken += 1
    assert taken >= 30


def test_path_search_is_bashs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first executable non-folder DIR/NAME, skipping a plain file and a folder of the name;
    bash's `_` says which one it ran."""
    monkeypatch.chdir(tmp_path)
    dirs = [tmp_path / d for d in ("a", "b", "c", "d")]
    for d in dirs:
        d.mkdir()
    (dirs[0] / "prog").write_bytes(b"not executable")
    (dirs[1] / "prog").mkdir()
    for d in dirs[2:]:
        shutil.copy(ENV_PROGRAM, d / "prog")
        (d / "prog").chmod(stat.S_IRWXU)
    for path in (":".join(map(str, dirs)), ":".join(f"{d}/" for d in dirs), f"{dirs[3]}:{dirs[2]}",
                 f"{dirs[0]}//:{dirs[2]}"):
        env = {**BASE, b"PATH": path.encode()}
        got = _ours("prog -0", env)
        assert got is not None, path
        want = _bash_exec("prog -0", env, tmp_path)[0]
        assert (got[0], got[2]) == (want[b"_"], want), path
    for path in (f"{dirs[0]}:{dirs[1]}", f"relative:{dirs[2]}", f":{dirs[2]}", f"~/bin:{dirs[2]}", ""):
        assert _ours("prog -0", {**BASE, b"PATH": path.encode()}) is None, path


@pytest.mark.parametrize("text", ["echo hi", "cd /tmp", "ls *", "ls ~", "ls $HOME", "a=1 ls", "ls 'x'",
                                  "ls; ls", "ls\nls", "time ls", "ls {a,b}", "./ls", "ls # c", "ls >f",
                                  "[ -e f ]", "ls [ab]", "exec ls", "!ls", "%1", "%ls"])
def test_anything_but_literal_words_naming_a_program_is_left_to_bash(text: str) -> None:
    assert simple_exec.target(["-c", text], text, dict(BASE), False) is None


def test_no_op_builtins_are_their_status_and_the_rest_left_to_bash() -> None:
    env = dict(BASE)
    assert [simple_exec.target(["-c", t], t, env, False) for t in ("true", "false", ":", "true --help x")] \
        == [0, 1, 0, 0]
    # bash would have complained of this environment first
    assert simple_exec.target(["-c", "true"], "true", {**env, b"SHLVL": b"1000"}, False) is None
    assert simple_exec.target(["-c", "true"], "true", {**env, b"LC_ALL": b"xx_YY"}, False) is None


def test_what_bash_would_not_do_alike_is_left_to_it() -> None:
    env = dict(BASE)
    assert simple_exec.target(["-c", "ls"], "ls", env, True) is None  # a name given twice
    assert simple_exec.target(["-lc", "ls"], "ls", env, False) is None  # a login shell's profiles
    assert simple_exec.target(["-c", "ls"], "ls", {**env, b"GUARD_REAL_SHELL": b"/bin/zsh"}, False) is None
    assert simple_exec.target(["-c", "ls"], "ls", {**env, b"BASH_FUNC_ls%%": b"() { :; }"}, False) is None
    assert simple_exec.target(["-c", "ls"], "ls", {b"HOME": b"/"}, False) is None  # no PATH


# --------------------------------------------------------------------------- end to end


def _guard_shell() -> str:
    shell = guard_bin("guard-shell")
    if not os.path.exists(shell):
        pytest.skip("guard-shell is not installed beside this Python")
    return shell


def _env(tmp_path: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_") and k not in ("SHLVL", "OLDPWD")}
    return {**keep, "GUARD_CACHE_DIR": str(tmp_path / "cache"), "GUARD_SERVER": "0", "PWD": str(tmp_path)}


def _env_as(name: str, tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with a copy of the env program, called ``name`` (a program the pre-check passes),
    first on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shutil.copy(ENV_PROGRAM, bindir / name)
    return {**env, "PATH": f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}"}


def test_guard_shell_passes_what_bash_passes(tmp_path: Path) -> None:
    env = _env_as("ls", tmp_path, _env(tmp_path))
    shell = _guard_shell()
    subprocess.run([shell, "-c", "true"], env=env, cwd=tmp_path, check=True)  # fills the cache
    for extra in ({}, {"SHLVL": "3", "OLDPWD": "/"}, {"PWD": "/nonexistent"}, {"SHELLOPTS": "xtrace"}):
        for text in ("ls -0", "ls -0 x=1"):
            run = {**env, **extra}
            ours = subprocess.run([shell, "-c", text], env=run, cwd=tmp_path, capture_output=True, timeout=60)
            theirs = subprocess.run([BASH, "-c", text], env=run, cwd=tmp_path, capture_output=True, timeout=60)
            assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr), extra
            assert sorted(ours.stdout.split(b"\0")) == sorted(theirs.stdout.split(b"\0")), extra


def _execs(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, list[str]]:
    """The exit status of argv and the programs it exec'd (strace's record of execve)."""
    log = cwd / "strace.log"
    p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(log), *argv],
                       env=env, cwd=cwd, capture_output=True, timeout=60)
    lines = log.read_text().splitlines() if log.exists() else []
    if not lines:
        pytest.skip(f"strace cannot trace here: {p.stderr.decode(errors='replace').strip()[:200]}")
    return p.returncode, [ln.split('execve("', 1)[1].split('"', 1)[0] for ln in lines
                          if 'execve("' in ln and "= 0" in ln.rsplit(")", 1)[-1]]


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_guard_shell_starts_no_bash_for_a_plain_program_or_a_no_op(tmp_path: Path) -> None:
    env = _env(tmp_path)
    shell = _guard_shell()
    subprocess.run([shell, "-c", "true"], env=env, cwd=tmp_path, check=True)
    status, execs = _execs([shell, "-c", "ls -a"], env, tmp_path)
    assert status == 0 and execs[-1] == shutil.which("ls") and BASH not in execs, execs
    status, execs = _execs([shell, "-c", "false"], env, tmp_path)
    assert status == 1 and BASH not in execs and not any(e.endswith("/false") for e in execs), execs
    # a builtin with output is bash's
    status, execs = _execs([shell, "-c", "echo hi"], env, tmp_path)
    assert status == 0 and execs[-1] == BASH, execs
    # an operator's own real shell is always used
    status, execs = _execs([shell, "-c", "ls"], {**env, "GUARD_REAL_SHELL": BASH}, tmp_path)
    assert status == 0 and BASH in execs, execs


def test_a_program_the_kernel_cannot_exec_is_bashs_to_run(tmp_path: Path) -> None:
    """A file with no #! line: execve fails with ENOEXEC, and bash runs it as a script."""
    env = _env_as("ls", tmp_path, _env(tmp_path))
    script = tmp_path / "bin" / "ls"
    script.unlink()
    script.write_text("echo from-script $0 $SHLVL\n")
    script.chmod(0o755)
    ours = subprocess.run([_guard_shell(), "-c", "ls"], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    theirs = subprocess.run([BASH, "-c", "ls"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert ours.stdout.startswith("from-script")
    assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)


def test_an_analysed_literal_command_gets_what_bash_would_give_it(tmp_path: Path) -> None:
    """`env -0` is not on the pre-check's list: it is analysed, then spawned under the stderr
    relay (stderr is a pipe here) in place of bash -c; it sees bash's environment, plus the
    relay's marker that bash would have passed on."""
    env = _env(tmp_path)
    shell = _guard_shell()
    for extra in ({}, {"SHLVL": "3", "OLDPWD": "/"}, {"PWD": "/nonexistent"}, {"IFS": ":"}):
        run = {**env, **extra}
        ours = subprocess.run([shell, "-c", "env -0"], env=run, cwd=tmp_path, capture_output=True, timeout=60)
        theirs = subprocess.run([BASH, "-c", "env -0"], env={**run, "GUARD_ANNOTATING": "1"}, cwd=tmp_path,
                                capture_output=True, timeout=60)
        assert (ours.returncode, ours.stderr) == (theirs.returncode, theirs.stderr), extra
        assert sorted(ours.stdout.split(b"\0")) == sorted(theirs.stdout.split(b"\0")), extra


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_an_analysed_literal_command_starts_no_bash_and_dies_with_the_guard(tmp_path: Path) -> None:
    env = _env(tmp_path)
    shell = _guard_shell()
    status, execs = _execs([shell, "-c", "env true"], env, tmp_path)
    assert status == 0 and BASH not in execs, execs
    # the program dies with the guard: guard._spawn starts it with PR_SET_PDEATHSIG itself, or
    # setpriv does where the extension was not built
    assert (shutil.which("setpriv") in execs) == (importlib.util.find_spec("guard._spawn") is None), execs
    report = tmp_path / "deathsig"
    report.write_text(f"#!{sys.executable} -IS\nimport ctypes, sys\nv = ctypes.c_int()\n"
                      "ctypes.CDLL(None).prctl(2, ctypes.byref(v))\nsys.stderr.write(f'deathsig={v.value}\\n')\n")
    report.chmod(0o755)
    got = subprocess.run([shell, "-c", f"env {report}"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (got.returncode, got.stderr) == (0, "deathsig=9\n")
    # a script with no #! line would be run by setpriv's execvp with /bin/sh: bash runs it instead
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "hello").write_text("echo from-script\n")
    (bindir / "hello").chmod(0o755)
    status, execs = _execs([shell, "-c", "hello"], {**env, "PATH": f"{bindir}:{env['PATH']}"}, tmp_path)
    assert status == 0 and BASH in execs, execs


# --------------------------------------------------------------------------- what the kernel runs


def _elf_copy(tmp_path: Path, name: str, patch: dict[int, bytes] | None = None) -> bytes:
    data = bytearray(Path(shutil.which("true") or "/bin/true").read_bytes())
    for at, value in (patch or {}).items():
        data[at:at + len(value)] = value
    path = tmp_path / name
    path.write_bytes(bytes(data))
    path.chmod(0o755)
    return bytes(path)


def _interpreter_at(path: bytes) -> int:
    """Where the ELF file's PT_INTERP string starts."""
    data = Path(os.fsdecode(path)).read_bytes()
    phoff, phentsize, phnum = (int.from_bytes(data[a:a + n], "little") for a, n in ((32, 8), (54, 2), (56, 2)))
    for i in range(phnum):
        at = phoff + i * phentsize
        if int.from_bytes(data[at:at + 4], "little") == 3:
            return int.from_bytes(data[at + 8:at + 16], "little")
    pytest.skip("true is a static binary here")


def test_kernel_runs_only_what_its_exec_will_not_fail_on(tmp_path: Path) -> None:
    good = _elf_copy(tmp_path, "good")
    assert simple_exec.kernel_runs(good)
    other_machine = _elf_copy(tmp_path, "arm", {18: (183).to_bytes(2, "little")})  # EM_AARCH64
    assert not simple_exec.kernel_runs(other_machine)
    at = _interpreter_at(good)
    no_loader = _elf_copy(tmp_path, "noloader", {at: b"/nonexistent/ld.so\0"})
    assert not simple_exec.kernel_runs(no_loader)
    scripts = {"sh": b"#!/bin/sh\necho hi\n", "spaced": b"#! \t/bin/sh -e\necho hi\n",
               "crlf": b"#!/bin/sh\r\necho hi\r\n", "gone": b"#!/nonexistent/python3\n", "relative": b"#!sh\n",
               "nested": b"#!" + bytes(tmp_path / "sh") + b"\n", "bare": b"echo hi\n", "empty": b"",
               "long": b"#!/bin/sh " + b"x" * 5000 + b"\n"}
    for name, text in scripts.items():
        (tmp_path / name).write_bytes(text)
        (tmp_path / name).chmod(0o755)
    assert [n for n in scripts if simple_exec.kernel_runs(bytes(tmp_path / n))] == ["sh", "spaced"]


@pytest.mark.parametrize("broken", ["#!/nonexistent/python3\n", "#!/bin/sh\r\necho crlf\r\n", "elf-arm"])
def test_an_analysed_command_whose_exec_fails_is_bashs_to_report(broken: str, tmp_path: Path) -> None:
    """bash stops at the first executable file of the name and reports its failed exec; an
    exec by PATH search would go on to the next one (a moved venv's pip running /usr/bin/pip)."""
    env = _env(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    if broken == "elf-arm":
        os.rename(_elf_copy(first, "tool", {18: (183).to_bytes(2, "little")}), first / "tool")
    else:
        (first / "tool").write_text(broken)
    (first / "tool").chmod(0o755)
    (second / "tool").write_text("#!/bin/sh\necho second tool ran\n")
    (second / "tool").chmod(0o755)
    env["PATH"] = f"{first}:{second}:{env['PATH']}"
    ours = subprocess.run([_guard_shell(), "-c", "tool --version"], env=env, cwd=tmp_path, capture_output=True,
                          timeout=60)
    theirs = subprocess.run([BASH, "-c", "tool --version"], env=env, cwd=tmp_path, capture_output=True, timeout=60)
    assert b"second tool" not in ours.stdout
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout)
    assert theirs.stderr.strip() and theirs.stderr.strip() in ours.stderr


def _blocked_and_ignored(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """SigBlk and SigIgn of the program argv runs, started with SIGCHLD, SIGUSR1 and SIGTERM
    blocked."""
    import signal

    def block() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGUSR1, signal.SIGTERM})

    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60, preexec_fn=block)
    fields = dict(line.split(":\t", 1) for line in p.stdout.splitlines() if ":\t" in line)
    return fields["SigBlk"], fields["SigIgn"]


@pytest.mark.parametrize("name", ["cat", "tool"])  # the plain path; an analysed one under the relay
def test_signals_blocked_and_ignored_are_what_bash_leaves(name: str, tmp_path: Path) -> None:
    env = _env(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shutil.copy(shutil.which("cat") or "/bin/cat", bindir / name)
    env["PATH"] = f"{bindir}:{env['PATH']}"
    (tmp_path / "st").symlink_to("/proc/self/status")
    text = f"{name} st"
    shell = _guard_shell()
    subprocess.run([shell, "-c", "true"], env=env, cwd=tmp_path, check=True)
    ours = _blocked_and_ignored([shell, "-c", text], env, tmp_path)
    theirs = _blocked_and_ignored([BASH, "-c", text], env, tmp_path)
    assert ours[0] == theirs[0]
    # under the relay without guard._spawn, glibc's posix_spawn leaves its own two signals ignored
    if name == "cat" or importlib.util.find_spec("guard._spawn") is not None:
        assert ours[1] == theirs[1]


def test_an_entry_with_no_name_is_dropped_as_bash_drops_it(tmp_path: Path) -> None:
    """`=x` in the environment (execve allows it; Python's os.execve does not): guard-shell runs
    the command as bash does instead of ending in a traceback."""
    env = _env_as("ls", tmp_path, _env(tmp_path))
    raw = [f"{k}={v}".encode() for k, v in env.items()] + [b"=nameless"]
    code = ("import ctypes, sys; libc = ctypes.CDLL(None); e = [x.encode('latin-1') for x in sys.argv[3:]]; "
            "a = (ctypes.c_char_p * 4)(sys.argv[1].encode(), b'-c', sys.argv[2].encode(), None); "
            "libc.execve(a[0], a, (ctypes.c_char_p * (len(e) + 1))(*e, None)); sys.exit(99)")
    results = []
    for shell in (_guard_shell(), BASH):
        for text in ("ls -0", "env -0"):  # the plain path, the analysed one
            argv = [sys_executable(), "-c", code, shell, text, *(r.decode("latin-1") for r in raw)]
            p = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=60)
            assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
            results.append(sorted(x for x in p.stdout.split(b"\0") if not x.startswith(b"GUARD_ANNOTATING=")))
    assert results[:2] == results[2:]


def sys_executable() -> str:
    import sys

    return sys.executable


def test_an_ignored_sigchld_does_not_lose_the_status(tmp_path: Path) -> None:
    """With SIGCHLD ignored the kernel reaps children unseen; the relay still reports the
    command's own status."""
    import signal

    env = _env(tmp_path)

    def ignore() -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    for text in ("env false", "x=1; env false"):
        p = subprocess.run([_guard_shell(), "-c", text], env=env, cwd=tmp_path, capture_output=True, timeout=60,
                           preexec_fn=ignore)
        assert p.returncode == 1, (text, p.stderr)
