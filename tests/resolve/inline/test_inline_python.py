"""Python inline programs: what they would run, request or read — and what is only data."""

from __future__ import annotations

import textwrap

import pytest

from guard.ir import UNKNOWN
from guard.resolve.inline import Finding, analyze_inline


def run(src: str) -> tuple[list[Finding], list[str]]:
    return analyze_inline("python", textwrap.dedent(src))


def kinds(src: str) -> list[tuple]:
    """A compact view: (kind, main value, cwd) per finding."""
    out = []
    for f in run(src)[0]:
        main = {"argv": f.argv, "shell": f.shell, "http": (f.method, f.url), "token": f.var,
                "gitlib": (f.op, f.argv)}[f.kind]
        out.append((f.kind, main, f.cwd))
    return out


# --------------------------------------------------------------------------- process launches

LAUNCHES = [
    ("import subprocess; subprocess.run(['git', 'push'])", ("argv", ("git", "push"), None)),
    ("import subprocess; subprocess.call(['git', 'commit', '-m', 'x'])", ("argv", ("git", "commit", "-m", "x"), None)),
    ("import subprocess; subprocess.check_call(('git', 'init'))", ("argv", ("git", "init"), None)),
    ("import subprocess; subprocess.check_output(['gh', 'pr', 'create'])", ("argv", ("gh", "pr", "create"), None)),
    ("import subprocess; subprocess.Popen(['git', 'fetch']).wait()", ("argv", ("git", "fetch"), None)),
    ("import subprocess; subprocess.run('git push', shell=True)", ("shell", "git push", None)),
    ("import subprocess; subprocess.run('git push origin main')", ("argv", ("git", "push", "origin", "main"), None)),
    ("import subprocess; subprocess.run(['git push && echo ok'], shell=True)", ("shell", "git push && echo ok", None)),
    ("import subprocess; subprocess.getoutput('git status')", ("shell", "git status", None)),
    ("import subprocess; subprocess.getstatusoutput('git log')", ("shell", "git log", None)),
    ("import os; os.system('git push')", ("shell", "git push", None)),
    ("import os; os.popen('git remote -v').read()", ("shell", "git remote -v", None)),
    ("import os; os.execvp('git', ['git', 'push'])", ("argv", ("git", "push"), None)),
    ("import os; os.execv('/usr/bin/git', ['git', 'push'])", ("argv", ("/usr/bin/git", "push"), None)),
    ("import os; os.execlp('git', 'git', 'push')", ("argv", ("git", "push"), None)),
    ("import os; os.execle('/usr/bin/git', 'git', 'push', {})", ("argv", ("/usr/bin/git", "push"), None)),
    ("import os; os.spawnvp(os.P_WAIT, 'git', ['git', 'tag', 'v1'])", ("argv", ("git", "tag", "v1"), None)),
    ("import os; os.spawnlp(os.P_WAIT, 'git', 'git', 'add', '.')", ("argv", ("git", "add", "."), None)),
    ("import os; os.posix_spawnp('git', ['git', 'push'], {})", ("argv", ("git", "push"), None)),
    ("import pty; pty.spawn(['git', 'push'])", ("argv", ("git", "push"), None)),
    ("import asyncio\nasync def m():\n    await asyncio.create_subprocess_exec('git', 'push')",
     ("argv", ("git", "push"), None)),
    ("import asyncio\nasync def m():\n    await asyncio.create_subprocess_shell('git push')", ("shell", "git push", None)),
    ("exec(\"import os; os.system('git push')\")", ("shell", "git push", None)),
    ("import os\nos.chdir('/tmp/w')\nos.system('git init')", ("shell", "git init", "/tmp/w")),
]


@pytest.mark.parametrize(("src", "expected"), LAUNCHES, ids=[s[:50] for s, _ in LAUNCHES])
def test_launch_forms(src: str, expected: tuple) -> None:
    assert kinds(src) == [expected]


ALIASES = [
    "import subprocess as sp\nsp.run(['git', 'push'])",
    "from subprocess import run\nrun(['git', 'push'])",
    "from subprocess import check_call as cc\ncc(['git', 'push'])",
    "from subprocess import *\ncall(['git', 'push'])",
    "sp = __import__('subprocess')\nsp.run(['git', 'push'])",
    "import importlib\nsp = importlib.import_module('subprocess')\nsp.run(['git', 'push'])",
]


@pytest.mark.parametrize("src", ALIASES)
def test_import_aliases(src: str) -> None:
    assert kinds(src) == [("argv", ("git", "push"), None)]


@pytest.mark.parametrize(
    "src",
    [
        "from os import system\nsystem('git push')",
        "import os as o\no.system('git push')",
        "from os import popen as p\np('git push')",
    ],
)
def test_os_aliases(src: str) -> None:
    assert kinds(src) == [("shell", "git push", None)]


