"""Statement structure: pipelines, lists, compounds, declarations, redirects, heredocs."""

from __future__ import annotations

from guard.ir import AndOr, FunctionDef, Group, Lit, Param, Pipeline, Redirect, Sequence, Simple, Subshell
from guard.parse import parse
from tests.parse.conftest import argvs, simples


def test_pipeline_binds_tighter_than_andor() -> None:
    # tree-sitter nests `a | b | c && d` as a pipeline containing a list; bash does not.
    body = parse("a | b | c && d").body
    assert isinstance(body, AndOr) and body.ops == ("&&",)
    assert isinstance(body.items[0], Pipeline) and len(body.items[0].commands) == 3
    assert isinstance(body.items[1], Simple)


def test_sequence_and_background() -> None:
    body = parse("a; b & c").body
    assert isinstance(body, Sequence)
    assert body.background == (False, True, False)


def test_negation_and_stderr_pipe() -> None:
    body = parse("! a |& b").body
    assert isinstance(body, Pipeline) and body.negated
    assert body.commands[0].redirects == (Redirect(">&", 2, body.commands[0].redirects[0].target),)
    assert body.commands[0].redirects[0].target.literal == "1"


def test_trailing_redirect_goes_to_last_command() -> None:  # tree-sitter-bash #345
    body = parse("cd build && make 2>/dev/null").body
    assert isinstance(body, AndOr)
    assert body.items[0].redirects == ()
    (r,) = body.items[1].redirects
    assert (r.op, r.fd, r.target.literal) == (">", 2, "/dev/null")


def test_assignments() -> None:
    s = parse("a=(git push) b+=x c[1]=y cmd").body
    a, b, c = s.assigns
    assert a.name == "a" and [w.literal for w in a.array] == ["git", "push"]
    assert b.append and b.value.literal == "x"
    assert c.index == "1"
    assert [w.literal for w in s.words] == ["cmd"]
    bare = parse("x=1").body
    assert bare.words == () and bare.assigns[0].value.literal == "1"


def test_declarations_keep_words_as_written() -> None:
    s = parse("export X=$(git rev-parse HEAD) Y").body
    assert [w.raw for w in s.words] == ["export", "X=$(git rev-parse HEAD)", "Y"]
    x = s.words[1]
    assert x.parts[0] == Lit("X=")
    assert argvs(parse("export X=$(git rev-parse HEAD) Y"))[1] == ["git", "rev-parse", "HEAD"]
    for kw in ("declare -a", "local", "readonly", "typeset", "unset"):
        assert parse(f"{kw} v").body.words[0].literal == kw.split()[0]


def test_test_commands_keep_operands() -> None:
    s = parse("[[ -n $GITHUB_TOKEN ]]").body
    assert s.words[0].literal == "[[" and s.words[-1].literal == "]]"
    assert any(isinstance(p, Param) and p.name == "GITHUB_TOKEN" for w in s.words for p in w.parts)
    assert parse("[ -f x ]").body.words[0].literal == "["
    arith = parse("(( $(git push) > 1 ))")
    assert ["git", "push"] in argvs(arith)


def test_compounds() -> None:
    g = parse("if a; then b; elif c; then d; else e; fi").body
    assert isinstance(g, Group) and g.kind == "if"
    assert [x[0] for x in argvs(parse("if a; then b; elif c; then d; else e; fi"))] == list("abcde")
    f = parse('for x in a "b c"; do y; done').body
    assert f.kind == "for" and f.loop_var == "x" and [w.literal for w in f.words] == ["a", "b c"]
    assert parse("while a; do b; done").body.kind == "while"
    assert parse("until a; do b; done").body.kind == "until"
    assert parse("select s in a; do b; done").body.kind == "select"
    assert parse("for ((i=0;i<3;i++)); do b; done").body.kind == "arith-for"
    c = parse("case $x in a|b) git push;; *) y;; esac").body
    assert c.kind == "case" and [w.raw for w in c.words] == ["$x", "a", "b", "*"]
    assert ["git", "push"] in argvs(parse("case $x in a|b) git push;; *) y;; esac"))
    assert isinstance(parse("(cd x && git push)").body, Subshell)
    assert parse("{ a; b; }").body.kind == "group"


def test_function_definition() -> None:
    src = "f() { git push; }"
    fn = parse(src + "; f").body.items[0]
    assert isinstance(fn, FunctionDef) and fn.name == "f" and fn.source == src
    assert argvs(parse(src)) == [["git", "push"]]


def test_time_and_coproc_lower_to_the_command() -> None:
    assert argvs(parse("time -p git push")) == [["git", "push"]]
    assert argvs(parse("coproc git push")) == [["git", "push"]]
    assert argvs(parse("time (git push)")) == [["git", "push"]]


def test_comments_dropped_and_empty_input() -> None:
    assert argvs(parse("# git push\nls # git push")) == [["ls"]]
    empty = parse("")
    assert empty.body is None and empty.parser == "tree-sitter"
    assert parse("   \n").body is None


def test_quoted_heredoc_is_a_body_not_a_command() -> None:
    script = parse("cat > f <<'EOF'\ngit push\nEOF")
    assert argvs(script) == [["cat"]]
    redirects = script.body.redirects
    heredoc = [r for r in redirects if r.op == "<<"][0]
    assert heredoc.quoted and heredoc.body.literal == "git push\n"
    assert [r.target.literal for r in redirects if r.op == ">"] == ["f"]


def test_heredoc_dash_strips_tabs() -> None:
    r = parse("cat <<-'EOF'\n\tgit push\n\tEOF").body.redirects[0]
    assert r.op == "<<-" and r.body.literal == "git push\n"


def test_unquoted_heredoc_expands() -> None:
    script = parse("cat <<EOF\nx $(git push) `id` $HOME\nEOF")
    assert ["git", "push"] in argvs(script) and ["id"] in argvs(script)
    body = script.body.redirects[0].body
    assert any(isinstance(p, Param) and p.name == "HOME" for p in body.parts)


def test_heredoc_then_pipe_is_a_pipeline() -> None:
    script = parse("cat <<EOF | bash\ngit push\nEOF")
    assert isinstance(script.body, Pipeline)
    assert argvs(script) == [["cat"], ["bash"]]
    assert script.body.commands[0].redirects[0].body.literal == "git push\n"


def test_heredoc_then_andand() -> None:
    script = parse("cat > f <<'EOF' && bash f\ngit push\nEOF")
    assert isinstance(script.body, AndOr)
    assert argvs(script) == [["cat"], ["bash", "f"]]


def test_heredoc_dash_argument_is_kept() -> None:
    # tree-sitter silently drops the `-` here; the lowering must notice and fall back.
    script = parse("python3 - <<'PY'\nimport os\nPY")
    assert argvs(script) == [["python3", "-"]]
    assert script.parser != "tree-sitter"


def test_herestring() -> None:
    r = parse("bash <<< 'git push'").body.redirects[0]
    assert r.op == "<<<" and r.target.literal == "git push"


def test_redirect_forms() -> None:
    rs = parse("cmd 2>&1 >f >>g <in &>all 3<&0 >&- >|clob").body.redirects
    assert [(r.op, r.fd, r.target.literal) for r in rs] == [
        (">&", 2, "1"), (">", None, "f"), (">>", None, "g"), ("<", None, "in"), ("&>", None, "all"),
        ("<&", 3, "0"), (">&", None, "-"), (">|", None, "clob"),
    ]


def test_simple_positions() -> None:
    src = "ls && git push"
    s = simples(parse(src))[1]
    assert src[s.pos[0]:s.pos[1]] == "git push"
