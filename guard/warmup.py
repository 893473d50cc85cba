"""The warm-up: commands whose analysis takes every stage through its first use (the modules
and tables loaded lazily, tree-sitter's grammar, bashlex's tables, the inline-program analysers,
the evaluator) and one command of every program agents commonly run. A process that forks
analysis workers runs it first, so each worker starts with all of it loaded and shares it: the
analysis server (``guard.serve.server``) and ``guard check --jsonl``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.context import Context

COMMANDS = (
    "git status --short && git log --oneline -5 | cat",
    "cd /tmp && git clone https://github.com/o/r.git && (cd r; git push origin HEAD)",
    "bash -c 'eval \"$(printf %s \"git commit -m x\")\"' ; sh -c \"$CMD\"",
    "python3 -c 'import subprocess, os; subprocess.run([\"git\", \"push\"]); os.system(\"ls\")'",
    "node -e 'require(\"child_process\").execSync(\"git push\")'",
    "perl -e 'system(\"git push\")'; ruby -e '`git push`'; awk 'BEGIN{system(\"ls\")}'",
    "lua -e 'os.execute(\"ls\")'; expect -c 'spawn git push'; sed -n '1p;2s/a/b/g' f | head -n 3",
    "make build; npm run test; find . -name x -exec rm {} +; xargs -I{} git add {} < f",
    "curl -s -X POST -H \"Authorization: token $GITHUB_TOKEN\" https://api.github.com/repos/o/r/pulls",
    "gh pr create --fill; grep -r ghp_ ~; cat ~/.git-credentials; env | grep TOKEN",
    "for f in *.py; do cp \"$f\" /tmp/x/.git/; done; echo $(base64 -d <<< Z2l0) > /dev/null",
    "cat <<EOF > /tmp/s.sh\ngit push\nEOF\nbash /tmp/s.sh",
    "x=$(( 1 + 2 )); [[ $x == 3 ]] && echo ok; case $x in 3) : ;; esac",
    # what an agent host's shell snapshot and wrapper run around every command
    "unalias -a 2>/dev/null || true; alias -- ll='ls -alF'; command -v rg >/dev/null 2>&1; export PATH=/bin; pwd -P",
)
# Programs agents run (the most frequent in the shared corpus's analysed commands, and the common
# tools around them), warmed with the pre-check's own list: the stages keep what they work out
# per program name (the rules an invocation of it can meet among them), and a name first met in
# a worker cost its request about 250,000 instructions, every time.
COMMON_PROGRAMS = (
    "ssh scp rsync python python3 pip pip3 pytest uv poetry conda tox ruff mypy black flake8 pylint node npm npx "
    "yarn pnpm docker kubectl make cmake cargo go java javac gcc g++ clang jq yq tar unzip zip gzip du df ps kill "
    "pkill pgrep tee tr cut sort uniq nl diff patch cmp stat file ln realpath readlink basename dirname seq sleep "
    "wait timeout which type test chmod chown touch mv cp rm mkdir rmdir tail head wc less open tree md5sum "
    "sha256sum base64 od xxd date env printenv export unset alias unalias command pwd true false rg fd ls cat "
    "grep sed awk find xargs echo printf apt-get apt pkg-config ldd strace lsof netstat ss ping dig nslookup"
).split()
_RESERVED = frozenset("if then else elif fi case esac for select while until do done in function time coproc".split())


def run(ctx: Context) -> None:
    """Analyse the warm-up commands with ``ctx`` (its rule layering), then one command of every
    program in ``COMMON_PROGRAMS`` and the layering's pre-check list. A failure only costs speed."""
    import re

    from guard import parse
    from guard.engine import analyze, rules_for
    from guard.ruleset import derived

    parse.warm()
    try:
        listed = derived.derived(rules_for(ctx)).precheck.programs
    except Exception:  # noqa: BLE001 - a warm-up failure only costs speed
        listed = frozenset()
    names = sorted(n for n in {*COMMON_PROGRAMS, *listed}
                   if n not in _RESERVED and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.+-]*", n))
    for command in (*COMMANDS, "; ".join(names)):
        try:
            analyze(command, ctx)
        except Exception:  # noqa: BLE001
            pass
    try:  # bashlex, the fallback parser, and its tables: the commands above all parse without it
        from guard.parse import bashlex_fallback

        bashlex_fallback.lower("a=(1 2); echo ${a[@]}")
    except Exception:  # noqa: BLE001
        pass
