"""guard._spawn starts the relay's child in one step, dying with the guard like setpriv's child,
and the relay runs the same without it (through setpriv)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from guard.act import relay


def _buildable() -> bool:
    """A C compiler and Python's headers are here: the install must have built guard._spawn."""
    include = sysconfig.get_paths().get("include") or ""
    return bool(shutil.which("cc") or shutil.which("gcc")) and Path(include, "Python.h").exists()


def test_the_extension_is_built_where_it_can_be() -> None:
    """setup.py marks it optional, so a failed build would only skip the tests below."""
    if not _buildable():
        pytest.skip("no C compiler or no Python.h here: the relay runs setpriv instead")
    import guard._spawn  # noqa: F401


_spawn = pytest.importorskip("guard._spawn", reason="guard._spawn was not built (no C compiler at install)")

# A child that reports on descriptor 2 (the pipe it was given) the signal it gets when its parent
# dies (prctl PR_GET_PDEATHSIG).
REPORT = textwrap.dedent("""\
    import ctypes, sys
    v = ctypes.c_int()
    ctypes.CDLL(None).prctl(2, ctypes.byref(v))
    sys.stderr.write("deathsig=%d\\n" % v.value)
""")


def _bits(*sigs: int) -> int:
    return sum(1 << (s - 1) for s in sigs)


# The signals as the kernel has them for a program that changes none itself (Python would ignore
# SIGPIPE and SIGXFSZ at its start): grep of its own status, on descriptor 2.
SIGNALS = b"exec grep -E '^Sig(Blk|Ign)' /proc/self/status >&2"


def _spawned(argv: list[bytes], mask: list[int], defaults: list[int], deathsig: int) -> str:
    r, w = os.pipe()
    try:
        pid = _spawn.spawn(argv[0], argv, [b"LC_ALL=C"], w, mask, defaults, deathsig)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


def _spawned_report(mask: list[int], defaults: list[int], deathsig: int) -> dict[str, int]:
    sh = shutil.which("sh") or "/bin/sh"
    out = _spawned([os.fsencode(sh), b"-c", SIGNALS], mask, defaults, deathsig)
    fields = dict(line.split(":", 1) for line in out.splitlines())
    python = [os.fsencode(sys.executable), b"-I", b"-S", b"-c", REPORT.encode()]
    death = dict(item.split("=") for item in _spawned(python, mask, defaults, deathsig).split())
    return {"deathsig": int(death["deathsig"]), **{k: int(fields["Sig" + k.capitalize()].strip(), 16) for k in ("blk", "ign")}}


def test_the_child_gets_the_death_signal_mask_and_descriptor_asked_for() -> None:
    ign = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        got = _spawned_report([signal.SIGUSR1, signal.SIGWINCH], [signal.SIGPIPE], signal.SIGKILL)
    finally:
        signal.signal(signal.SIGHUP, ign)
    assert got["deathsig"] == signal.SIGKILL
    assert got["blk"] == _bits(signal.SIGUSR1, signal.SIGWINCH)
    # Python ignores SIGPIPE and SIGXFSZ: asked back to default, SIGPIPE is; SIGXFSZ and SIGHUP stay ignored
    assert got["ign"] & _bits(signal.SIGPIPE) == 0
    assert got["ign"] & _bits(signal.SIGHUP, signal.SIGXFSZ) == _bits(signal.SIGHUP, signal.SIGXFSZ)


def test_no_death_signal_when_none_is_asked() -> None:
    assert _spawned_report([], [], 0)["deathsig"] == 0


def test_a_failed_exec_raises_with_its_errno_and_leaves_no_child(tmp_path: Path) -> None:
    script = tmp_path / "no-interpreter"
    script.write_bytes(b"\x00\x01 not a program\n")
    script.chmod(0o755)
    before = _children()
    for path, err in ((tmp_path / "missing", "ENOENT"), (script, "ENOEXEC"), (tmp_path, "EACCES")):
        with pytest.raises(OSError) as info:
            _spawn.spawn(os.fsencode(path), [b"x"], [], -1, [], [], signal.SIGKILL)
        assert info.value.errno == getattr(__import__("errno"), err), (path, info.value)
    assert _children() == before  # every failed child was reaped


def _children() -> set[int]:
    return {int(p) for task in Path("/proc/self/task").iterdir()
            for p in (task / "children").read_text().split()}


