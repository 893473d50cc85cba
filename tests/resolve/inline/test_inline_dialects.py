"""The dialect tables (rules/dialects/) read by the one tree-sitter analyser: what each language's
snippet runs (the exact argv or shell line, and folder), what stays data, and the command lines
that hand a program to an interpreter (rules/programs/interpreters.yaml), through the resolver."""

from __future__ import annotations

import base64

import pytest

from guard.context import Context
from guard.engine import analyze
from guard.ir import UNKNOWN
from guard.resolve.inline import looks_like_command
from tests.resolve.inline.catalogue import analyze as analyze_inline
from tests.resolve.inline.catalogue import dialects


def view(lang: str, src: str) -> list[tuple]:
    return [(f.kind, f.argv if f.kind == "argv" else f.shell, f.cwd) for f in analyze_inline(lang, src)[0]
            if f.kind in ("argv", "shell")]


RUNS = [
    # perl
    ("perl", 'my ($x) = 1; my $g = "git"; system { $g } $g, "push"', [("argv", ("git", "push"), None)]),
    ("perl", 'my @c = ("git", "log"); my $o = `@c --oneline`;', [("shell", "git log --oneline", None)]),
    ("perl", 'system(join(" ", "git", "tag", "v1"))', [("shell", "git tag v1", None)]),
    ("perl", 'eval "system(q{git push})"', [("shell", "git push", None)]),
    ("perl", 'my $c = "git"; $c .= " push"; system($c)', []),
    # ruby
    ("ruby", 'Kernel.exec("git", "push", chdir: "/tmp/r")', [("argv", ("git", "push"), "/tmp/r")]),
    ("ruby", 'Open3.pipeline("git log", ["git", "push"])', [("shell", "git log", None), ("argv", ("git", "push"), None)]),
    ("ruby", 'cmd = %w[git commit -m x]; PTY.spawn(*cmd)', [("argv", ("git", "commit", "-m", "x"), None)]),
    ("ruby", 'system(["git", "status"].join(" "))', [("shell", "git status", None)]),
    # php
    ("php", '$a = ["git", "push"]; proc_open($a, [], $p);', [("argv", ("git", "push"), None)]),
    ("php", 'echo shell_exec(implode(" ", ["git", "log", "-1"]));', [("shell", "git log -1", None)]),
    ("php", "eval('system(\"git add -A\");');", [("shell", "git add -A", None)]),
    # lua
    ("lua", 'local cmd = "git"\nlocal h = io.popen(cmd .. " status")', [("shell", "git status", None)]),
    ("lua", "load('os.execute(\"git stash\")')()", [("shell", "git stash", None)]),
    # go
    ("go", 'package main\nimport "os/exec"\nfunc main() { exec.CommandContext(ctx, "git", "fetch").Run() }',
     [("argv", ("git", "fetch"), None)]),
    ("go", 'package main\nimport "syscall"\nfunc main() { syscall.Exec("/usr/bin/git", []string{"git", "push"}, nil) }',
     [("argv", ("git", "push"), None)]),
    ("go", 'package main\nfunc main() { var b = "main"; exec.Command("git", "push", "origin", b).Run() }',
     [("argv", ("git", "push", "origin", "main"), None)]),
    # java
    ("java", 'var pb = new ProcessBuilder(List.of("git", "tag", "v2")); pb.directory(new File("/tmp/j")); pb.start();',
     [("argv", ("git", "tag", "v2"), "/tmp/j")]),
    ("java", 'String c = "git " + "push"; Runtime.getRuntime().exec(c);', [("argv", ("git", "push"), None)]),
    # kotlin
    ("kotlin", 'val r = "origin"\nProcessBuilder("git", "fetch", r).start()', [("argv", ("git", "fetch", "origin"), None)]),
    ("kotlin", 'listOf("git", "add", ".").execute()', [("argv", ("git", "add", "."), None)]),
    # groovy
    ("groovy", "def c = ['git', 'push', 'origin']\nc.execute()", [("argv", ("git", "push", "origin"), None)]),
    ("groovy", 'evaluate(\'"git status".execute()\')', [("argv", ("git", "status"), None)]),
    # rust
    ("rust", 'fn main() { let mut c = Command::new("git"); c.arg("push").arg("origin"); c.spawn(); }',
     [("argv", ("git", "push", "origin"), None)]),
    ("rust", 'fn main() { std::process::Command::new("git").args(vec_of(x)).status(); }',
     [("argv", ("git", UNKNOWN), None)]),
    # powershell
    ("powershell", '$cmd = "git"; $args2 = "status"; & $cmd $args2', [("argv", ("git", "status"), None)]),
    ("powershell", "iex \"git commit -m 'wip'\"", [("argv", ("git", "commit", "-m", "wip"), None)]),
    ("powershell", "Start-Process git -ArgumentList 'push' -WorkingDirectory C:\\repo -NoNewWindow",
     [("argv", ("git", "push"), "C:\\repo")]),
    ("powershell", 'GIT.EXE Push', [("argv", ("GIT.EXE", "Push"), None)]),
]


