"""Lua, Tcl/expect, R and Julia programs, and the dynamic Python and Node forms: what each would
run (the exact argv or shell string), and what stays data."""

from __future__ import annotations

import pytest

from guard.ir import UNKNOWN
from tests.resolve.inline.catalogue import analyze as analyze_inline
from tests.resolve.inline.catalogue import interpreter_lang


def view(lang: str, src: str, args: tuple[str, ...] = ()) -> list[tuple]:
    return [(f.kind, f.argv if f.kind == "argv" else f.shell) for f in analyze_inline(lang, src, args)[0]
            if f.kind in {"argv", "shell"}]


FOUND = [
    ("lua", 'os.execute("git push")', [("shell", "git push")]),
    ("lua", "os.execute 'git push'", [("shell", "git push")]),
    ("lua", "os.execute[[git push]]", [("shell", "git push")]),
    ("lua", "os.execute[==[git push]==]", [("shell", "git push")]),
    ("lua", 'local g = "git"\nos.execute(g .. " push " .. "origin")', [("shell", "git push origin")]),
    ("lua", 'local p = io.popen("git log", "r")', [("shell", "git log")]),
    ("lua", 'os.execute(table.concat({"git", "push"}, " "))', [("shell", "git push")]),
    ("lua", 'os.execute("git " .. branch)', [("shell", "git " + UNKNOWN)]),
    ("tcl", "exec git push origin main", [("argv", ("git", "push", "origin", "main"))]),
    ("tcl", "exec -ignorestderr -- git push 2>@1", [("argv", ("git", "push"))]),
    ("tcl", "exec git log | wc -l > /tmp/n", [("argv", ("git", "log")), ("argv", ("wc", "-l"))]),
    ("tcl", "set g git\nset s push\nexec $g $s", [("argv", ("git", "push"))]),
    ("tcl", "set c [list git push]; exec {*}$c", [("argv", ("git", "push"))]),
    ("tcl", 'set f [open "|git push origin" r]', [("argv", ("git", "push", "origin"))]),
    ("tcl", "open |[list git push] r", [("argv", ("git", "push"))]),
    ("tcl", "proc p {} { exec git push }\np", [("argv", ("git", "push"))]),
    ("tcl", "foreach r {a b} { catch { exec git push $r } }", [("argv", ("git", "push", UNKNOWN))]),
    ("tcl", 'eval exec git "push"', [("argv", ("git", "push"))]),
    ("tcl", "spawn -noecho git push; expect eof", [("argv", ("git", "push"))]),
    ("tcl", 'expect { "Password:" { send "x\\r" } eof { exec git push } }', [("argv", ("git", "push"))]),
    ("tcl", 'system "git push"', [("shell", "git push")]),
    ("tcl", "puts [exec git rev-parse HEAD]", [("argv", ("git", "rev-parse", "HEAD"))]),
    ("r", 'system("git push")', [("shell", "git push")]),
    ("r", 'system2("git", c("push", "origin"))', [("shell", "git push origin")]),
    ("r", 'system2("git", args = c("push"), stdout = TRUE)', [("shell", "git push")]),
    ("r", 'cmd <- "git push"\nsystem(cmd, intern = TRUE)', [("shell", "git push")]),
    ("r", 'system(paste0("git ", "push"))', [("shell", "git push")]),
    ("r", 'processx::run("git", c("push"))', [("argv", ("git", "push"))]),
    ("r", 'con <- pipe("git log"); readLines(con)', [("shell", "git log")]),
    ("julia", "run(`git push`)", [("argv", ("git", "push"))]),
    ("julia", "run(`git commit -m 'a b'`)", [("argv", ("git", "commit", "-m", "a b"))]),
    ("julia", 'b = "main"\nrun(`git push origin $b`)', [("argv", ("git", "push", "origin", "main"))]),
    ("julia", "c = `git push`\nsuccess(c)", [("argv", ("git", "push"))]),
    ("julia", "read(`git status`, String)", [("argv", ("git", "status"))]),
    ("julia", "c = `git push`; run(c; wait=false)", [("argv", ("git", "push"))]),
    ("julia", "run(`git $(x) push`)", [("argv", ("git", UNKNOWN, "push"))]),
    ("python", "import os; getattr(os, 'sys' + 'tem')('git push')", [("shell", "git push")]),
    ("python", "import base64; exec(base64.b64decode('aW1wb3J0IG9zOyBvcy5zeXN0ZW0oImdpdCBwdXNoIik=').decode())",
     [("shell", "git push")]),
    ("python", "exec(compile('import os\\nos.system(\"git push\")', 'x', 'exec'))", [("shell", "git push")]),
    ("python", "import subprocess, shutil; subprocess.run([shutil.which('git'), 'push'])", [("argv", ("git", "push"))]),
    ("node", "import('child_process').then(({spawnSync}) => spawnSync('git', ['push']))", [("argv", ("git", "push"))]),
]

DATA = [
    ("lua", 'print("git push")'),
    ("lua", '-- os.execute("git push")\nprint(1)'),
    ("lua", '--[[ os.execute("git push") ]] print(1)'),
    ("lua", 'local t = {cmd = "git push"}; print(t.cmd)'),
    ("tcl", "puts {exec git push}"),
    ("tcl", 'puts "exec git push"'),
    ("tcl", "# exec git push\nputs hi"),
    ("tcl", "set cmd {exec git push}"),
    ("r", 'print("git push")'),
    ("r", '# system("git push")\ncat(1)'),
    ("r", 'cat("system(\\"git push\\")")'),
    ("julia", "println(`git push`)"),
    ("julia", 'c = `git push`; println(c)'),
    ("julia", '#= run(`git push`) =# println(1)'),
    ("julia", 'read("notes.txt", String)'),
    ("python", "import base64; print(base64.b64decode('Z2l0IHB1c2g='))"),
    ("node", "fetch('https://example.com').then(r => r.text())"),
]


@pytest.mark.parametrize(("lang", "src", "want"), FOUND, ids=[f"{x[0]}:{x[1][:40]}" for x in FOUND])
def test_found(lang: str, src: str, want: list[tuple]) -> None:
    assert view(lang, src) == want


@pytest.mark.parametrize(("lang", "src"), DATA, ids=[f"{x[0]}:{x[1][:40]}" for x in DATA])
def test_data_runs_nothing(lang: str, src: str) -> None:
    assert view(lang, src) == []


def test_python_sys_argv_comes_from_the_command_line() -> None:
    src = "import subprocess, sys; subprocess.run(sys.argv[1:])"
    assert view("python", src, ("-c", "git", "push")) == [("argv", ("git", "push"))]
    assert view("python", "from sys import argv; import os; os.execvp(argv[1], argv[1:])", ("-c", "git", "push")) == [
        ("argv", ("git", "push"))]
    findings, notes = analyze_inline("python", src)
    assert findings == [] and any("not constant" in n for n in notes)


def test_node_request_object_carries_its_method() -> None:
    found = analyze_inline("node", "fetch(new Request('https://api.github.com/repos/o/r', {method: 'DELETE'}))")[0]
    assert [(f.kind, f.method, f.url) for f in found] == [("http", "DELETE", "https://api.github.com/repos/o/r")]


@pytest.mark.parametrize(("prog", "lang"), [("lua5.4", "lua"), ("luajit", "lua"), ("tclsh8.6", "tcl"),
                                            ("expect", "tcl"), ("Rscript", "r"), ("R", "r"), ("julia", "julia")])
def test_interpreter_names(prog: str, lang: str) -> None:
    assert interpreter_lang(prog) == lang
