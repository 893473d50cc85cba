"""Perl, Ruby, PHP and awk one-liners: shell-out forms found, printed strings left alone."""

from __future__ import annotations

import pytest

from guard.ir import UNKNOWN
from tests.resolve.inline.catalogue import analyze as analyze_inline


def view(lang: str, src: str) -> list[tuple]:
    out = []
    for f in analyze_inline(lang, src)[0]:
        out.append((f.kind, f.argv if f.kind == "argv" else f.shell, f.cwd))
    return out


FOUND = [
    # perl
    ("perl", 'system("git push")', [("shell", "git push", None)]),
    ("perl", "system 'git', 'push', 'origin';", [("argv", ("git", "push", "origin"), None)]),
    ("perl", 'exec "git push"', [("shell", "git push", None)]),
    ("perl", "CORE::system('git push')", [("shell", "git push", None)]),
    ("perl", "my $o = `git log`;", [("shell", "git log", None)]),
    ("perl", "my $o = qx{git status};", [("shell", "git status", None)]),
    ("perl", "print qx(git rev-parse HEAD);", [("shell", "git rev-parse HEAD", None)]),
    ("perl", "print qx'git log';", [("shell", "git log", None)]),
    ("perl", 'readpipe("git push")', [("shell", "git push", None)]),
    ("perl", 'open(my $fh, "|git hash-object -w --stdin");', [("shell", "git hash-object -w --stdin", None)]),
    ("perl", 'open(F, "git log |") or die;', [("shell", "git log", None)]),
    ("perl", 'open(my $p, "-|", "git", "fetch");', [("argv", ("git", "fetch"), None)]),
    ("perl", 'open(my $p, "|-", "git push");', [("shell", "git push", None)]),
    ("perl", 'my $c = "git"; my @a = ("push", "origin"); system($c, @a);', [("argv", ("git", "push", "origin"), None)]),
    ("perl", 'my $c = "git"; exec "$c commit -m x";', [("shell", "git commit -m x", None)]),
    ("perl", 'my @cmd = qw(git push); system(@cmd);', [("argv", ("git", "push"), None)]),
    ("perl", 'system("git " . "push")', [("shell", "git push", None)]),
    ("perl", 'system("git push $remote")', [("shell", f"git push {UNKNOWN}", None)]),
    ("perl", 'my $r = system("git push") == 0 or die;', [("shell", "git push", None)]),
    ("perl", 'system("git push") if $ENV{CI};', [("shell", "git push", None)]),
    # ruby
    ("ruby", 'system("git push")', [("shell", "git push", None)]),
    ("ruby", 'system "git", "push", chdir: "/tmp/x"', [("argv", ("git", "push"), "/tmp/x")]),
    ("ruby", 'exec("git push")', [("shell", "git push", None)]),
    ("ruby", 'pid = spawn({"A" => "1"}, "git commit")', [("shell", "git commit", None)]),
    ("ruby", "out = `git status`", [("shell", "git status", None)]),
    ("ruby", "x = %x(git log)", [("shell", "git log", None)]),
    ("ruby", 'o, s = Open3.capture2("git", "push")', [("argv", ("git", "push"), None)]),
    ("ruby", 'Open3.popen3("git push") { |i, o, e, t| }', [("shell", "git push", None)]),
    ("ruby", 'IO.popen(["git", "fetch"]).read', [("argv", ("git", "fetch"), None)]),
    ("ruby", 'IO.popen("git fetch")', [("shell", "git fetch", None)]),
    ("ruby", 'cmd = "git push"; Kernel.system(cmd)', [("shell", "git push", None)]),
    ("ruby", 'Process.spawn("gh pr create", :chdir => "/w")', [("shell", "gh pr create", "/w")]),
    ("ruby", 'b = "main"; system("git push origin #{b}")', [("shell", "git push origin main", None)]),
    ("ruby", 'system("git push #{x.y}")', [("shell", f"git push {UNKNOWN}", None)]),
    ("ruby", 'system(*%w[git push])', [("argv", ("git", "push"), None)]),
    # php
    ("php", 'shell_exec("git push");', [("shell", "git push", None)]),
    ("php", "system('gh pr create');", [("shell", "gh pr create", None)]),
    ("php", 'exec("git commit -m x", $out, $rc);', [("shell", "git commit -m x", None)]),
    ("php", 'passthru("git push");', [("shell", "git push", None)]),
    ("php", '$c = "git"; passthru($c . " push");', [("shell", "git push", None)]),
    ("php", '$o = `git log`;', [("shell", "git log", None)]),
    ("php", '$b = "main"; system("git push origin $b");', [("shell", "git push origin main", None)]),
    ("php", '$h = popen("git fetch", "r");', [("shell", "git fetch", None)]),
    ("php", '<?php proc_open(["git", "push"], [], $pipes, "/tmp/x");', [("argv", ("git", "push"), "/tmp/x")]),
    ("php", 'proc_open("git push", $d, $p);', [("shell", "git push", None)]),
    ("php", 'pcntl_exec("/usr/bin/git", ["push"]);', [("argv", ("/usr/bin/git", "push"), None)]),
    # awk
    ("awk", 'BEGIN { system("git push") }', [("shell", "git push", None)]),
    ("awk", 'BEGIN { system("git " "push") }', [("shell", "git push", None)]),
    ("awk", 'BEGIN { c = "git push"; system(c) }', [("shell", "git push", None)]),
    ("awk", 'BEGIN { print "git push" | "sh" }', [("shell", "git push\n", None)]),
    ("awk", '{ print "git add " $1 | "bash" }', [("shell", f"git add {UNKNOWN}\n", None)]),
    ("awk", 'BEGIN { printf "%s\\n", "git push" | "/bin/sh" }', [("shell", "git push\n", None)]),
    ("awk", '{ print | "git hash-object -w --stdin" }', [("shell", "git hash-object -w --stdin", None)]),
    ("awk", 'BEGIN { while (("git log" | getline line) > 0) print line }', [("shell", "git log", None)]),
    ("awk", 'BEGIN { "git rev-parse HEAD" | getline h; print h }', [("shell", "git rev-parse HEAD", None)]),
]