@pytest.mark.parametrize(("lang", "src", "want"), RUNS, ids=[f"{x[0]}:{x[1][:40]}" for x in RUNS])
def test_what_runs(lang: str, src: str, want: list[tuple]) -> None:
    assert view(lang, src) == want


DATA = [
    ("perl", 'my %h = (exec => "git push"); print STDERR "git push\\n"'),
    ("ruby", 'puts "system(\\"git push\\")"; x = {exec: "git push"}'),
    ("php", '$s = "shell_exec(\'git push\')"; echo $s;'),
    ("lua", 'local s = [[os.execute("git push")]]; print(s)'),
    ("go", 'package main\nimport "fmt"\nfunc main() { fmt.Println("exec.Command(\\"git\\", \\"push\\")") }'),
    ("java", 'System.out.println("Runtime.getRuntime().exec(\\"git push\\")");'),
    ("kotlin", 'println("git push".length)'),
    ("groovy", "println 'git push'.size()"),
    ("rust", 'fn main() { let s = "Command::new(\\"git\\")"; println!("{}", s); }'),
    ("powershell", 'Write-Host "git push"; # git push origin main'),
]


@pytest.mark.parametrize(("lang", "src"), DATA, ids=[f"{x[0]}:{x[1][:40]}" for x in DATA])
def test_data_runs_no_git(lang: str, src: str) -> None:
    """(In PowerShell every command runs, Write-Host too; what it prints is data.)"""
    assert not [r for r in view(lang, src) if (r[0] == "shell" and looks_like_command(r[1])) or r[1][0] == "git"]


@pytest.mark.parametrize("lang", sorted(dialects()))
@pytest.mark.parametrize("src", ["", "\x00\x01", "\ud800 system(", "((((((" * 2000, "'\"`" * 500])
def test_odd_input_never_raises(lang: str, src: str) -> None:
    findings, notes = analyze_inline(lang, src)
    assert isinstance(findings, list) and isinstance(notes, list)


def test_not_constant_is_a_note_with_the_line() -> None:
    assert analyze_inline("ruby", 'puts 1\nsystem(ARGV[0])\n') == ([], ["ruby: system argument not constant at line 2"])


CTX = Context(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})


def gits(command: str) -> list[tuple[str, ...]]:
    return [i.argv for i in analyze(command, CTX).invocations if i.program == "git"]


LAUNCHES = [
    ("perl5.36 -e 'system(\"git push\")'", [("git", "push")]),
    ("perl -lne 'system(\"git\", \"add\", \"a.py\")' list.txt", [("git", "add", "a.py")]),
    ("ruby -r json -e '`git stash`'", [("git", "stash")]),
    ("php -d x=1 -r 'passthru(\"git log\");'", [("git", "log")]),
    ("lua5.4 -e 'os.execute(\"git tag v1\")'", [("git", "tag", "v1")]),
    ("groovy -e '\"git push\".execute()'", [("git", "push")]),
    ("pwsh -NoProfile -EncodedCommand " + base64.b64encode("git push origin main".encode("utf-16-le")).decode(),
     [("git", "push", "origin", "main")]),
    ("powershell.exe -ExecutionPolicy Bypass -command \"& 'git' commit -am wip\"", [("git", "commit", "-am", "wip")]),
    ("cat > /tmp/k/s.kts <<'EOF'\nProcessBuilder(\"git\", \"push\").start()\nEOF\nkotlinc -script /tmp/k/s.kts",
     [("git", "push")]),
    ("printf '%s' 'fn main() { std::process::Command::new(\"git\").arg(\"push\").status(); }' > /tmp/t.rs; "
     "cargo +nightly -Zscript /tmp/t.rs", [("git", "push")]),
    ("echo 'new ProcessBuilder(\"git\", \"fetch\").start();' | jshell -q", [("git", "fetch")]),
    ("cat <<'EOF' > M.java\nclass M { public static void main(String[] a) throws Exception { "
     "Runtime.getRuntime().exec(\"git add -A\"); } }\nEOF\njava M.java", [("git", "add", "-A")]),
]


@pytest.mark.parametrize(("command", "want"), LAUNCHES, ids=[c[:50] for c, _ in LAUNCHES])
def test_interpreters_hand_their_program_to_the_dialect(command: str, want: list[tuple[str, ...]]) -> None:
    assert gits(command) == want


@pytest.mark.parametrize("command", ["go build ./...", "java -jar app.jar git push", "cargo build --release",
                                     "kotlinc Main.kt -d out", "pwsh -NoProfile -Command 'Write-Output \"git push\"'",
                                     "perl -ne 'print if /git push/' README.md", "go run ."])
def test_launches_that_run_no_git(command: str) -> None:
    assert gits(command) == []


