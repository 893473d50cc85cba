"""A clone copied into the tree through an archive pipeline is a repository landing there only
when its .git travels too. Each pipeline runs for real under bash (tar, cpio where installed);
guard refuses it as create exactly when a .git arrived in the tree."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze

PIPELINES = [
    'tar -C "$SRC" -cf - proj | tar -xf - -C "$DEST"',
    'tar -C "$SRC" --exclude-vcs -cf - proj | tar -xf - -C "$DEST"',
    'tar -C "$SRC" --exclude=.git -cf - proj | tar -xf - -C "$DEST"',
    'tar -C "$SRC" --exclude .git -cf - proj | tar -xf - -C "$DEST"',
    'tar -C "$SRC" --exclude=node_modules -cf - proj | tar -xf - -C "$DEST"',
    'cd "$SRC" && find proj -name .git -prune -o -print | cpio -pdm "$DEST" 2>/dev/null',
    'cd "$SRC" && find proj ! -path "*/.git*" | cpio -pdm "$DEST" 2>/dev/null',
    'cd "$SRC" && find proj | cpio -pdm "$DEST" 2>/dev/null',
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_create_is_refused_exactly_when_a_git_folder_arrives(pipeline: str, tmp_path: Path) -> None:
    if "cpio" in pipeline and shutil.which("cpio") is None:
        pytest.skip("cpio is not installed here")
    src, tree = tmp_path / "src", tmp_path / "ws"
    (src / "proj" / ".git").mkdir(parents=True)
    (src / "proj" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (src / "proj" / "main.py").write_text("print(1)\n")
    dest = tree / "app" / "vendor"
    dest.mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SRC": str(src), "DEST": str(dest)}
    subprocess.run(["bash", "-c", pipeline], cwd=tree / "app", env=env, check=True, timeout=60)
    assert (dest / "proj" / "main.py").exists()  # the copy happened
    arrived = (dest / "proj" / ".git").exists()
    v = analyze(pipeline, Context(cwd=str(tree / "app"), trees=(str(tree),), env=env))
    assert (v.verdict == "refuse" and v.category == "create") == arrived, (pipeline, v.message)
