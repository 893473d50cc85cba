"""guard.simple_exec against the installed bash: the program, argv and environment it would exec
are what bash execs, for every variable bash knows; and guard-shell then starts no bash."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from guard import simple_exec
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
                                  "[ -e f ]", "ls [ab]", "exec ls", "!ls"])
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
    assert status == 0 and BASH not in execs and shutil.which("setpriv") in execs, execs
    # a script with no #! line would be run by setpriv's execvp with /bin/sh: bash runs it instead
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "hello").write_text("echo from-script\n")
    (bindir / "hello").chmod(0o755)
    status, execs = _execs([shell, "-c", "hello"], {**env, "PATH": f"{bindir}:{env['PATH']}"}, tmp_path)
    assert status == 0 and BASH in execs, execs