def test_a_parse_past_its_budget_stops_and_says_so() -> None:
    """tree-sitter-perl takes time quadratic in this program's length (minutes at 300 KB); the
    parse stops after its CPU budget and the program stays unknown."""
    import time

    from guard.resolve.inline.generic import PARSE_CPU_SECONDS

    src = 'my $x = "a"; ' + '$x = $x . "b"; ' * 20000 + 'system("git push");'
    start = time.thread_time()
    findings, notes = analyze_inline("perl", src)
    assert time.thread_time() - start < PARSE_CPU_SECONDS + 2
    assert (findings, notes) == ([], [f"perl: parsing took more than {PARSE_CPU_SECONDS} s of CPU, not analysed"])


def test_code_handed_to_eval_is_read_a_bounded_number_of_times() -> None:
    from guard.resolve.inline.generic import MAX_EVALS

    findings, notes = analyze_inline("ruby", 'eval("system(\\"git push\\")")\n' * 100)
    assert [f.shell for f in findings] == ["git push"] * MAX_EVALS
    assert notes == [f"ruby: code handed to eval read {MAX_EVALS} times; the rest not analysed"]


EDITORS = [
    ("vim -es -c 'call system(\"git push\")' -c 'qa!'", [("git", "push")]),
    ("vim -es -c 'silent! call system(\"git commit -am x\") | qa!'", [("git", "commit", "-am", "x")]),
    ("nvim --headless -c \"call jobstart(['git', 'tag', 'v1'])\" -c q", [("git", "tag", "v1")]),
    ("ex -s -c 'let out = systemlist(\"git status\")' -c q f", [("git", "status")]),
    ("vim -es -c 'exe \"!git add .\"' -c q", [("git", "add", ".")]),
    ("vim -es -c 'echo \"call system(\\\"git push\\\")\"' -c 'qa!'", []),
    ("vim -es -c '%s/system(\"git push\")/x/g' -c wq f", []),
    ("vim -es -c 'call mysystem(\"git push\")' -c q", []),
]


@pytest.mark.parametrize(("command", "want"), EDITORS, ids=[c[:50] for c, _ in EDITORS])
def test_vim_script_that_starts_a_program(command: str, want: list[tuple[str, ...]]) -> None:
    assert gits(command) == want


FISH = [
    ("fish -c 'set g git; $g add .'", [("git", "add", ".")]),
    ("fish -c 'set -gx c git push; $c origin main'", [("git", "push", "origin", "main")]),
    ("fish -c 'set -e g; $g add .'", []),
    ("fish -c 'set -q g; or echo none'", []),
    ("bash -c 'set g git; $g add .'", []),  # bash's set sets $1 …, not g
]


@pytest.mark.parametrize(("command", "want"), FISH, ids=[c[:50] for c, _ in FISH])
def test_fish_set_assigns_a_list(command: str, want: list[tuple[str, ...]]) -> None:
    assert gits(command) == want


@pytest.mark.parametrize("shell", ["zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "ash", "posh", "yash"])
def test_posix_like_shells_are_read_by_the_bash_resolver(shell: str) -> None:
    """Their -c line has the same simple commands, quoting, variables, pipes and lists."""
    assert gits(f"{shell} -c 'G=git; $G push origin main'") == [("git", "push", "origin", "main")]
    assert gits(f"{shell} -c 'echo git push'") == []


def test_busybox_shells() -> None:
    assert gits("busybox sh -c 'git status'") == gits("busybox ash -c 'git status'") == [("git", "status")]


HTTP = [
    ("powershell", "Invoke-RestMethod -Uri https://api.github.com/repos/o/r/issues -Method POST -Body '{}'",
     ("POST", "https://api.github.com/repos/o/r/issues", "{}")),
    ("powershell", "$u = 'https://api.github.com/repos/o/r'; iwr $u", ("GET", "https://api.github.com/repos/o/r", None)),
    ("ruby", 'u = "https://api.github.com/repos/o/r/pulls"; Net::HTTP.post(URI(u), "{}")',
     ("POST", "https://api.github.com/repos/o/r/pulls", "{}")),
    ("go", 'package main\nfunc main() { http.PostForm("https://github.com/login/oauth/access_token", v) }',
     ("POST", "https://github.com/login/oauth/access_token", UNKNOWN)),
]


@pytest.mark.parametrize(("lang", "src", "want"), HTTP, ids=[f"{x[0]}:{x[1][:40]}" for x in HTTP])
def test_http_requests(lang: str, src: str, want: tuple) -> None:
    assert [(f.method, f.url, f.body) for f in analyze_inline(lang, src)[0] if f.kind == "http"] == [want]


def test_an_http_write_to_github_from_powershell_is_publishing() -> None:
    v = analyze("pwsh -c 'irm https://api.github.com/repos/o/r/pulls -Method Post -Body $b'", CTX)
    assert (v.verdict, v.category) == ("refuse", "publish")
    assert analyze("pwsh -c 'irm https://api.github.com/repos/o/r/pulls'", CTX).verdict == "allow"
