"""The server's watch over the files its workers rely on (guard.serve.watch): every change that
could alter what a watched path names is an event every worker's poll sees, and nothing that
leaves it alone (reading, stat) is."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from guard.serve import watch

pytestmark = pytest.mark.skipif(watch.start() is None, reason="no inotify here")


@pytest.fixture
def w() -> watch.Watch:
    got = watch.start()
    assert got is not None
    yield got
    got.close()


def _polls(w: watch.Watch, n: int = 2) -> list[watch.Poll]:
    out = []
    for _ in range(n):
        got = w.for_worker()
        assert got is not None
        out.append(got[0])
    return out


def _canonical(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


def test_reading_and_stat_are_no_event_and_an_edit_is_one_for_every_worker(w: watch.Watch, tmp_path: Path) -> None:
    f = _canonical(tmp_path) / "rules.yaml"
    f.write_text("rules: []\n")
    assert w.cover([str(f)])
    first, second = _polls(w)
    f.read_text()
    os.stat(f)
    assert w.quiet() and first.quiet() and second.quiet()
    f.write_text("rules: []\n")  # the same bytes: still an edit
    assert not first.quiet() and not second.quiet() and not w.quiet()
    assert not first.quiet()  # and it stays so
    assert w.for_worker() is None  # no worker is handed a watch that fired


@pytest.mark.parametrize("how", ["rename over", "unlink", "chmod", "touch", "truncate"])
def test_every_way_of_changing_a_watched_file_is_an_event(w: watch.Watch, tmp_path: Path, how: str) -> None:
    root = _canonical(tmp_path)
    f = root / "rules.yaml"
    f.write_text("rules: []\n")
    assert w.cover([str(f)])
    (poll,) = _polls(w, 1)
    if how == "rename over":
        (root / "new.yaml").write_text("rules: []\n")
        os.replace(root / "new.yaml", f)
    elif how == "unlink":
        f.unlink()
    elif how == "chmod":
        f.chmod(0o600)
    elif how == "touch":
        os.utime(f)
    else:
        os.truncate(f, 0)
    assert not poll.quiet()


def test_a_missing_file_created_and_a_file_added_to_a_watched_folder_are_events(w: watch.Watch, tmp_path: Path) -> None:
    root = _canonical(tmp_path)
    (root / "rules").mkdir()
    assert w.cover([str(root / "config.yaml"), str(root / "rules")])
    (poll,) = _polls(w, 1)
    (root / "unrelated").write_text("x")  # in a folder watched only because a file may appear there
    assert not poll.quiet()  # (an event all the same: the watch errs on the side of looking)
    w2 = watch.start()
    assert w2 is not None
    try:
        assert w2.cover([str(root / "missing" / "deeper" / "config.yaml"), str(root / "rules")])
        (p2,) = _polls(w2, 1)
        (root / "rules" / "new.yaml").write_text("rules: []\n")
        assert not p2.quiet()
    finally:
        w2.close()


def test_a_folder_above_a_watched_file_moved_away_is_an_event(w: watch.Watch, tmp_path: Path) -> None:
    root = _canonical(tmp_path)
    (root / "a" / "b").mkdir(parents=True)
    f = root / "a" / "b" / "rules.yaml"
    f.write_text("rules: []\n")
    assert w.cover([str(f)])
    (poll,) = _polls(w, 1)
    (root / "elsewhere").write_text("x")  # beside a folder above: nothing to do with the file
    assert poll.quiet()
    os.rename(root / "a", root / "c")
    assert not poll.quiet()


def test_a_path_through_a_symlink_or_on_a_filesystem_inotify_may_miss_is_not_covered(w: watch.Watch, tmp_path: Path) -> None:
    root = _canonical(tmp_path)
    (root / "real").mkdir()
    (root / "real" / "rules.yaml").write_text("rules: []\n")
    (root / "link").symlink_to(root / "real")
    assert not w.cover([str(root / "link" / "rules.yaml")])
    assert not w.cover(["relative/rules.yaml"])
    w._types = [("/", "nfs")]
    assert not w.cover([str(root / "real" / "rules.yaml")])


def test_mountinfo_lines_give_each_paths_filesystem() -> None:
    text = ("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
            "30 22 0:26 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw\n"
            "31 22 0:27 / /mnt/with\\040space rw - nfs4 srv:/x rw\n")
    mounts = watch.mount_types(text)
    assert watch.fs_type("/tmp/x/y", mounts) == "tmpfs"
    assert watch.fs_type("/tmpfoo", mounts) == "ext4"
    assert watch.fs_type("/mnt/with space/rules.yaml", mounts) == "nfs4"
    assert watch.fs_type("/", mounts) == "ext4"


def test_a_mount_is_flagged_to_every_workers_poll_and_stays_flagged(w: watch.Watch, tmp_path: Path) -> None:
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting needs root")
    target = _canonical(tmp_path) / "mnt"
    target.mkdir()
    first, second = _polls(w)
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(target)], capture_output=True).returncode:
        pytest.skip("mount not permitted here")
    try:
        assert not first.quiet() and not first.quiet()
        assert not second.quiet()
        assert not w.quiet() and not w.quiet()
    finally:
        subprocess.run(["umount", str(target)], check=True)
