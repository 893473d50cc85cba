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


def _world(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A clone in $SRC/proj (its .git and a file), the tree, $DEST inside it, and $TMP outside."""
    src, tree, scratch = tmp_path / "src", tmp_path / "ws", tmp_path / "scratch"
    (src / "proj" / ".git").mkdir(parents=True)
    (src / "proj" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (src / "proj" / "main.py").write_text("print(1)\n")
    dest = tree / "app" / "vendor"
    dest.mkdir(parents=True)
    scratch.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "SRC": str(src),
        "DEST": str(dest),
        "TMP": str(scratch),
    }
    return tree, dest, env


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_create_is_refused_exactly_when_a_git_folder_arrives(pipeline: str, tmp_path: Path) -> None:
    if "cpio" in pipeline and shutil.which("cpio") is None:
        pytest.skip("cpio is not installed here")
    tree, dest, env = _world(tmp_path)
    subprocess.run(["bash", "-c", pipeline], cwd=tree / "app", env=env, check=True, timeout=60)
    assert (dest / "proj" / "main.py").exists()  # the copy happened
    arrived = (dest / "proj" / ".git").exists()
    v = analyze(pipeline, Context(cwd=str(tree / "app"), trees=(str(tree),), env=env))
    assert (v.verdict == "refuse" and v.category == "create") == arrived, (pipeline, v.message)


# An archive file packed from the clone earlier in the command, then unpacked into the tree
# (rules/programs/archives.yaml says how tar, zip and unzip read).
ROUND_TRIPS = [
    'tar -C "$SRC" -czf "$TMP/p.tgz" proj && tar -xzf "$TMP/p.tgz" -C "$DEST"',
    'tar -C "$SRC" -czf "$TMP/p.tgz" proj && cd "$DEST" && tar xzf "$TMP/p.tgz"',
    'tar -C "$SRC" --exclude-vcs -czf "$TMP/p.tgz" proj && tar -xzf "$TMP/p.tgz" -C "$DEST"',
    'tar -C "$SRC" -cf "$TMP/p.tar" proj && tar -xf "$TMP/p.tar" -C "$DEST" proj/main.py',
    'cd "$SRC" && zip -qr "$TMP/p.zip" proj && unzip -q "$TMP/p.zip" -d "$DEST"',
    'cd "$SRC" && zip -qr "$TMP/p.zip" proj -x "proj/.git/*" && unzip -q "$TMP/p.zip" -d "$DEST"',
    'cd "$SRC" && zip -qr "$TMP/p.zip" proj && cd "$DEST" && unzip -q "$TMP/p.zip" -x "proj/.git/*"',
    # the archive through standard output and input
    'tar -C "$SRC" -cf - proj > "$TMP/p.tar" && tar -xf - -C "$DEST" < "$TMP/p.tar"',
    'cd "$SRC" && zip -qr - proj > "$TMP/p.zip" && unzip -q "$TMP/p.zip" -d "$DEST"',
]


@pytest.mark.parametrize("command", ROUND_TRIPS)
def test_an_archive_made_then_unpacked_is_a_copy(command: str, tmp_path: Path) -> None:
    if "zip" in command and (shutil.which("zip") is None or shutil.which("unzip") is None):
        pytest.skip("zip or unzip is not installed here")
    tree, dest, env = _world(tmp_path)
    v = analyze(command, Context(cwd=str(tree / "app"), trees=(str(tree),), env=env))
    subprocess.run(["bash", "-c", command], cwd=tree / "app", env=env, check=True, timeout=60)
    assert (dest / "proj" / "main.py").exists()  # the copy happened
    arrived = (dest / "proj" / ".git").exists()
    assert (v.verdict == "refuse" and v.category == "create") == arrived, (command, v.message)