# --------------------------------------------------------------------------- constant propagation

PROPAGATION = [
    ("import subprocess\ncmd = ['git', 'push']\nsubprocess.run(cmd)", ("argv", ("git", "push"), None)),
    ("import subprocess\nG = 'git'\nsubprocess.run([G, 'push'])", ("argv", ("git", "push"), None)),
    ("import subprocess\nsubprocess.run(' '.join(['git', 'push']), shell=True)", ("shell", "git push", None)),
    ("import subprocess, shlex\nsubprocess.run(shlex.split('git commit -m \"a b\"'))",
     ("argv", ("git", "commit", "-m", "a b"), None)),
    ("import os\nb = 'main'\nos.system(f'git push origin {b}')", ("shell", "git push origin main", None)),
    ("import os\nos.system('git ' + 'push')", ("shell", "git push", None)),
    ("import subprocess\nbase = ['git']\nsubprocess.run(base + ['push'])", ("argv", ("git", "push"), None)),
    ("import subprocess\nargs = ['git']\nargs += ['push']\nsubprocess.run(args)", ("argv", ("git", "push"), None)),
    ("import subprocess\nsubprocess.run(['git', *['push', '-f']])", ("argv", ("git", "push", "-f"), None)),
    ("import os\nos.system('git %s' % 'push')", ("shell", "git push", None)),
    ("import os\nos.system('git {}'.format('push'))", ("shell", "git push", None)),
    ("import subprocess\ndef main():\n    subprocess.run(CMD)\nCMD = ['git', 'push']\nmain()",
     ("argv", ("git", "push"), None)),
    ("import subprocess\ndef f():\n    c = ['git', 'push']\n    subprocess.run(c, cwd='/tmp/r')",
     ("argv", ("git", "push"), "/tmp/r")),
    ("import subprocess\nsubprocess.run(['git', 'push'], cwd='/srv/tree/x')", ("argv", ("git", "push"), "/srv/tree/x")),
    ("import subprocess\nsubprocess.run(['git', 'push'], cwd=d)", ("argv", ("git", "push"), UNKNOWN)),
    ("import subprocess\nclass C:\n    def go(self):\n        subprocess.run(['git', 'push'])",
     ("argv", ("git", "push"), None)),
]


@pytest.mark.parametrize(("src", "expected"), PROPAGATION, ids=[s[:50] for s, _ in PROPAGATION])
def test_constant_propagation(src: str, expected: tuple) -> None:
    assert kinds(src) == [expected]


def test_loop_over_constant_commands_reports_each() -> None:
    src = "import subprocess\nfor c in (['git', 'add', '.'], ['git', 'push']):\n    subprocess.run(c)"
    assert [f.argv for f in run(src)[0]] == [("git", "add", "."), ("git", "push")]


def test_partly_unknown_keeps_known_parts_and_notes() -> None:
    f, notes = run("import os\nos.system(f'git -C {path} push')")
    assert f[0].shell == f"git -C {UNKNOWN} push"
    f, notes = run("import subprocess\nsubprocess.run(['git', x])")
    assert f[0].argv == ("git", UNKNOWN)


def test_wholly_unknown_argument_is_a_note_not_a_finding() -> None:
    f, notes = run("import os, sys\nos.system(sys.argv[1])")
    assert f == []
    assert notes == ["python: os.system argument not constant at line 2"]


def test_line_numbers_are_one_based() -> None:
    f, _ = run("import os\n\n\nos.system('git push')\n")
    assert f[0].line == 4


# --------------------------------------------------------------------------- git libraries


def test_gitpython_command_passthrough_is_argv_with_repo_cwd() -> None:
    src = """
    import git
    repo = git.Repo('/srv/tree/proj')
    repo.git.push('origin', 'main', force=True)
    repo.git.cherry_pick('abc')
    """
    assert kinds(src) == [
        ("argv", ("git", "push", "--force", "origin", "main"), "/srv/tree/proj"),
        ("argv", ("git", "cherry-pick", "abc"), "/srv/tree/proj"),
    ]


def test_gitpython_clone_init_commit_push() -> None:
    src = """
    from git import Repo
    r = Repo.clone_from('https://github.com/o/r', '/tmp/r')
    r.index.add(['a'])
    r.index.commit('msg')
    r.remote().push()
    r.remotes.origin.push('main')
    Repo.init('here')
    Repo('/x').git.status()
    """
    got = kinds(src)
    assert got == [
        ("gitlib", ("clone", ("git", "clone", "https://github.com/o/r", "/tmp/r")), None),
        ("gitlib", ("add", ("git", "add")), "/tmp/r"),
        ("gitlib", ("commit", ("git", "commit")), "/tmp/r"),
        ("gitlib", ("push", ("git", "push")), "/tmp/r"),
        ("gitlib", ("push", ("git", "push")), "/tmp/r"),
        ("gitlib", ("init", ("git", "init", "here")), None),
        ("argv", ("git", "status"), "/x"),
    ]
    assert run(src)[0][0].detail == "GitPython Repo.clone_from"


