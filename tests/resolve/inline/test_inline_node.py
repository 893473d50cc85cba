"""Node inline programs (tree-sitter-javascript): launches, requests, token reads, data traps."""

from __future__ import annotations

import pytest

from guard.ir import UNKNOWN
from guard.resolve.inline import Finding, analyze_inline


def run(src: str) -> tuple[list[Finding], list[str]]:
    return analyze_inline("node", src)


def view(src: str) -> list[tuple]:
    out = []
    for f in run(src)[0]:
        main = {"argv": f.argv, "shell": f.shell, "http": (f.method, f.url), "token": f.var, "gitlib": f.op}[f.kind]
        out.append((f.kind, main, f.cwd))
    return out


LAUNCHES = [
    ("require('child_process').execSync('git push')", ("shell", "git push", None)),
    ("require('node:child_process').exec('git push', () => {})", ("shell", "git push", None)),
    ("const cp = require('child_process'); cp.execSync('git push')", ("shell", "git push", None)),
    ("const {execSync} = require('child_process'); execSync('git push')", ("shell", "git push", None)),
    ("const {execSync: run} = require('child_process'); run('git push')", ("shell", "git push", None)),
    ("const execSync = require('child_process').execSync; execSync('git push')", ("shell", "git push", None)),
    ("import {execSync} from 'child_process'; execSync('git push')", ("shell", "git push", None)),
    ("import {execSync as x} from 'node:child_process'; x('git push')", ("shell", "git push", None)),
    ("import * as cp from 'child_process'; cp.execSync('git push')", ("shell", "git push", None)),
    ("import cp from 'child_process'; cp.exec('git push')", ("shell", "git push", None)),
    ("child_process.execSync('git push')", ("shell", "git push", None)),  # node -e global
    ("const {spawn} = require('child_process'); spawn('git', ['push', 'origin'])",
     ("argv", ("git", "push", "origin"), None)),
    ("require('child_process').spawnSync('git', ['commit', '-m', 'x'], {stdio: 'inherit'})",
     ("argv", ("git", "commit", "-m", "x"), None)),
    ("require('child_process').execFile('git', ['init'])", ("argv", ("git", "init"), None)),
    ("require('child_process').execFileSync('gh', ['pr', 'create'])", ("argv", ("gh", "pr", "create"), None)),
    ("require('child_process').spawn('git', ['push'], {shell: true})", ("shell", "git push", None)),
    ("require('child_process').spawn('git push', {shell: true})", ("shell", "git push", None)),
    ("require('child_process').fork('deploy.js', ['--push'])", ("argv", ("node", "deploy.js", "--push"), None)),
    ("require('child_process').execSync('git push', {cwd: '/tmp/r'})", ("shell", "git push", "/tmp/r")),
    ("require('child_process').spawnSync('git', ['push'], {cwd: dir})", ("argv", ("git", "push"), UNKNOWN)),
    ("const {execa} = require('execa'); execa('git', ['push'])", ("argv", ("git", "push"), None)),
    ("import {$} from 'zx'; await $`git push`", ("shell", "git push", None)),
    ("Bun.spawn(['git', 'push'], {cwd: '/w'})", ("argv", ("git", "push"), "/w")),
    ("Bun.spawnSync({cmd: ['git', 'push']})", ("argv", ("git", "push"), None)),
    ("new Deno.Command('git', {args: ['push']}).outputSync()", ("argv", ("git", "push"), None)),
    ("Deno.run({cmd: ['git', 'push']})", ("argv", ("git", "push"), None)),
]


@pytest.mark.parametrize(("src", "expected"), LAUNCHES, ids=[s[:50] for s, _ in LAUNCHES])
def test_launch_forms(src: str, expected: tuple) -> None:
    assert view(src) == [expected]


PROPAGATION = [
    ("const cmd = 'git push'; child_process.execSync(cmd)", "git push"),
    ("let g = 'git'; child_process.execSync(g + ' push')", "git push"),
    ("const b = 'main'; child_process.execSync(`git push origin ${b}`)", "git push origin main"),
    ("child_process.execSync(['git', 'push'].join(' '))", "git push"),
    ("const p = ['git', 'push']; child_process.execSync(p.join(' '))", "git push"),
    ("child_process.execSync('git\\x20push')", "git push"),
    ("child_process.execSync(`git push ${remote}`)", f"git push {UNKNOWN}"),
    ("var a; a = 'git push'; child_process.exec(a)", "git push"),
]


@pytest.mark.parametrize(("src", "expected"), PROPAGATION, ids=[s[:50] for s, _ in PROPAGATION])
def test_constant_propagation(src: str, expected: str) -> None:
    assert [f.shell for f in run(src)[0]] == [expected]


def test_spread_array_arguments() -> None:
    src = "const extra = ['-f']; require('child_process').spawn('git', ['push', ...extra])"
    assert [f.argv for f in run(src)[0]] == [("git", "push", "-f")]


def test_unknown_argument_is_a_note() -> None:
    f, notes = run("require('child_process').execSync(process.argv[2])")
    assert f == []
    assert notes == ["node: child_process.execSync argument not constant at line 1"]


