"""The word expander against real bash, word by word: each case is run by bash
(``PRELUDE; printf '<%s>' WORDS``) and analysed by guard, and the fields must be the same."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from guard.context import Context
from guard.ir import UNKNOWN
from guard.parse import parse
from guard.resolve import resolve
from guard.resolve.state import State
from guard.resolve.words import Hooks, expand_word

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

CASES = [
    # IFS
    ('IFS=,; c="git,push"', "$c"),
    ('IFS=,; x="b,,"', "$x"),
    ('IFS=,; x=",b"', "$x a$x"),
    ("IFS=' ,'; x=' ,b , c'", "$x"),
    ("IFS=' ,'; x='a , b'", "a$x"),
    ("IFS=; x='a b'", "$x"),
    ("x=' a  b '", '$x "$x" =$x='),
    ("set -- git push origin; IFS=-", '"$*" $* "$@"'),
    ("set -- 'a b' c", '$@ "$@" x"$@"y'),
    ("set --", '"$@" "" x"$@"'),
    ("IFS=x; c=gitxpush", "${c}"),
    # brace expansion
    ("", "{git,push,origin,HEAD}"),
    ("", "a{b,c{d,e}}f {1..4} {a..c} {05..10..2} {3..1} x{,y}"),
    ("v=Q", "{${v},b}c '{a,b}' {a} {} {a,b"),
    ("", "${HOME}{x,y}"),
    # parameter operators
    ("x=gIt", "${x^^} ${x,,} ${x^} ${x,}"),
    ("x=GIT", "${x,} ${x,,[GI]}"),
    ("x=gxt", "${x/x/i} ${x//t/T} ${x/#g/G} ${x/%t/T} ${x/x}"),
    ("x=a.b.c", "${x%.*} ${x%%.*} ${x#*.} ${x##*.} ${x#\"a\"}"),
    ("x=github", "${x:0:3} ${x:3} ${x: -3} ${x:1:-1} ${x:10}"),
    ("x=hello", "${#x} ${x@U} ${x@u} ${x@Q}"),
    ("GITA=1; GITB=2", "${!GIT*} ${!GIT@}"),
    ("n=git; ref=n", "${!ref}"),
    ("x='$n'; n=git", "${x@P}"),
    ("u=", "${u:-git} ${u-git} ${u:+alt} ${u+alt} ${v2:=set} $v2"),
    ("a=(x y z)", "${a[1]} ${a[-1]} ${#a[@]} ${a[@]:1} ${!a[@]}"),
    # arrays: sparse and associative
    ("a=([3]=git [7]=push)", '"${a[@]}" ${#a[@]} ${!a[@]} ${a[7]}'),
    ("a=(x); a[5]=push", '"${a[@]}" ${!a[@]}'),
    ("declare -A m=([cmd]=git [sub]=push)", "${m[cmd]} ${m[sub]}"),
    ("declare -A m; m[k]=git; k=k", '${m[k]} ${m[$k]}'),
    ("declare -a c='(git push)'", '"${c[@]}"'),
    ("c=(git push); c+=(origin)", '"${c[@]}"'),
    # arithmetic
    ("i=3", "$((i+1)) $((i*2-1)) $((i<<2)) $((2**10)) $((0x10)) $((8#17)) $((i>2?7:9))"),
    ("i=3", "$((i++)) $i $((--i))"),
    ("e='1+2'", "$((e*2))"),
    ("a=(5 6)", "$((a[1]+1))"),
    # builtins that assign
    ("printf -v c %s git", "$c"),
    ("printf -v c '%s-%s' git push", "$c"),
    ("read -r a b <<< 'git push origin'", "$a $b"),
    ("read -a arr <<< 'git push'", '"${arr[@]}"'),
    ("IFS=, read -r a b <<< 'git,push'", "$a $b"),
    ("mapfile -t l <<'E'\ngit\npush\nE\n", '"${l[@]}"'),
    ("readarray l <<< 'git'", '"${l[0]}"'),
    ("declare -n r=t; t=git", "$r"),
    ("declare -n r=t; r=git", "$t"),
    ("set -- a git push; shift", '"$@" $1 $#'),
    ("export X=git Y=push", "$X $Y"),
    ("declare X=git; local 2>/dev/null; typeset Y=push", "$X $Y"),
    # tilde
    ("", "~root ~root/x ~+ '~' ~nosuchuser_zz/x"),
    ("cd /tmp; cd /", "~-"),
    # quoting and empty fields
    ("e=", '$e "$e" x$e ""$e'),
]


def _bash_fields(prelude: str, words: str, cwd: str) -> list[str]:
    script = f"{prelude}\nprintf '<%s>' {words}"
    out = subprocess.run([BASH, "--norc", "--noprofile", "-c", script], capture_output=True, text=True, cwd=cwd,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/root", "LC_ALL": "C"},
                         timeout=10).stdout
    assert out.startswith("<") and out.endswith(">"), (script, out)
    return out[1:-1].split("><")


def _guard_fields(prelude: str, words: str, cwd: str) -> list[str]:
    script = f"{prelude}\nprintf '<%s>' {words}"
    ctx = Context.from_environ(cwd=cwd, trees=("/workspace",), env={"HOME": "/root", "PATH": "/usr/bin:/bin"})
    res = resolve(parse(script), ctx)
    hits = [i for i in res.invocations if i.program == "printf" and i.argv[1:2] == ("<%s>",)]
    assert hits, (script, [i.argv for i in res.invocations])
    return list(hits[-1].argv[2:]) or [""]


@pytest.fixture
def playground(tmp_path):
    for name in ("git", "gist", "go.mod", ".hidden", "a b"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.py").write_text("")
    return str(tmp_path)


@pytest.mark.parametrize("prelude,words", CASES)
def test_same_fields_as_bash(prelude: str, words: str, playground: str) -> None:
    want = _bash_fields(prelude, words, playground)
    got = _guard_fields(prelude, words, playground)
    assert got == want, (prelude, words)


@pytest.mark.parametrize("words", ["g?t", "g*", "*", ".*", "[g]i?t", "s*/*.py", "'g'*", "g\\*", "zz*", "*.mod"])
def test_globs_match_the_real_file_system_as_bash_does(words: str, playground: str) -> None:
    want = _bash_fields("", words, playground)
    got = _guard_fields("", words, playground)
    if words == ".*":  # bash 5.2 leaves out . and ..; older ones list them
        want = [w for w in want if w not in (".", "..")]
    assert got == want


def test_glob_in_the_command_word_finds_the_program() -> None:
    git = shutil.which("git")
    if git is None or not git.startswith("/usr/bin/"):
        pytest.skip("git is not /usr/bin/git here")
    ctx = Context.from_environ(cwd="/workspace/app", trees=("/workspace",), env={"HOME": "/root"})
    for cmd in ("/usr/bin/g?t push", "/u*/b*/[g]it push", "/usr/bin/gi[t] push"):
        res = resolve(parse(cmd), ctx)
        assert [i.argv for i in res.invocations] == [("/usr/bin/git", "push")], cmd


def test_the_expander_alone_takes_its_environment_and_handlers() -> None:
    st = State(cwd="/tmp", vars={"IFS": ",", "c": "git,push"})
    calls = []

    def subst(script, state):
        calls.append(script.source)
        return "origin\n"

    word = parse('x $c$(echo origin)').body.words[1]
    assert expand_word(word, st, Hooks(subst)) == ["git", "pushorigin"]
    assert calls == ["echo origin"]
    st.vars.pop("c")
    assert expand_word(word, st, subst) == [UNKNOWN + "origin"]  # an unset name may be set where it runs


def test_pathname_expansion_reads_the_directory_reader_it_is_given() -> None:
    from guard.resolve.words import Dirs

    class Tree(Dirs):
        """A tree that exists only here: /w holds a.py, b.py and a folder pkg."""

        entries = {"/w": ["a.py", "b.py", "pkg", ".hidden.py"], "/w/pkg": ["c.py"]}

        def listdir(self, path: str) -> list[str]:
            return list(self.entries[path.rstrip("/") or "/"])

        def lexists(self, path: str) -> bool:
            parent, _, name = path.rstrip("/").rpartition("/")
            return path.rstrip("/") in self.entries or name in self.entries.get(parent, [])

        def isdir(self, path: str) -> bool:
            return path.rstrip("/") in self.entries

    st = State(cwd="/w", vars={})
    never = Hooks(lambda script, state: None)
    tree = Hooks(lambda script, state: None, dirs=Tree())
    assert expand_word(parse("x *.py").body.words[1], st, tree) == ["a.py", "b.py"]
    assert expand_word(parse("x */*.py").body.words[1], st, tree) == ["pkg/c.py"]
    assert expand_word(parse("x /w/p*/c.py").body.words[1], st, tree) == ["/w/pkg/c.py"]
    assert expand_word(parse("x *.py").body.words[1], st, never) == ["*.py"]  # /w is not on this disk
