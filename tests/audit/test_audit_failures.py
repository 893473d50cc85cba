"""A log that cannot be written costs one warning line on stderr: no traceback, no exception."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from audit_records import record

from guard.audit import log

REPO = Path(__file__).resolve().parents[2]
WARNING = "guard: audit log not written: "

# Appends three records in a fresh interpreter, as guard-shell would, then exits 0.
CHILD = """
import os, sys
from guard.audit import log
env = dict(os.environ)
for i in range(3):
    rec = log.build_record("refusal", "git push", cwd="/workspace", env=env, verdict="refuse",
                           category="publish", rule="git-push", tool="git_push", via=[])
    log.append_record(rec, env)
print("verdict unchanged")
"""


def _child_env(log_path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_AUDIT_LOG"] = log_path
    env["PYTHONPATH"] = str(REPO)
    return env


def _assert_one_warning(proc: subprocess.CompletedProcess[str], reason: str) -> None:
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "verdict unchanged\n"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(WARNING), lines[0]
    assert reason in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def _run_child(log_path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD], env=_child_env(log_path), capture_output=True, text=True, timeout=60
    )


def test_full_device_gives_one_warning() -> None:
    # /dev/full answers every write with ENOSPC: a real full-disk error, no mocking.
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    _assert_one_warning(_run_child("/dev/full"), "No space left on device")


def test_missing_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be\n")
    _assert_one_warning(_run_child(str(blocker / "guard" / "audit.jsonl")), "Not a directory")


def test_missing_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "state" / "guard" / "audit.jsonl"
    proc = _run_child(str(path))
    assert proc.returncode == 0 and proc.stderr == ""
    assert len(path.read_text().splitlines()) == 3


def _unshare_mount(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) in a private mount namespace, or skip when that is not allowed."""
    if not shutil.which("unshare"):
        pytest.skip("unshare not installed")
    probe = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            f"mount -t tmpfs -o size=64k tmpfs {tmp_path}",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()}")
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        env=_child_env(str(tmp_path / "mnt" / "guard" / "audit.jsonl")),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_read_only_file_system(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = f"mount -t tmpfs -o ro,size=64k tmpfs {mnt} && exec \"{sys.executable}\" -c '{CHILD}'"
    _assert_one_warning(_unshare_mount(script, tmp_path), "Read-only file system")


def test_tiny_file_system_that_fills_up(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = (
        f"mount -t tmpfs -o size=64k tmpfs {mnt} && mkdir {mnt}/guard && "
        f"(dd if=/dev/zero of={mnt}/filler bs=4k 2>/dev/null; true) && "
        f"exec \"{sys.executable}\" -c '{CHILD}'"
    )
    _assert_one_warning(_unshare_mount(script, tmp_path), "No space left on device")


def test_immutable_directory(tmp_path: Path) -> None:
    d = tmp_path / "locked"
    d.mkdir()
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode:
        pytest.skip("chattr +i not available here")
    try:
        _assert_one_warning(_run_child(str(d / "audit.jsonl")), "Operation not permitted")
    finally:
        subprocess.run(["chattr", "-i", str(d)], check=False)


@pytest.mark.parametrize(
    ("where", "code", "reason"),
    [
        ("open", errno.EACCES, "Permission denied"),
        ("open", errno.EROFS, "Read-only file system"),
        ("write", errno.ENOSPC, "No space left on device"),
        ("write", errno.EIO, "Input/output error"),
    ],
)
def test_injected_errors(
    where: str,
    code: int,
    reason: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fresh_warning: None,
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code), str(tmp_path / "audit.jsonl"))

    monkeypatch.setattr(log.os, where, fail)
    env = {"GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")}
    for _ in range(3):
        assert log.append_record(record(), env) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(WARNING) and reason in err, err


def test_short_write_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fresh_warning: None
) -> None:
    real_write = os.write
    monkeypatch.setattr(log.os, "write", lambda fd, data: real_write(fd, data[:10]))
    log.append_record(record(), {"GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")})
    err = capsys.readouterr().err
    assert err.startswith(WARNING) and "No space left on device" in err and "short write" in err


def test_unserialisable_record_is_a_warning_not_an_exception(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fresh_warning: None
) -> None:
    rec = record()
    rec["odd"] = {1, 2}  # not JSON; rendered with str()
    rec[("tuple", "key")] = 1  # a key JSON cannot hold
    log.append_record(rec, {"GUARD_AUDIT_LOG": str(tmp_path / "audit.jsonl")})
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(WARNING)


def test_turned_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    log.append_record(record(), {"GUARD_AUDIT_LOG": "off", "HOME": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []
