"""The cache folder another user prepared is not trusted (issue 37, finding 1).

The victim's HOME is a world-writable folder; a second real user (created here with useradd,
so the test runs as root and is skipped otherwise) owns ``.cache/guard`` in it and has planted
what guard would read or write there: a pre-check plan that lists ``git``, a compiled rule set
without the publish rules, symbolic links at the names guard writes through. guard must work as
if there were no cache, say so once, and neither read nor write anything there.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import guard_bin

USER = "guard-t37"


@pytest.fixture(scope="module")
def other_user() -> Iterator[pwd.struct_passwd]:
    if os.getuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to create a second user")
    created = False
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        r = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"useradd failed: {r.stderr.strip()}")
        created = True
        pw = pwd.getpwnam(USER)
    yield pw
    if created:
        subprocess.run(["userdel", USER], capture_output=True)


@pytest.fixture
def world(other_user: pwd.struct_passwd) -> Iterator[dict]:
    base = Path(tempfile.mkdtemp(prefix="guard-t37-", dir="/tmp"))
    try:
        base.chmod(0o777)  # the victim's HOME, writable by everyone
        tree = base / "tree"
        (tree / "app").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GUARD_", "XDG_"))}
        env.update(HOME=str(base), GUARD_TREE=str(tree), GUARD_SERVER="off", GUARD_AUDIT_LOG="off",
                   GUARD_CHECK_RECORDS="1")
        legit = base / "legit"  # a cache of the victim's own, to copy file names and contents from
        legit.mkdir(mode=0o700)
        subprocess.run([guard_bin(), "check", "--", "ls"], env=dict(env, XDG_CACHE_HOME=str(legit)),
                       cwd=tree / "app", check=True, capture_output=True)
        planted = base / ".cache" / "guard"
        planted.mkdir(parents=True)
        yield {"base": base, "tree": tree, "env": env, "legit": legit / "guard", "planted": planted,
               "user": other_user}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _hand_over(world: dict) -> None:
    """Everything under ``.cache`` becomes the other user's, as if they had made it."""
    uid, gid = world["user"].pw_uid, world["user"].pw_gid
    for root, dirs, files in os.walk(world["base"] / ".cache"):
        for name in [".", *dirs, *files]:
            os.lchown(os.path.join(root, name), uid, gid)


def test_a_planted_precheck_plan_does_not_let_git_push_skip_the_analysis(world: dict) -> None:
    legit_plans = sorted(world["legit"].glob("precheck-*"))
    assert legit_plans, "the victim's own guard left a plan"
    for plan in legit_plans:  # the same plan with git listed and nothing watched
        data = plan.read_bytes()
        if plan.suffix == ".txt":
            lines = data.decode().split("\n")
            lines[-3] = lines[-3] + " git"
            lines[-2] = "watched"
            data = "\n".join(lines).encode()
        else:  # the marshal format of older guards
            import marshal

            fmt, at, programs, _watched = marshal.loads(data)
            data = marshal.dumps((fmt, at, (*programs, "git"), ()), 0)
        (world["planted"] / plan.name).write_bytes(data)
    _hand_over(world)
    r = subprocess.run([guard_bin("guard-shell"), "-c", "git push origin main"], env=world["env"],
                       cwd=world["tree"] / "app", capture_output=True, text=True, timeout=120)
    assert r.returncode == 126, (r.returncode, r.stderr)
    assert "Refused: git push" in r.stderr
    assert "not this user's own" in r.stderr and r.stderr.count("guard: cache:") == 1


def test_a_planted_rule_set_without_the_git_rules_is_not_used(world: dict) -> None:
    for cached in world["legit"].glob("rules-*.json"):
        if cached.is_symlink():
            continue
        data = json.loads(cached.read_text())
        data["rules"] = [r for r in data["rules"] if "git" not in json.dumps(r.get("match"))]
        (world["planted"] / cached.name).write_text(json.dumps(data))
    _hand_over(world)
    r = subprocess.run([guard_bin(), "check", "--", "git push origin main"], env=world["env"],
                       cwd=world["tree"] / "app", capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stdout.startswith("Refused: git push"), (r.stdout, r.stderr)


def test_nothing_is_written_through_links_planted_at_the_names_guard_writes(world: dict) -> None:
    """The other user links every name guard could write (the temporary names included, for
    the pid the victim's guard will have) to a file of the victim's; it stays as it was."""
    victim = world["base"] / "victim-file"
    victim.write_text("the victim's data\n")
    victim.chmod(0o600)
    names = [p.name for p in world["legit"].iterdir() if not p.name.startswith(".")]
    names += [n.replace(".txt", ".marshal") for n in names if n.startswith("precheck-")]
    # a shell that writes its pid and waits, then execs guard: the links are made for that pid
    script = 'echo $$ > "$1"; read go; exec "$2" check -- ls'
    pidfile = world["base"] / "pid"
    p = subprocess.Popen(["sh", "-c", script, "sh", str(pidfile), guard_bin()], env=world["env"],
                         cwd=world["tree"] / "app", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            import time

            time.sleep(0.05)
        pid = pidfile.read_text().strip()
        for name in names:
            for link in (name, f"{name}.{pid}.tmp", f".{name}.{pid}.tmp", f"{name[:-5]}.{pid}.tmp"):
                target = world["planted"] / link
                if not target.exists() and not target.is_symlink():
                    target.symlink_to(victim)
        _hand_over(world)
        out, err = p.communicate("go\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert victim.read_text() == "the victim's data\n"
    assert all(f.lstat().st_uid == world["user"].pw_uid for f in world["planted"].iterdir()), \
        "guard wrote into the other user's folder"