HTTP = [
    ("fetch('https://api.github.com/repos/o/r/pulls', {method: 'POST', body: JSON.stringify({title: 't'})})",
     ("POST", "https://api.github.com/repos/o/r/pulls", '{"title": "t"}')),
    ("fetch('https://api.github.com/repos/o/r')", ("GET", "https://api.github.com/repos/o/r", None)),
    ("fetch('https://api.github.com/graphql', {method: 'post', body: JSON.stringify({query: 'mutation { a }'})})",
     ("POST", "https://api.github.com/graphql", '{"query": "mutation { a }"}')),
    ("fetch('https://api.github.com/x', {body: 'a=1'})", ("POST", "https://api.github.com/x", "a=1")),
    ("require('https').request({hostname: 'api.github.com', path: '/repos/o/r/issues', method: 'POST'})",
     ("POST", "https://api.github.com/repos/o/r/issues", None)),
    ("const https = require('https'); https.request('https://api.github.com/x', {method: 'DELETE'})",
     ("DELETE", "https://api.github.com/x", None)),
    ("https.get('https://api.github.com/user')", ("GET", "https://api.github.com/user", None)),
    ("const axios = require('axios'); axios.post('https://api.github.com/x', {a: 1})",
     ("POST", "https://api.github.com/x", '{"a": 1}')),
    ("const axios = require('axios'); axios({method: 'put', url: 'https://api.github.com/y'})",
     ("PUT", "https://api.github.com/y", None)),
    ("const axios = require('axios'); const c = axios.create({baseURL: 'https://api.github.com'}); c.delete('/repos/o/r')",
     ("DELETE", "https://api.github.com/repos/o/r", None)),
    ("const owner = 'o'; fetch(`https://api.github.com/repos/${owner}/${repo}/pulls`, {method: 'POST'})",
     ("POST", f"https://api.github.com/repos/o/{UNKNOWN}/pulls", None)),
]


@pytest.mark.parametrize(("src", "expected"), HTTP, ids=[s[:50] for s, _ in HTTP])
def test_http(src: str, expected: tuple) -> None:
    assert [(f.method, f.url, f.body) for f in run(src)[0] if f.kind == "http"] == [expected]


TOKENS = [
    ("console.log(process.env.GITHUB_TOKEN)", ["GITHUB_TOKEN"]),
    ("const t = process.env['GH_TOKEN']", ["GH_TOKEN"]),
    ("const {GIT_TOKEN, HOME} = process.env", ["GIT_TOKEN", "HOME"]),  # every read: the config's token_vars judge
    ("if ('GITHUB_PAT' in process.env) {}", ["GITHUB_PAT"]),
    ("console.log(process.env)", ["*"]),
    ("console.log(JSON.stringify(process.env))", ["*"]),
    ("for (const k in process.env) console.log(k)", ["*"]),
    ("Object.entries(process.env).filter(([k]) => /token/i.test(k))", ["*"]),
    ("Deno.env.get('GH_ENTERPRISE_TOKEN')", ["GH_ENTERPRISE_TOKEN"]),
    ("process.env.GITHUB_TOKEN = 'x'", []),
    ("console.log(process.env.HOME)", ["HOME"]),
    ("require('child_process').spawn('make', [], {env: {...process.env, A: '1'}})", []),
]


@pytest.mark.parametrize(("src", "expected"), TOKENS, ids=[s[:50] for s, _ in TOKENS])
def test_token_reads(src: str, expected: list[str]) -> None:
    assert [f.var for f in run(src)[0] if f.kind == "token"] == expected


TRAPS = [
    "console.log('git push')",
    "console.error(`run git push origin ${b}`)",
    "require('fs').writeFileSync('NOTES.md', 'git push when ready')",
    "const fs = require('fs'); fs.writeFileSync('/tmp/s.sh', 'git commit -m x\\n')",
    "process.stdout.write('git push\\n')",
    "const s = 'git push'; console.log(s.toUpperCase())",
    "// require('child_process').execSync('git push')\nconsole.log(1)",
    "const exec = (x) => x; exec('git push')",
    "const o = {execSync(c) { return c }}; o.execSync('git push')",
    "'git push'.split(' ')",
]


@pytest.mark.parametrize("src", TRAPS)
def test_data_is_not_a_command(src: str) -> None:
    assert run(src)[0] == []


def test_syntax_error_is_walked_and_marked_partial() -> None:
    f, notes = run("child_process.execSync('git push'")
    assert [x.shell for x in f] == ["git push"]
    assert notes == ["node: source has syntax errors; findings are partial"]


def test_syntax_error_elsewhere_keeps_valid_calls() -> None:
    f, notes = run("const x = ;\nrequire('child_process').execSync('git push')\n}}}")
    assert [(x.shell, x.line) for x in f] == [("git push", 2)]
    assert "syntax errors" in notes[0]


def test_syntax_error_with_only_data() -> None:
    f, notes = run("console.log('git push'")
    assert f == []
    assert notes


def test_ten_thousand_lines() -> None:
    src = "\n".join(f"const v{i} = 'x{i}'; console.log(v{i});" for i in range(10_000))
    src += "\nrequire('child_process').execSync('git push')"
    f, _ = run(src)
    assert [(x.shell, x.line) for x in f] == [("git push", 10_001)]


def test_deep_nesting_does_not_raise() -> None:
    f, _ = run("x = " + "[" * 3000 + "]" * 3000)
    assert f == []
