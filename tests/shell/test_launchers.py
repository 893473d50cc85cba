"""The launchers as installed by pip: a regular install starts isolated without the `site` scan
(the launcher adds -IS to the #! line pip wrote, on its first run) and hands a plain command to
the real shell before `os` is imported; an editable install keeps pip's line and works as
before; a launcher whose package is not where -IS looks starts the ordinary way.

Also: guard.shell.launch's plain-command test takes a command only where guard.shell.main's own pre-check
path would have run it unanalysed (never a command the full path would analyse)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guard.shell import decide as shell_decide
from guard.shell import launch
from guard.shell import main as shell
from tests.conftest import REPO

REFUSED = "git push origin main"


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin"


def _pip(bindir: Path, *args: str) -> None:
    p = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", *args],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]


@pytest.fixture(scope="module")
def regular(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("regular")
    wheels = root / "wheels"
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    bindir = _venv(root / "venv")
    _pip(bindir, str(next(wheels.glob("guard-*.whl"))))
    return bindir


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bindir = _venv(tmp_path_factory.mktemp("editable") / "venv")
    _pip(bindir, "-e", str(REPO))
    return bindir


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUARD_", "PYTHON", "BASH_FUNC_"))}
    env.update(GUARD_SERVER="0", GUARD_TREE=str(tmp / "tree"), GUARD_AUDIT_LOG=str(tmp / "audit.jsonl"))
    env.pop("BASH_ENV", None)
    (tmp / "tree").mkdir(exist_ok=True)
    return env


def _run(argv: list[str], tmp: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**_env(tmp), **kw.pop("env", {})}  # type: ignore[dict-item]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp / "tree", timeout=120, **kw)  # type: ignore[call-overload]


def _first_line(path: Path) -> str:
    return path.read_bytes().split(b"\n", 1)[0].decode()


def test_regular_install_adds_fast_flags_on_first_run(regular: Path, tmp_path: Path) -> None:
    for name in ("guard-shell", "guard"):
        assert _first_line(regular / name) == f"#!{regular / 'python'}"  # as pip wrote it
    before = _first_line(regular / "guard-shell")
    p = _run([str(regular / "guard-shell"), "-c", "echo one"], tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (0, "one\n", "")
    assert _first_line(regular / "guard-shell") == before + " -IS"
    assert os.access(regular / "guard-shell", os.X_OK)
    p = _run([str(regular / "guard"), "check", "--", "ls"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert _first_line(regular / "guard").endswith(" -IS")
    # a second run leaves the line alone
    _run([str(regular / "guard-shell"), "-c", "true"], tmp_path)
    assert _first_line(regular / "guard-shell") == before + " -IS"


def test_regular_install_plain_command_skips_os(regular: Path, tmp_path: Path) -> None:
    _run([str(regular / "guard-shell"), "-c", "true"], tmp_path)  # first run fixes the line
    assert _first_line(regular / "guard-shell").endswith(" -IS")
    p = _run([str(regular / "python"), "-IS", "-X", "importtime", str(regular / "guard-shell"), "-c", "echo plain"],
             tmp_path)
    assert (p.returncode, p.stdout) == (0, "plain\n"), p.stderr
    modules = {ln.rsplit("|", 1)[-1].strip() for ln in p.stderr.splitlines() if ln.startswith("import time:")}
    assert "guard.shell.precheck" in modules
    assert not modules & {"os", "site", "guard.shell.main", "guard.engine"}, sorted(modules)
    floor = _run([str(regular / "python"), "-IS", "-X", "importtime", "-c", "pass"], tmp_path)
    started = {ln.rsplit("|", 1)[-1].strip() for ln in floor.stderr.splitlines() if ln.startswith("import time:")}
    # beyond what the interpreter imports anyway: guard's five small modules, the empty packages
    # they sit in, and built-in ones
    assert modules - started <= {"guard", "guard.shell", "guard.system", "guard.shell.launch", "guard.shell.precheck",
                                 "guard.system.cachedir", "guard.system.planfile", "guard.shell.simple_exec",
                                 "_signal", "marshal"}, \
        sorted(modules - started)


def test_regular_install_full_analysis_and_passthrough(regular: Path, tmp_path: Path) -> None:
    _run([str(regular / "guard-shell"), "-c", "true"], tmp_path)
    p = _run([str(regular / "guard-shell"), "-c", REFUSED], tmp_path)
    assert p.returncode == 126 and "git_push" in p.stderr, p.stderr
    p = _run([str(regular / "guard-shell"), "-c", "x=$(echo hi); echo $x >&2; exit 3"], tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (3, "", "hi\n")
    p = _run([str(regular / "guard"), "check", "--json", "--", REFUSED], tmp_path)
    assert json.loads(p.stdout)["verdict"] == "refuse"


def test_editable_install_keeps_pips_line_and_works(editable: Path, tmp_path: Path) -> None:
    line = _first_line(editable / "guard-shell")
    for argv, status in (([str(editable / "guard-shell"), "-c", "echo e"], 0),
                         ([str(editable / "guard-shell"), "-c", REFUSED], 126)):
        p = _run(argv, tmp_path)
        assert p.returncode == status, p.stderr
    assert _first_line(editable / "guard-shell") == line
    assert " " not in line


def test_fast_line_without_package_there_starts_the_ordinary_way(editable: Path, tmp_path: Path) -> None:
    """A launcher with -IS whose interpreter's site-packages has no guard (an editable install,
    a moved one) starts again without the flags, and still decides."""
    launcher = tmp_path / "guard-shell"
    text = (editable / "guard-shell").read_text().split("\n", 1)[1]
    launcher.write_text(f"#!{editable / 'python'} -IS\n{text}")
    launcher.chmod(0o755)
    assert _run([str(launcher), "-c", "echo moved"], tmp_path).stdout == "moved\n"
    p = _run([str(launcher), "-c", REFUSED], tmp_path)
    assert p.returncode == 126 and "git_push" in p.stderr
    assert _first_line(launcher).endswith(" -IS")


def test_plain_path_hands_over_the_callers_environment_and_signals(regular: Path, tmp_path: Path) -> None:
    """The real shell gets the environment as passed (not Python's locale-coerced one) and
    SIGPIPE at its default, on the fast path as on the full one."""
    dump = tmp_path / "dump-shell"
    dump.write_text("#!/bin/bash\ntr '\\0' '\\n' </proc/$$/environ | sort >\"$OUT\"\n"
                    "grep ^SigIgn /proc/$$/status >>\"$OUT\"\necho \"$0 $*\" >>\"$OUT\"\n")
    dump.chmod(0o755)
    _run([str(regular / "guard-shell"), "-c", "true"], tmp_path)
    extra = {"GUARD_REAL_SHELL": str(dump), "LC_ALL": "C", "ODD": "a\nb", "OUT": str(tmp_path / "out")}
    seen = {}
    for how, argv in (("fast", [str(regular / "guard-shell"), "-c", "ls -la"]),
                      ("full", [str(regular / "guard-shell"), "-c", "ls -la | cat"])):
        p = _run(argv, tmp_path, env=extra)
        assert p.returncode == 0, p.stderr
        seen[how] = (tmp_path / "out").read_text()
    fast = seen["fast"].splitlines()
    assert not any(ln.startswith("LC_CTYPE=") for ln in fast)
    assert "ODD=a" in fast and "LC_ALL=C" in fast
    sigign = int(next(ln for ln in fast if ln.startswith("SigIgn")).split()[1], 16)
    assert not sigign & (1 << 12)  # SIGPIPE (13) is not ignored
    assert fast[-1] == f"{dump} -c ls -la"


ARGVS = (["-c"], ["-lc"], ["-l", "-c"], ["-euc"], ["-c", "-x"], ["-i", "-c"], ["-o", "pipefail", "-c"],
         ["--login", "-c"], ["+e", "-c"], ["-s"], [])


def _full_path_plain(args: list[str], env: dict[str, str]) -> bool:
    """What guard.shell.main decides without the fast path: a plain run (pre-check passed)."""
    parsed = shell.parse_args(args)
    if parsed.mode != "command":
        return False
    functions = shell.exported_functions(env)
    if shell.startup_texts(parsed, env):
        return False
    return shell_decide.passes_precheck(parsed.operand or "", env, None, functions)


def _commands() -> list[str]:
    out = ["true", "ls -la", "cat f", "pytest -q", "echo hi", "ls ~/.ssh", "git status", "ls; git push",
           "cat /root/.netrc", "cd /tmp", "echo $HOME", "-c", "", " ", "ls\tx", "ls\nrm -rf x", "héllo"]
    for name in ("labelled.jsonl", "deep.jsonl", "corpus-sample.jsonl"):
        for line in (REPO / "fixtures" / "commands" / name).read_text().splitlines():
            if line.strip():
                out.append(json.loads(line)["command"])
    return out


@pytest.mark.parametrize("env", [{}, {"BASH_FUNC_ls%%": "() { git push; }"}, {"BASH_ENV": "/nonexistent"}],
                         ids=["plain", "exported-function", "bash-env"])
def test_fast_path_takes_only_what_the_full_path_runs_unanalysed(env: dict[str, str]) -> None:
    taken = 0
    for text in _commands():
        for pre in ARGVS:
            args = [*pre, text] if pre else [text]
            benv = {k.encode(): v.encode() for k, v in env.items()}
            fast = launch.plain_command(args, benv)
            if fast:
                taken += 1
                assert _full_path_plain(args, env), args
    if not env or "BASH_FUNC_ls%%" in env:
        assert taken > 100  # the fast path is used at all
    else:
        assert taken == 0  # $BASH_ENV is read by the real shell first: always the full path


def test_plain_operand_shapes() -> None:
    assert launch.plain_operand(["-c", "ls"]) == "ls"
    assert launch.plain_operand(["-lc", "ls", "name", "arg"]) == "ls"
    assert launch.plain_operand(["-e", "-c", "ls"]) == "ls"
    for args in (["ls"], ["-c"], ["-ic", "ls"], ["-o", "x", "-c", "ls"], ["--norc", "-c", "ls"], ["-c", "--", "ls"],
                 ["-s", "-c", "ls"], ["-c", "-ls"]):
        assert launch.plain_operand(args) is None, args


def test_fix_shebang_only_where_a_fast_start_finds_guard(tmp_path: Path) -> None:
    exe = tmp_path / "venv" / "bin" / "python3"
    pkg = tmp_path / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / "guard"
    pkg.mkdir(parents=True)
    exe.parent.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    script = exe.parent / "guard-shell"
    body = "#!" + str(exe) + "\nprint('x')\n"
    script.write_text(body)
    script.chmod(0o751)
    assert not launch.fix_shebang(str(script), str(exe), str(tmp_path / "elsewhere" / "guard" / "__init__.py"))
    assert script.read_text() == body
    assert launch.fix_shebang(str(script), str(exe), str(pkg / "__init__.py"))
    assert script.read_text() == "#!" + str(exe) + " -IS\nprint('x')\n"
    assert script.stat().st_mode & 0o7777 == 0o751
    assert not launch.fix_shebang(str(script), str(exe), str(pkg / "__init__.py"))  # already has options
    assert sorted(p.name for p in exe.parent.iterdir()) == ["guard-shell"]  # no temp file left