def test_dulwich_porcelain() -> None:
    src = """
    from dulwich import porcelain
    porcelain.clone('https://github.com/o/r', 'r')
    porcelain.add('r', ['f'])
    porcelain.commit('r', message=b'm')
    porcelain.push('r', 'origin', 'main')
    porcelain.init('new')
    """
    assert [(f.op, f.cwd) for f in run(src)[0]] == [
        ("clone", None), ("add", "r"), ("commit", "r"), ("push", "r"), ("init", None)
    ]


def test_pygit2() -> None:
    src = """
    import pygit2
    pygit2.clone_repository('https://github.com/o/r', '/tmp/c')
    repo = pygit2.init_repository('w')
    repo.create_commit('HEAD', a, a, 'm', t, [])
    repo.remotes['origin'].push(['refs/heads/main'])
    """
    assert [(f.op, f.cwd, f.detail) for f in run(src)[0]] == [
        ("clone", None, "pygit2 clone_repository"),
        ("init", None, "pygit2 init_repository"),
        ("commit", "w", "pygit2 create_commit"),
        ("push", "w", "pygit2 push"),
    ]


# --------------------------------------------------------------------------- HTTP

HTTP = [
    ("import requests\nrequests.post('https://api.github.com/repos/o/r/pulls', json={'title': 't'})",
     ("POST", "https://api.github.com/repos/o/r/pulls", '{"title": "t"}')),
    ("import requests\nrequests.get('https://api.github.com/repos/o/r')", ("GET", "https://api.github.com/repos/o/r", None)),
    ("import requests\nrequests.request('delete', 'https://api.github.com/repos/o/r')",
     ("DELETE", "https://api.github.com/repos/o/r", None)),
    ("import requests\ns = requests.Session()\ns.patch('https://api.github.com/x', data='{}')",
     ("PATCH", "https://api.github.com/x", "{}")),
    ("import httpx\nwith httpx.Client() as c:\n    c.put('https://api.github.com/y')", ("PUT", "https://api.github.com/y", None)),
    ("import httpx\nhttpx.post('https://api.github.com/graphql', json={'query': 'mutation { addStar }'})",
     ("POST", "https://api.github.com/graphql", '{"query": "mutation { addStar }"}')),
    ("import urllib.request\nurllib.request.urlopen('https://api.github.com/repos/o/r')",
     ("GET", "https://api.github.com/repos/o/r", None)),
    ("import urllib.request\nurllib.request.urlopen('https://api.github.com/x', data=b'a=1')",
     ("POST", "https://api.github.com/x", "a=1")),
    ("import urllib.request as u\nreq = u.Request('https://api.github.com/repos/o/r/pulls', data=b'{}')\nu.urlopen(req)",
     ("POST", "https://api.github.com/repos/o/r/pulls", "{}")),
    ("from urllib.request import Request, urlopen\n"
     "urlopen(Request('https://api.github.com/repos/o/r', method='DELETE'))",
     ("DELETE", "https://api.github.com/repos/o/r", None)),
    ("import http.client\nc = http.client.HTTPSConnection('api.github.com')\n"
     "c.request('POST', '/repos/o/r/issues', body='{}')", ("POST", "https://api.github.com/repos/o/r/issues", "{}")),
    ("import requests\nrequests.post(f'https://api.github.com/repos/{owner}/r/pulls')",
     ("POST", f"https://api.github.com/repos/{UNKNOWN}/r/pulls", None)),
]


@pytest.mark.parametrize(("src", "expected"), HTTP, ids=[s[:50] for s, _ in HTTP])
def test_http_requests(src: str, expected: tuple) -> None:
    f = [x for x in run(src)[0] if x.kind == "http"]
    assert [(x.method, x.url, x.body) for x in f] == [expected]


# --------------------------------------------------------------------------- token reads