def test_bad_arguments_are_refused_before_anything_starts() -> None:
    with pytest.raises(TypeError):
        _spawn.spawn(b"/bin/true", ["true"], [], -1, [], [], 0)  # str, not bytes
    with pytest.raises(ValueError):
        _spawn.spawn(b"/bin/true", [b"tr\0ue"], [], -1, [], [], 0)


def test_a_sigkilled_parent_takes_the_child_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (f"import os, time, guard._spawn as s\n"
            f"pid = s.spawn(b'/bin/sleep', [b'sleep', b'60'], [], -1, [], [], 9)\n"
            f"open({str(pidfile)!r}, 'w').write(str(pid))\n"
            "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline and parent.poll() is None
            time.sleep(0.02)
        child = int(pidfile.read_text())
        assert _state(child) not in ("", "Z")  # sleeping
        parent.kill()
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _state(child) not in ("", "Z"):  # gone, or dead and waiting for init to reap it
            assert time.monotonic() < deadline, "the child outlived its SIGKILLed parent"
            time.sleep(0.02)
    finally:
        if parent.poll() is None:
            parent.kill()


def _state(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except OSError:
        pass
    return ""


@pytest.mark.parametrize("native", [True, False], ids=["guard._spawn", "setpriv"])
def test_the_relay_child_dies_with_the_guard_either_way(native: bool, monkeypatch, tmp_path: Path) -> None:
    """The relay's child (stderr relayed through a pipe) carries PR_SET_PDEATHSIG whether the
    extension starts it or setpriv does; its stderr reaches ours through the relay."""
    if not native:
        if not shutil.which("setpriv"):
            pytest.skip("util-linux's setpriv is not installed")
        monkeypatch.setattr(relay, "_native_spawn", lambda: None)
    script = tmp_path / "report"
    script.write_text(f"#!{sys.executable} -IS\n{REPORT}")
    script.chmod(0o755)
    r, w = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(w, 2)
        os.close(w)
        status = relay.run([str(script)], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, command="report",
                           exec_path=str(script))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    assert status == 0 and "deathsig=9\n" in out, out


def _relay_report(native: bool, monkeypatch, argv: list[str], exec_path: str | None,
                  path: str = "") -> tuple[int, str]:
    """What the relay's child wrote on stderr (relayed through a pipe), and the status."""
    if not native:
        if not shutil.which("setpriv"):
            pytest.skip("util-linux's setpriv is not installed")
        monkeypatch.setattr(relay, "_native_spawn", lambda: None)
    r, w = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(w, 2)
        os.close(w)
        search = path + os.environ.get("PATH", "/usr/bin:/bin")
        status = relay.run(argv, {"PATH": search}, command="x", exec_path=exec_path)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    with os.fdopen(r, "rb") as f:
        return status, f.read().decode()


@pytest.mark.parametrize("native", [True, False], ids=["guard._spawn", "setpriv"])
def test_the_relay_child_gets_sigpipe_at_its_default(native: bool, monkeypatch) -> None:
    """Python ignores SIGPIPE; a program the relay starts (``guard annotate -- prog``, where no
    reset ran before) must get it at its default, as from bash."""
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # as Python starts
    sh = shutil.which("sh") or "/bin/sh"
    status, out = _relay_report(native, monkeypatch, [sh, "-c", SIGNALS.decode()], None)
    ign = int(dict(line.split(":", 1) for line in out.splitlines())["SigIgn"].strip(), 16)
    assert status == 0 and ign & _bits(signal.SIGPIPE, signal.SIGXFSZ) == 0, out


@pytest.mark.parametrize("native", [True, False], ids=["guard._spawn", "setpriv"])
def test_the_relay_runs_the_program_the_search_found_and_a_script_with_no_interpreter_line(
        native: bool, monkeypatch, tmp_path: Path) -> None:
    """The program bash's PATH search found (``exec_path``) runs under the name it was called by;
    a file with no ``#!`` line runs under /bin/sh (setpriv's execvp does that, as bash does)."""
    found = tmp_path / "found"
    found.write_text(f"#!{shutil.which('sh') or '/bin/sh'}\necho \"found $0 $1\" >&2\n")
    found.chmod(0o755)
    status, out = _relay_report(native, monkeypatch, ["found", "arg"], str(found), path=f"{tmp_path}:")
    assert (status, out) == (0, "found " + str(found) + " arg\n")
    bare = tmp_path / "bare"
    bare.write_text("echo \"bare $0 $1\" >&2\n")
    bare.chmod(0o755)
    status, out = _relay_report(native, monkeypatch, [str(bare), "arg"], None)
    assert (status, out) == (0, f"bare {bare} arg\n")