@pytest.mark.parametrize(("lang", "src", "expected"), FOUND, ids=[f"{lang}:{s[:40]}" for lang, s, _ in FOUND])
def test_shell_out_forms(lang: str, src: str, expected: list[tuple]) -> None:
    assert view(lang, src) == expected


TRAPS = [
    ("perl", 'print "git push\\n"'),
    ("perl", "print STDERR q{git commit};"),
    ("perl", '$x =~ s/git push/git_push/g; print $x'),
    ("perl", "while (<>) { print if /git push/ }"),
    ("perl", 'warn "git push failed"; die "run git push"'),
    ("perl", 'my %h = (system => "git push"); print $h{system}'),
    ("perl", '# system("git push")\nprint 1'),
    ("perl", 'open(my $fh, ">", "notes.txt"); print $fh "git push\\n"'),
    ("ruby", 'puts "git push"'),
    ("ruby", 'File.write("n.md", "git push")'),
    ("ruby", 'obj.system("git push")'),
    ("ruby", 'h = {system: "git push"}'),
    ("ruby", '# system("git push")'),
    ("php", 'echo "git push";'),
    ("php", 'file_put_contents("a.txt", "git push");'),
    ("php", '// system("git push")\necho 1;'),
    ("php", '/* shell_exec("git push") */ echo 2;'),
    ("php", '$o->system("git push");'),
    ("awk", '{ print "git push" }'),
    ("awk", '/git push/ { print $0 > "out.txt" }'),
    ("awk", '{ gsub(/git push/, "git_push"); print }'),
    ("awk", 'BEGIN { printf "git %s\\n", "push" > "/tmp/f" }'),
]


@pytest.mark.parametrize(("lang", "src"), TRAPS, ids=[f"{lang}:{s[:40]}" for lang, s in TRAPS])
def test_printed_strings_are_data(lang: str, src: str) -> None:
    assert analyze_inline(lang, src)[0] == []


def test_unknown_argument_is_a_note() -> None:
    f, notes = analyze_inline("perl", "system($ARGV[0])")
    assert f == []
    assert notes == ["perl: system argument not constant at line 1"]


def test_line_numbers() -> None:
    f, _ = analyze_inline("ruby", 'puts 1\n\nsystem("git push")\n')
    assert f[0].line == 3


@pytest.mark.parametrize("lang", ["perl", "ruby", "php", "awk"])
def test_garbage_does_not_raise(lang: str) -> None:
    src = "(((' \" ` qx{ %x( <<< /* $ @ { [ " * 200
    f, notes = analyze_inline(lang, src)
    assert isinstance(f, list) and isinstance(notes, list)


@pytest.mark.parametrize("lang", ["perl", "ruby", "php", "awk"])
def test_long_program(lang: str) -> None:
    body = {"perl": 'print "x";\n', "ruby": 'puts "x"\n', "php": 'echo "x";\n', "awk": '{ print "x" }\n'}[lang]
    call = {"perl": 'system("git push");', "ruby": 'system("git push")', "php": 'system("git push");',
            "awk": 'BEGIN { system("git push") }'}[lang]
    # tree-sitter-perl reads about 20,000 such lines a second: 10,000 took 0.45 s of the dialects'
    # 1 s CPU budget alone, and went past it once inside a full run (the test is about reach over a
    # long program, not about the budget, which tests/resolve/inline/test_inline_dialects.py tests)
    lines = 3_000 if lang == "perl" else 10_000
    f, _ = analyze_inline(lang, body * lines + call)
    assert [(x.shell, x.line) for x in f] == [("git push", lines + 1)]