TOKENS = [
    ("import os\nprint(os.environ['GITHUB_TOKEN'])", ["GITHUB_TOKEN"]),
    ("import os\nt = os.environ.get('GH_TOKEN')", ["GH_TOKEN"]),
    ("import os\nt = os.getenv('GITHUB_PAT', '')", ["GITHUB_PAT"]),
    ("from os import environ\nenviron['GIT_TOKEN']", ["GIT_TOKEN"]),
    ("from os import getenv\ngetenv('GH_ENTERPRISE_TOKEN')", ["GH_ENTERPRISE_TOKEN"]),
    ("import os\nname = 'GITHUB_TOKEN'\nos.environ[name]", ["GITHUB_TOKEN"]),
    ("import os\nif 'GH_TOKEN' in os.environ: pass", ["GH_TOKEN"]),
    ("import os\nprint(os.environ)", ["*"]),
    ("import os\nfor k, v in os.environ.items():\n    print(k, v)", ["*"]),
    ("import os, json\njson.dumps(dict(os.environ))", ["*"]),
    ("import os\n[k for k in os.environ if 'TOKEN' in k]", ["*"]),
    ("import os\nos.environ.get('HOME')\nprint(os.environ['PATH'])", ["HOME", "PATH"]),  # the config judges
    ("import os, subprocess\nenv = dict(os.environ)\nenv['A'] = '1'\nsubprocess.run(['make'], env=env)", []),
    ("import os\nos.environ['GITHUB_TOKEN'] = 'x'", []),
]


@pytest.mark.parametrize(("src", "expected"), TOKENS, ids=[s[:50] for s, _ in TOKENS])
def test_token_reads(src: str, expected: list[str]) -> None:
    assert [f.var for f in run(src)[0] if f.kind == "token"] == expected


# --------------------------------------------------------------------------- data, not commands

TRAPS = [
    "print('git push')",
    "print('run: git push origin main')",
    "import logging\nlogging.info('git push failed')",
    "open('NOTES.md', 'w').write('use git push to publish')",
    "with open('/tmp/s.sh', 'w') as f:\n    f.write('git commit -m x\\n')",
    "import sys\nsys.stdout.write('git push\\n')",
    "cmd = ['git', 'push']\nprint(' '.join(cmd))",
    "msg = 'git commit'\nassert 'git' in msg",
    "import re\nre.sub('git push', 'git_push', text)",
    "x = {'cmd': 'git push'}",
    "def f(run):\n    run('git push')",  # a parameter named run is not subprocess.run
    "import subprocess\nprint(subprocess.__doc__)",
    "import requests\nprint('requests.post(\"https://api.github.com\")')",
    "# os.system('git push')\nprint(1)",
    "'''os.system(\"git push\")'''",
]


@pytest.mark.parametrize("src", TRAPS)
def test_data_is_not_a_command(src: str) -> None:
    assert run(src)[0] == []


# --------------------------------------------------------------------------- code that does not parse


def test_python2_os_system_is_found_by_the_string_scan() -> None:
    f, notes = run("import os\nprint 'pushing'\nos.system('git push')\n")
    assert [(x.kind, x.shell, x.line) for x in f] == [("shell", "git push", 3)]
    assert notes and "does not parse" in notes[0]


def test_python2_list_call_is_joined_for_the_shell() -> None:
    f, _ = run("import subprocess\nprint 'x'\nsubprocess.call(['git', 'push', 'origin'])\n")
    assert [x.shell for x in f] == ["git push origin"]


@pytest.mark.parametrize(
    "src",
    [
        "print 'git push'\n",
        "print \"git push origin main\"\nx = 1 +\n",
        "log('git push') )\n",
        "os.system(cmd)  # git push\nprint 'x'\n",
        "os.system('echo hi')\nprint 'x'\n",
    ],
)
def test_unparseable_data_stays_data(src: str) -> None:
    f, notes = run(src)
    assert f == []
    assert any("does not parse" in n for n in notes)


def test_untokenizable_source_falls_back_to_regex() -> None:
    f, _ = run("os.system('git push')\n\"\"\"unterminated\n")
    assert [x.shell for x in f] == ["git push"]


# --------------------------------------------------------------------------- bounds


def test_ten_thousand_line_program() -> None:
    lines = [f"x{i} = 'v{i}'\nprint(x{i})" for i in range(5000)]
    lines.append("import subprocess\nsubprocess.run(['git', 'push'])")
    f, notes = run("\n".join(lines))
    assert [x.argv for x in f] == [("git", "push")]
    assert f[0].line == 10002


def test_deeply_nested_expression_does_not_raise() -> None:
    f, notes = run("x = " + "(" * 5000 + "1" + ")" * 5000)
    assert f == []
    assert notes


def test_oversized_source_is_not_analysed() -> None:
    f, notes = analyze_inline("python", "x = 1\n" * 200_000)
    assert f == []
    assert "larger than" in notes[0]


def test_string_growth_is_capped() -> None:
    f, _ = run("import os\ns = 'a' * 10\nfor i in range(100):\n    s = s + s\nos.system(s)")
    assert len(f) <= 1 and all(len(x.shell) <= 200_000 for x in f)
