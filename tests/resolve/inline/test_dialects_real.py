"""The dialect tables (and vim's script, and fish's set) against the real interpreters: each snippet runs for real with a stand-in
``git`` first on PATH that logs every argv it gets, and guard's reading of the same command line
must name exactly those git invocations. An interpreter not installed here is skipped with the
reason (CI installs what Debian packages: .ci/run)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from guard.context import Context
from guard.engine import analyze

GO_MAIN = """package main

import "os/exec"

func main() {
	g := "git"
	args := []string{"push", "origin"}
	c := exec.Command(g, append(args, "main")...)
	c.Run()
	exec.Command("git", "tag", "v1").Run()
}
"""

# (interpreter, the command as an agent would type it with DIR for a scratch folder, the git
# argvs it runs, in order)
CASES = [
    ("perl", """perl -e 'my @a = ("push", "origin"); system("git", @a)'""", [["push", "origin"]]),
    ("perl", """perl -e 'my $m = "fix it"; system("git commit -m \\"$m\\"")'""", [["commit", "-m", "fix it"]]),
    ("perl", """perl -e 'my $b = "main"; print qx{git log $b}; exec qw(git fetch)'""", [["log", "main"], ["fetch"]]),
    ("perl", """perl -e 'open(my $p, "-|", "git", "status") or die; print <$p>'""", [["status"]]),
    ("perl", """perl -we 'my $f = "README.md"; system "git", "add", $f'""", [["add", "README.md"]]),
    ("ruby", """ruby -e 'b = "main"; system("git", "push", "origin", b)'""", [["push", "origin", "main"]]),
    ("ruby", """ruby -e 'r = "origin"; puts `git remote get-url #{r}`'""", [["remote", "get-url", "origin"]]),
    ("ruby", """ruby -e 'IO.popen(["git", "fetch", "--all"]).read'""", [["fetch", "--all"]]),
    ("ruby", """ruby -ropen3 -e 'Open3.capture2("git", "rev-parse", "HEAD")'""", [["rev-parse", "HEAD"]]),
    ("lua", """lua -e 'local g = "git"; os.execute(g .. " tag v2")'""", [["tag", "v2"]]),
    ("lua", """lua -e 'local p = io.popen("git status --short"); p:read("a"); p:close()'""",
     [["status", "--short"]]),
    ("lua", """lua -e 'os.execute(table.concat({"git", "add", "-A"}, " "))'""", [["add", "-A"]]),
    ("vim", """vim -Nu NONE -i NONE -es -c 'call system("git push origin main")' -c 'qa!'""", [["push", "origin", "main"]]),
    ("vim", """vim -Nu NONE -i NONE -es -c 'silent! exe "!git add ." | qa!'""", [["add", "."]]),
    ("fish", """fish -c 'set g git; $g add .'""", [["add", "."]]),
    ("fish", """fish -c 'set -l c git commit; $c -m x; set -e c'""", [["commit", "-m", "x"]]),
    ("php", """php -r '$c = "git"; passthru($c . " push origin main");'""", [["push", "origin", "main"]]),
    ("php", """php -r 'echo shell_exec("git log -1"); proc_open(["git", "status"], [], $p);'""",
     [["log", "-1"], ["status"]]),
    ("php", """php -r '$b = "main"; system("git checkout $b"); echo `git rev-parse HEAD`;'""",
     [["checkout", "main"], ["rev-parse", "HEAD"]]),
    ("zsh", """zsh -c 'g=git; $g push origin main'""", [["push", "origin", "main"]]),
    ("groovy", """groovy -e 'def g = "git"; "$g push origin".execute().waitFor(); ["git", "log", "-1"].execute().waitFor()'""",
     [["push", "origin"], ["log", "-1"]]),
    ("groovy", """groovy -e 'new ProcessBuilder("git", "status").start().waitFor()'""", [["status"]]),
    ("kotlinc", "cat > DIR/s.kts <<'EOF'\nval g = \"git\"\nProcessBuilder(g, \"push\", \"origin\").start().waitFor()\n"
                "Runtime.getRuntime().exec(arrayOf(\"git\", \"log\", \"-1\")).waitFor()\nEOF\nkotlinc -script DIR/s.kts",
     [["push", "origin"], ["log", "-1"]]),
    ("go", "cat > DIR/main.go <<'EOF'\n" + GO_MAIN + "EOF\ncd DIR && go run main.go",
     [["push", "origin", "main"], ["tag", "v1"]]),
    ("java", "printf '%s' 'class M { public static void main(String[] a) throws Exception { "
             "String g = \"git\"; new ProcessBuilder(g, \"status\").inheritIO().start().waitFor(); "
             "Runtime.getRuntime().exec(new String[]{g, \"add\", \"-A\"}).waitFor(); } }' > DIR/M.java && "
             "java DIR/M.java", [["status"], ["add", "-A"]]),
    ("jshell", "printf '%s\\n' 'var b = \"main\";' "
               "'new ProcessBuilder(\"git\", \"push\", \"origin\", b).start().waitFor();' '/exit' | jshell -q",
     [["push", "origin", "main"]]),
]


def _runs(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    out: list[list[str]] = [[]]
    for line in log.read_text().split("\n")[:-1]:
        if line == "\x1e":
            out.append([])
        else:
            out[-1].append(line)
    return out[:-1]


@pytest.mark.parametrize(("program", "command", "want"), CASES, ids=[f"{p}:{c[:40]}" for p, c, _ in CASES])
def test_guard_reads_what_the_real_interpreter_runs(program: str, command: str, want: list[list[str]],
                                                    tmp_path: Path) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "argv.log"
    stand_in = bin_ / "git"
    stand_in.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {shlex.quote(str(log))}\n'
                        f'printf "\\036\\n" >> {shlex.quote(str(log))}\n')
    stand_in.chmod(0o755)
    command = command.replace("DIR", str(work))
    env = {"PATH": f"{bin_}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "GOCACHE": str(tmp_path / "gocache"),
           "GOPATH": str(tmp_path / "gopath"), "GOFLAGS": "-mod=mod", "GO111MODULE": "auto"}
    java = shutil.which("java")
    if java:  # groovy's launcher wants JAVA_HOME
        env["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
    proc = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=240)
    ran = _runs(log)
    if not ran:
        pytest.skip(f"{program} could not run its snippet here: {proc.stderr.strip()[:300]}")
    assert ran == want, proc.stderr
    v = analyze(command, Context(cwd=str(work), trees=("/workspace",), env={"HOME": "/root"}))
    assert [list(i.argv[1:]) for i in v.invocations if i.program == "git"] == want, v.unresolved
