"""Walk the IR, tracking shell state, and emit every program the command would run.

``Walker`` visits nodes; what a *program* does once its argv is known (wrappers, nested shells,
interpreters, scripts) is in ``guard.resolve.programs``.
"""

from __future__ import annotations

import guard.resolve.builtins as builtins
import guard.resolve.programs as programs
import guard.resolve.sourced as sourced
from guard.context import Context
from guard.ir import (
    ASSIGN,
    KIND_NAMES,
    REDIRECT,
    RUN,
    UNKNOWN,
    AndOr,
    CmdSub,
    FunctionDef,
    Group,
    Invocation,
    Lit,
    Node,
    Param,
    Pipeline,
    Redirect,
    Script,
    Sequence,
    Simple,
    Subshell,
    Word,
)
from guard.resolve import archives, paths
from guard.resolve.state import WALK_BUDGET, Assoc, Call, Frame, Sink, State, relink
from guard.resolve.variables import resolve_name, set_element
from guard.resolve.words import (
    PLAIN_TEXT,
    Expander,
    Hooks,
    expand_one,
    expand_word,
    literal_field,
)
from guard.resolve.wrappers import basename

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

OUTPUT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
# The programs whose effect on later commands of the same command line the walk remembers.
_REMEMBERED = frozenset({"rm", "rmdir", "cp", "ln", "install", "mv", "link", "mkdir", "git"})
LATER_CODE = frozenset({"PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS4"})
# First words whose other words expand as assignments (declarations) or unsplit ([[ … ]]), and
# those with more to do once the command is emitted (declarations, arithmetic operands): a set
# each, so a command with any other first word (nearly all) is told so by one lookup.
_NONE: dict = {}
_ASSIGNING_HEADS = builtins.DECLARE | {"[["}
_AFTER_RUN_HEADS = builtins.DECLARE | {"[[", "((", "let"}


PIPE_TO_STAGES = 32


class Walker:
    """Walks the IR. ``reparse`` is the parse stage, given by the caller (as mvdan/sh's
    ``expand.Config`` takes its command-substitution handler): shell code the command builds
    (``bash -c``, ``eval``, alias values, ``${x@P}``) is read again through it, so the resolver
    never imports the parser it sits behind."""

    def __init__(self, ctx: Context, sink: Sink, reparse: Callable[[str], Script]) -> None:
        self.ctx = ctx
        self.sink = sink
        self.reparse = reparse
        self.stdin_used: str | None = None  # what the last simple command read on stdin
        self.fds_used: dict[int, str] = {}  # what its descriptors 3 and up give a reader
        self.std_paths = ("", "")  # the files its stdin is read from and its stdout written to
        self.last_env: dict[str, str | None] = {}  # the assignments in front of the last simple command
        self.reads: list[str] = []  # input-redirection paths of the simple command being walked

    # ------------------------------------------------------------------ nodes

    def node(self, n: Node | None, st: State, fr: Frame, stdin: str | None = None) -> tuple[str, ...] | None:
        """Walk a node; for a simple command return its final static argv (for pipes)."""
        if n is None:
            return None
        sink = self.sink  # ``sink.spend()`` inline: one call fewer per node
        sink.budget -= 1
        if sink.budget <= 0:
            if sink.budget == 0:
                sink.note(f"command too large: analysis stopped after {WALK_BUDGET} nodes")
            return None
        if isinstance(n, Simple):
            # the reads of the command being walked are its own: kept here, not in a method of
            # their own, as this is the one way to a simple command (one call fewer for each)
            outer_reads, self.reads = self.reads, []
            try:
                return self.simple(n, st, fr, stdin)
            finally:
                self.reads = outer_reads
        if isinstance(n, Pipeline):
            self.pipeline(n, st, fr, stdin, output=False)
        elif isinstance(n, AndOr):
            for i, item in enumerate(n.items):
                if i and n.ops[i - 1] == "&&" and st.failed and st.cd_target:
                    # `cd DIR && …` where DIR is not there yet: bash would run nothing more, but
                    # the folder may exist by the time it runs; analyse the rest as if in DIR
                    st.cwd = st.cd_target
                gone = st.cd_target if i and n.ops[i - 1] == "||" and st.failed else ""
                self.node(item, st, fr, stdin if i == 0 else None)
                if gone and _leaves(item):
                    # `cd DIR || exit 1; …`: what follows runs only once DIR is there, as for &&
                    st.cwd = gone
        elif isinstance(n, Sequence):
            for item in n.items:
                self.node(item, st, fr)
                if st.errexit and st.failed and st.cd_target:
                    st.cwd = st.cd_target  # under set -e a failed cd ends the shell, as `cd DIR || exit`
        elif isinstance(n, Subshell):
            self.compound_redirects(n.redirects, st, fr)
            self.node(n.body, st.copy(), fr, stdin)
        elif isinstance(n, Group):
            self.group(n, st, fr, stdin)
        elif isinstance(n, FunctionDef):
            st.functions[n.name] = n
        return None

    def compound_redirects(self, rs: tuple[Redirect, ...], st: State, fr: Frame) -> None:
        """Redirections on a loop, group or subshell: a file they read is still read
        (``while read l; do …; done < ~/.git-credentials``), so it becomes an invocation."""
        outer, self.reads = self.reads, []
        try:
            self.redirects(rs, st, fr)
            if self.reads:
                self.emit(Call(("<", *self.reads), st, fr, {}), kind=REDIRECT)
        finally:
            self.reads = outer

    def group(self, n: Group, st: State, fr: Frame, stdin: str | None) -> None:
        self.compound_redirects(n.redirects, st, fr)
        items: list[str] = []
        for w in n.words:
            items.extend(self.expand(w, st, fr))
        body_stdin = stdin if stdin is not None else self.heredoc_stdin(n.redirects, st, fr)
        if n.loop_var and n.kind in ("for", "select"):
            values = items if (items and len(items) <= 4 and all(UNKNOWN not in v for v in items)) else [UNKNOWN]
            for v in values:
                st.vars[n.loop_var] = v
                for b in n.body:
                    self.node(b, st, fr, body_stdin)
            return
        for k, b in enumerate(n.body):
            self.node(b, st, fr, body_stdin)
            if k == 0 and n.kind in ("if", "while", "until") and st.failed and st.cd_target:
                # `if cd DIR; then …`, `if ! cd DIR; then exit 1; fi; …`: what the condition
                # guards is meant to run in DIR, as after `cd DIR && …`
                st.cwd = st.cd_target

    def pipeline(self, n: Pipeline, st: State, fr: Frame, stdin: str | None, output: bool = True) -> str | None:
        """Walk the stages, feeding each the known output of the one before; return the last
        stage's output when it is deterministic. ``output`` False: the caller drops it (a
        pipeline run as a command, not substituted), so the last stage's is not worked out."""
        stage_starts: list[int] = []
        flow = stdin
        last = len(n.commands) - 1
        for k, cmd in enumerate(n.commands):
            stage_starts.append(len(self.sink.invocations))
            # each stage of a multi-stage pipeline runs in a subshell in bash
            sub = st.copy() if len(n.commands) > 1 else st
            self.stdin_used = flow
            self.last_env = {}
            argv = self.node(cmd, sub, fr, flow)
            if argv is None or (k == last and not output):
                flow = None
            else:
                flow = programs.output_of(argv, self.stdin_used, _with_env(sub, self.last_env))
        # tell each stage what its output is piped into (the next PIPE_TO_STAGES stages: enough
        # for ``env | sort | grep -i token``, and linear on a pipeline of thousands of stages)
        stage_starts.append(len(self.sink.invocations))
        invs = self.sink.invocations
        for s in range(len(n.commands) - 1):
            later = tuple(
                invs[stage_starts[t]].argv
                for t in range(s + 1, min(len(n.commands), s + 1 + PIPE_TO_STAGES))
                if stage_starts[t] < stage_starts[t + 1]
            )
            for k in range(stage_starts[s], stage_starts[s + 1]):
                inv = invs[k]
                if inv.via == invs[stage_starts[s]].via:
                    invs[k] = _piped(inv, later)
        for s in range(len(n.commands) - 1):
            if stage_starts[s] < stage_starts[s + 1] < stage_starts[s + 2]:
                self.archive_pipe(invs[stage_starts[s]], invs[stage_starts[s + 1]], st, fr)
        return flow

    def archive_effect(self, argv: tuple[str, ...], spec: Mapping[str, object], st: State, fr: Frame,
                       pos: tuple[int, int], std_paths: tuple[str, str]) -> None:
        """An archive packed from known folders is remembered; one unpacked later in the command
        lands what it holds where it is unpacked, emitted as the ``cp -r`` it amounts to, so a
        repository's .git arriving in the tree is seen as a copy of the repository. An archive
        named ``-`` is the file the command's stdout is written to (packing) or its stdin read
        from (unpacking)."""
        home = str(st.vars.get("HOME") or "/root")
        r = archives.read(argv, spec)
        name = r.archive if r.archive != "-" else std_paths[1] if r.mode == "create" else std_paths[0]
        if not r.mode or not name or UNKNOWN in name:
            return
        archive = paths.join(st.cwd, name, home)
        folder = paths.join(st.cwd, r.folder, home) if r.folder else st.cwd
        if r.mode == "create":
            held = tuple(paths.join(folder, name, home) for name in r.names)
            if r.recursive and not r.leaves_vcs and held and not any(UNKNOWN in h for h in held):
                st.fx.archives[archive] = held
            else:
                st.fx.archives.pop(archive, None)  # overwritten with what guard does not follow
            return
        held = st.fx.archives.get(archive)
        if not held or r.leaves_vcs or UNKNOWN in folder:
            return
        if r.names:  # only these members: NAME/… of a folder packed as NAME
            held = tuple(h.rsplit("/", 1)[0] + "/" + m.strip("/") for m in r.names for h in held
                         if m.strip("/").split("/", 1)[0] == h.rsplit("/", 1)[-1])
        if held:
            via = Frame(fr.via + (f"{argv[0].rsplit('/', 1)[-1]} unpacks {name}",), fr.depth, fr.lang)
            self.emit(Call(("cp", "-r", *held, paths.real(folder)), st, via, {}, pos=pos), "cp")

    def archive_pipe(self, left: Invocation, right: Invocation, st: State, fr: Frame) -> None:
        """``tar -C /tmp -cf - r | tar -C DEST -xf -`` and ``find r | cpio -pdm DEST`` copy files
        as ``cp -r`` does: said so, a copy of a clone with its .git is seen as one."""
        copy = programs.archive_copy(left, right, str(st.vars.get("HOME") or "/root"), self.ctx)
        if copy is None:
            return
        sources, dest = copy
        via = Frame(fr.via + (f"{left.program} | {right.program}",), fr.depth, fr.lang)
        self.emit(Call(("cp", "-r", *sources, dest), st, via, {}, pos=right.pos, cwd=right.cwd), "cp")

    def simple(self, n: Simple, st: State, fr: Frame, stdin: str | None) -> tuple[str, ...] | None:
        refs: list[str] = []
        # assignments: values are expanded (their substitutions run) in order
        assigned: dict[str, str | list[str] | dict | None] = {}
        for a in n.assigns:
            name = resolve_name(a.name, st)
            if a.array is not None:
                value: str | list[str] | dict | None = self.array_value(a.array, st, fr, refs, name)
                if a.append and isinstance(value, list):
                    old = st.vars.get(name)
                    value = (old if isinstance(old, list) else [old] if isinstance(old, str) else []) + value
            elif a.index is not None:
                self.set_index(name, a.index, self.expand_one(a.value, st, fr, refs) if a.value else "", st, fr, refs)
                continue
            else:
                value = self.expand_one(a.value, st, fr, refs, assign=True) if a.value is not None else ""
            if a.append and isinstance(value, str):
                old = st.vars.get(name)
                value = (old if isinstance(old, str) else old[0] if isinstance(old, list) and old else
                         "" if name in st.vars and isinstance(old, list) else UNKNOWN) + value
            assigned[name] = value
            if name in LATER_CODE:
                self.later_code(name, value, st, fr)
        writes: tuple[str, ...] = ()
        fds = st.fds
        self.std_paths = ("", "")
        if n.redirects:
            writes, in_stdin, fds = self.redirect_effects(n.redirects, st, fr, refs)
            if in_stdin is not None:
                stdin = in_stdin  # a heredoc or here-string replaces piped input
            if len(n.words) == 1 and n.words[0].literal == "exec":
                st.fds = fds  # `exec 3<<<TEXT`: the descriptors stay open for the commands after it
        self.stdin_used = stdin
        self.fds_used = fds
        std_paths = self.std_paths
        argv: list[str] = []
        words = n.words
        if words:  # ``Word.literal`` inline for the usual first word, a single literal part
            parts = words[0].parts
            head = parts[0].text if len(parts) == 1 and type(parts[0]) is Lit else words[0].literal
        else:
            head = None
        if head in _ASSIGNING_HEADS:
            # declarations expand NAME=VALUE words as assignments; [[ … ]] neither splits nor globs
            hooks = self.hooks(fr)
            for k, w in enumerate(n.words):
                if k and (head == "[[" or _is_assignment_word(w)):
                    argv.append(expand_one(w, st, hooks, refs, assign=True))
                else:
                    argv.extend(expand_word(w, st, hooks, refs))
            if head != "[[" and any(a[:1] == "-" and "p" in a for a in argv[1:]):
                refs.extend(a for a in argv[1:] if a.isidentifier())  # declare -p GH_TOKEN prints it
        else:
            append = argv.append
            plain_text = PLAIN_TEXT
            for w in words:
                parts = w.parts
                # ``literal_field``'s first answer inline (a quoted literal, or unquoted text
                # already known to need no expansion): most words, without a call each
                if len(parts) == 1 and type(p := parts[0]) is Lit and (p.quoted or plain_text.get(p.text)):
                    append(p.text)
                    continue
                field = literal_field(w)
                if field is not None:
                    append(field)
                else:
                    argv.extend(self.expand(w, st, fr, refs))
        if not words:
            st.vars.update(assigned)
            if refs:
                self.emit(Call(("",), st, fr, {}, stdin, writes, refs, n.pos), kind=ASSIGN)
            return None
        if not argv:
            # every word expanded to nothing (e.g. "$EMPTY"): nothing runs
            return None
        env = {k: (v if isinstance(v, str) else None) for k, v in assigned.items()} if assigned else {}
        self.last_env = env
        if st.fx.links:
            argv = [relink(a, st) for a in argv]
        # aliases apply to the first word when it was written as a plain literal
        first = words[0]
        literal = first.literal if st.aliases else None  # no aliases (the usual case): no lookup
        if (
            literal is not None
            and literal in st.aliases
            and fr.depth < self.sink.max_depth
            and not (len(first.parts) == 1 and isinstance(first.parts[0], Lit) and first.parts[0].quoted)
            and not first.raw.startswith("\\")
        ):
            return self.alias(n, literal, st, fr)
        name = argv[0]
        if name in st.functions and fr.depth < self.sink.max_depth:
            return self.call_function(name, argv, st, fr, stdin)
        label = _computed_name(first) if head is None else None  # a literal name was not computed
        if label:
            fr = Frame(fr.via + (label,), fr.depth, fr.lang)
        args = tuple(argv)
        final = programs.run(self, Call(args, st, fr, env, stdin, writes, refs, n.pos))
        if head in _AFTER_RUN_HEADS:  # one test for the few heads with more to do (most have none)
            if head in builtins.DECLARE:
                for a in argv[1:]:
                    var, eq, val = a.partition("=")
                    if eq and var in LATER_CODE:
                        self.later_code(var, val, st, fr)
            else:
                self.arith_operands(head, argv, st, fr, refs)
        # after the emit, so `cd X` itself runs where it was typed
        st.failed = False
        # `builtin cd X` and `command cd X` run the builtin in this shell (in a function named
        # cd, the usual way to reach the real one); other wrappers run a separate program
        acting = final if argv[0] in _IN_THIS_SHELL and final else argv
        assigns = self.ctx.runs.get(fr.lang, _NONE).get("assigns") if fr.lang != "sh" else None
        if isinstance(assigns, dict) and acting[0] == assigns.get("command"):
            builtins.assign_list(list(acting), st, assigns)  # fish: set NAME VALUE…
        elif acting[0] in builtins.CHANGES_STATE:
            builtins.apply(list(acting), st, stdin, env, lambda text: self.compound(text, st, fr))
        if len(st.fx.ran) < 256:
            st.fx.ran.append(final or args)
        st.vars["_"] = args[-1]  # bash's $_: the last word of the command before
        if writes:
            self.remember_written(args, stdin, writes, st)
        if stdin is not None and final and basename(final[0]) == "tee":
            self.remember_teed(final, stdin, st)
        if not final:
            return final
        ran = final[0]
        if "/" in ran:
            ran = ran.rsplit("/", 1)[-1]
        if ran in self.ctx.archives:
            self.archive_effect(final, self.ctx.archives[ran], st, fr, n.pos, std_paths)
        if ran not in _REMEMBERED:
            return final
        if ran in ("rm", "rmdir"):
            home = str(st.vars.get("HOME") or "/root")
            st.fx.removed.update(paths.join(st.cwd, a, home) for a in final[1:] if not a.startswith("-"))
        elif ran in ("cp", "ln", "install", "mv", "link"):
            programs.remember_copies(final, st)
        elif ran == "mkdir":
            home = str(st.vars.get("HOME") or "/root")
            st.fx.made.update(paths.join(st.cwd, a, home) for a in final[1:] if not a.startswith("-"))
        elif ran == "git":
            made = programs.repository_made(final, st)
            if made:
                st.fx.cloned.add(made)
        return final

    def remember_written(self, argv: tuple[str, ...], stdin: str | None, writes: tuple[str, ...], st: State) -> None:
        """A file the command writes with known content can be run later in the same command
        (docs/behaviour.md §9.12): keep its content so the run is analysed like a script on disk."""
        out = programs.output_of(argv, stdin, st)
        for path in writes:
            if out is not None and UNKNOWN not in path:
                st.fx.files[path] = out

    def remember_teed(self, argv: tuple[str, ...], stdin: str, st: State) -> None:
        """``tee FILE…`` writes its input to each FILE (``-a``: after what is there): a script
        written that way and then run is analysed like one written with ``>``."""
        append = any(a in ("-a", "--append") or (a[:1] == "-" and a[1:2] != "-" and "a" in a) for a in argv[1:])
        for a in argv[1:]:
            if a.startswith("-") or UNKNOWN in a:
                continue
            path = paths.join(st.cwd, a, str(st.vars.get("HOME") or "/root"))
            st.fx.files[path] = (st.fx.files.get(path, "") if append else "") + stdin

    # ------------------------------------------------------------------ indirections

    def alias(self, n: Simple, name: str, st: State, fr: Frame) -> tuple[str, ...] | None:
        value = st.aliases.pop(name)  # bash does not expand an alias inside itself
        text, k, used = value, 1, [(name, value)]
        # an alias ending in a blank makes bash alias-expand the next word too (alias s='sudo ')
        while text[-1:] in (" ", "\t") and k < len(n.words):
            nxt = n.words[k].literal
            if nxt is None or nxt not in st.aliases or n.words[k].raw != nxt:
                break
            more = st.aliases.pop(nxt)
            used.append((nxt, more))
            text += more
            k += 1
        rest = " ".join(w.raw for w in n.words[k:])
        try:
            self.string(text + (" " + rest if rest else ""), st, fr, f"alias {name}")
        finally:
            for a, v in used:
                st.aliases.setdefault(a, v)
        return None

    def call_function(self, name: str, argv: list[str], st: State, fr: Frame, stdin: str | None) -> None:
        body = st.functions[name]
        saved = st.positional
        st.positional = list(argv[1:])
        inner_fr = Frame(fr.via + (f"function {name}",), fr.depth + 1, fr.lang)
        guard_name = st.functions.pop(name)  # no infinite recursion
        try:
            if isinstance(body, FunctionDef):
                self.node(body.body, st, inner_fr, stdin)
            else:
                self.string_in(body, st, inner_fr)
                if name in st.functions and isinstance(st.functions[name], FunctionDef):
                    fn = st.functions.pop(name)
                    self.node(fn.body, st, inner_fr, stdin)
        finally:
            st.functions[name] = guard_name
            st.positional = saved
        return None

    def string(self, text: str, st: State, fr: Frame, via: str, stdin: str | None = None, lang: str = "sh") -> None:
        """Parse and walk shell code (``bash -c``, ``eval``, alias values…) in state ``st``;
        ``lang`` names a catalogue runner whose shell line reads its own way (fish's ``set``)."""
        if fr.depth >= self.sink.max_depth:
            self.sink.note(f"nesting deeper than {self.sink.max_depth} levels not analysed ({via})")
            return
        self.string_in(text, st, Frame(fr.via + (via,), fr.depth + 1, lang), stdin)

    def string_in(self, text: str, st: State, fr: Frame, stdin: str | None = None) -> None:
        """Parse and walk shell code in ``st`` under frame ``fr``, within the re-parse budget."""
        self.sink.reparse_budget -= len(text)
        if self.sink.reparse_budget < 0:
            self.sink.note("nested shell code beyond 128 KiB not analysed")
            return
        self._string_in(text, st, fr, stdin)

    def _string_in(self, text: str, st: State, fr: Frame, stdin: str | None = None) -> None:
        if UNKNOWN in text:
            self.sink.note(f"{' → '.join(fr.via) or 'command'}: shell code with unknown parts")
        script = self.reparse(text)
        if script.parser in ("scan", "none") and script.error:
            self.sink.note(f"{' → '.join(fr.via)}: could not parse nested shell code ({script.parser})")
        elif script.error:
            self.sink.note(f"{' → '.join(fr.via)}: nested shell code partly analysed ({script.error})")
        self.node(script.body, st, fr, stdin)

    # ------------------------------------------------------------------ words and redirects

    def subst(self, script: Script, st: State, fr: Frame | None = None) -> str | None:
        """Walk a substitution's commands and return its output when deterministic."""
        fr = fr or Frame()
        inner = st.copy()
        sub_fr = Frame(fr.via + ("$(…)",), fr.depth, fr.lang)
        body = script.body
        if isinstance(body, Pipeline):
            out = self.pipeline(body, inner, sub_fr, None)
        else:
            self.last_env = {}
            made = self.sink.invocations
            before = len(made)
            argv = self.node(body, inner, sub_fr)
            # a heredoc or here-string it reads is its input: $(cat <<'EOF' … EOF), as agents
            # write commit messages, is the heredoc's text
            stdin = made[-1].stdin if len(made) > before and made[-1].argv == argv else None
            out = programs.output_of(argv, stdin, _with_env(inner, self.last_env)) if isinstance(body, Simple) and argv else None
        return out

    def later_code(self, name: str, value: object, st: State, fr: Frame) -> None:
        """``PROMPT_COMMAND`` is run by bash before each prompt, and the prompts ``PS0``-``PS4``
        are expanded again (``PS4`` under ``set -x``): their commands are the command's too."""
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, str) or not v:
                continue
            if name == "PROMPT_COMMAND":
                self.string(v, st.copy(), fr, name)
            else:
                Expander(st.copy(), self.hooks(Frame(fr.via + (name,), fr.depth, fr.lang)), []).string_of(v)

    def arith_operands(self, head: str, argv: list[str], st: State, fr: Frame, refs: list[str]) -> None:
        """``[[ $n -gt 0 ]]``, ``(( … ))`` and ``let``: bash evaluates the operands as arithmetic,
        so a variable holding ``a[$(cmd)]`` runs cmd."""
        ex = Expander(st, self.hooks(fr), refs)
        if head == "[[":
            ops = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
            for k, a in enumerate(argv):
                if a in ops:
                    for operand in (argv[k - 1] if k > 1 else "", argv[k + 1] if k + 1 < len(argv) else ""):
                        if operand and not operand.lstrip("-").isdigit():
                            ex.arith_text(operand)
        elif head == "((":
            ex.arith_text(" ".join(argv[1:-1] if argv[-1:] == ["))"] else argv[1:]))
        else:
            for a in argv[1:]:
                ex.arith_text(a)

    def hooks(self, fr: Frame) -> Hooks:
        return Hooks(lambda s, state: self.subst(s, state, fr), self.lex, note=self.sink.note)

    def expand(self, w: Word, st: State, fr: Frame, refs: list[str] | None = None) -> list[str]:
        return expand_word(w, st, self.hooks(fr), refs)

    def expand_one(self, w: Word, st: State, fr: Frame, refs: list[str] | None = None, assign: bool = False) -> str:
        parts = w.parts
        if len(parts) == 1 and type(p := parts[0]) is Lit and (p.quoted or "~" not in p.text):
            return p.text  # ``expand_one``'s own first answer, before hooks are made for it
        return expand_one(w, st, self.hooks(fr), refs, assign=assign)

    def array_value(self, words: tuple[Word, ...], st: State, fr: Frame, refs: list[str], name: str) -> list[str] | dict:
        """The value of ``name=(…)``: elements in order, ``[k]=v`` placing one (sparse arrays,
        and associative ones when ``name`` was declared ``-A``)."""
        assoc = isinstance(st.vars.get(name), Assoc)
        items: dict = Assoc() if assoc else {}
        nxt = 0
        hooks = self.hooks(fr)
        for w in words:
            key_val = _keyed(w)
            if key_val is not None:
                key_text, value_word = key_val
                ex = Expander(st, hooks, refs)
                key: str | int | None = ex.string_of(key_text) if assoc else ex.arith_text(key_text)
                val = ex.one(value_word)
                if key is None or UNKNOWN in str(key):
                    return None  # type: ignore[return-value]
                if not assoc:
                    key = int(key)  # type: ignore[arg-type]
                    nxt = key + 1
                items[key] = val
                continue
            for v in expand_word(w, st, hooks, refs):
                if assoc:
                    items[v] = ""
                else:
                    items[nxt] = v
                    nxt += 1
        if assoc:
            return items
        keys = sorted(items)
        return [items[k] for k in keys] if keys == list(range(len(keys))) else dict(sorted(items.items()))

    def set_index(self, name: str, index: str, value: str, st: State, fr: Frame, refs: list[str]) -> None:
        """``a[i]=v``: the subscript is evaluated (and any ``$(…)`` in it run) as bash does."""
        ex = Expander(st, self.hooks(fr), refs)
        text = ex.string_of(index)  # expanded first: a $(…) in the subscript runs
        if name in ("BASH_ALIASES", "BASH_CMDS") and UNKNOWN not in text:
            # bash's alias and command-hash tables, written directly
            (st.aliases if name == "BASH_ALIASES" else st.hashed)[text] = value
            return
        key = text if isinstance(st.vars.get(name), Assoc) or UNKNOWN in text else ex.arith_text(text)
        set_element(st, name, None if UNKNOWN in key else key, value)

    def lex(self, text: str) -> Word:
        """Text bash reads again as a word (``${x@P}``, an arithmetic subscript), lexed by the
        parse stage's word lexer with its substitutions parsed through ``reparse``."""
        from guard.parse.words import make_word

        return make_word(text, 0, lambda kind, inner, off: self.reparse(inner))

    def compound(self, text: str, st: State, fr: Frame) -> list[str] | dict | None:
        """The array ``declare -a c='(…)'`` makes: the text is read again as an array literal."""
        script = self.reparse("__guard_a=" + text)
        body = script.body
        if isinstance(body, Simple) and len(body.assigns) == 1 and body.assigns[0].array is not None and not body.words:
            return self.array_value(body.assigns[0].array, st, fr, [], "__guard_a")
        return None

    def redirects(self, rs: tuple[Redirect, ...], st: State, fr: Frame) -> None:
        self.redirect_effects(rs, st, fr, [])

    def heredoc_stdin(self, rs: tuple[Redirect, ...], st: State, fr: Frame) -> str | None:
        for r in rs:
            if r.op in ("<<", "<<-") and r.body is not None and r.fd in (None, 0):
                return self.expand_one(r.body, st, fr)
        return None

    def redirect_effects(
        self, rs: tuple[Redirect, ...], st: State, fr: Frame, refs: list[str]
    ) -> tuple[tuple[str, ...], str | None, dict[int, str]]:
        """What a command's redirections do, left to right as bash applies them: the files they
        write, the text its standard input gives (None: not known), and the text each other
        descriptor gives a reader (``3<<<TEXT``, ``4<<EOF``, ``5< FILE`` of a file the command
        wrote, ``6<&3``; a descriptor closed or opened on something not known is left out)."""
        writes: list[str] = []
        stdin: str | None = None
        fds = st.fds
        std_in = std_out = ""
        for r in rs:
            fd = r.fd or 0
            text: str | None = None
            if r.op in ("<<", "<<-"):
                if r.body is not None:
                    text = self.expand_one(r.body, st, fr, refs)
            elif r.target is None:
                continue
            else:
                target = self.expand_one(r.target, st, fr, refs)
                if r.op == "<<<":
                    text = target + "\n"
                elif r.op in OUTPUT_OPS and not target.isdigit() and target != "-":
                    writes.append(paths.join(st.cwd, target, str(st.vars.get("HOME") or "/root")))
                    if r.op != "<>":
                        if r.fd in (None, 1):
                            std_out = writes[-1]
                        continue
                    text = st.fx.files.get(writes[-1])
                elif r.op in ("<", "<>") or (r.op == "<&" and not target.isdigit() and target != "-"):
                    full = paths.join(st.cwd, target, str(st.vars.get("HOME") or "/root"))
                    self.reads.append(full)
                    text = st.fx.files.get(full)
                    if fd == 0:
                        std_in = full
                elif r.op == "<&" and target.isdigit():
                    text = stdin if target == "0" else fds.get(int(target))  # N<&M: N reads what M reads
                elif r.op in (">&", "<&") and target == "-" and fd in fds:
                    fds = {k: v for k, v in fds.items() if k != fd}  # closed
                    continue
                else:
                    continue
            if fd == 0:
                stdin = text
            elif text is not None:
                fds = {**fds, fd: text}
            elif fd in fds:
                fds = {k: v for k, v in fds.items() if k != fd}
        self.std_paths = (std_in, std_out)
        return tuple(writes), stdin, fds

    # ------------------------------------------------------------------ output

    def emit(self, call: Call, program: str | None = None, facts: dict | None = None, kind: str = RUN) -> None:
        """Record ``call`` as an Invocation (``program`` when its basename was already taken; a
        ``kind`` that runs no program goes by its name in ``KIND_NAMES``)."""
        argv, st, env, refs = call.argv, call.st, call.env, call.refs
        prog = KIND_NAMES[kind] if kind is not RUN else program or (basename(argv[0]) if argv else "")
        if st.exported:
            merged = dict(st.exported)
            merged.update(env)
        else:
            merged = dict(env) if env else {}
        # the empty cases (no refs, reads, removals or clones: nearly every invocation) as
        # literals, not as tuples built from empty containers
        # positionally, in the field order of Invocation (program, argv, cwd, env, via, stdin,
        # pipe_to, writes, var_refs, pos, lang, reads, removed, cloned, facts, kind): one is made per
        # program run, and fifteen keywords cost more to bind than the record's fields to fill
        self.sink.invocations.append(
            Invocation(
                prog,
                argv,
                call.cwd or st.cwd,
                merged,
                call.fr.via,
                call.stdin,
                (),
                call.writes,
                tuple(dict.fromkeys(refs)) if refs else (),
                call.pos,
                call.fr.lang,
                tuple(self.reads) if self.reads else (),
                tuple(st.fx.removed) if st.fx.removed else (),
                tuple(st.fx.cloned) if st.fx.cloned else (),
                facts or {},
                kind,
            )
        )


_IN_THIS_SHELL = frozenset({"builtin", "command"})


def _leaves(n: Node) -> bool:
    """Whether ``n`` ends the shell or function it runs in: ``exit``, ``return``, or a group
    whose last command does (``{ echo no; exit 1; }``)."""
    if isinstance(n, Group):
        if n.kind != "group" or not n.body:
            return False
        last = n.body[-1]
        return _leaves(last.items[-1] if isinstance(last, Sequence) and last.items else last)
    return isinstance(n, Simple) and bool(n.words) and n.words[0].literal in ("exit", "return")


def _with_env(st: State, env: dict[str, str | None]) -> State:
    """``st`` as the command saw it with its prefix assignments (``TMPDIR=… mktemp -d``)."""
    if not env:
        return st
    view = st.copy()
    view.vars.update(env)
    view.exported.update(env)  # a prefix assignment is in that command's environment
    return view




def _is_assignment_word(w: Word) -> bool:
    from guard.parse.words import is_assignment

    return bool(w.parts) and isinstance(w.parts[0], Lit) and not w.parts[0].quoted and is_assignment(w.parts[0].text)


def _keyed(w: Word) -> tuple[str, Word] | None:
    """``[k]=v`` inside an array literal: the key text and the value word."""
    first = w.parts[0] if w.parts else None
    if not isinstance(first, Lit) or first.quoted or not first.text.startswith("["):
        return None
    end = first.text.find("]=")
    if end < 0:
        return None
    rest = first.text[end + 2:]
    parts = ((Lit(rest),) if rest else ()) + w.parts[1:]
    return first.text[1:end], Word(w.raw, parts, w.pos)


def _computed_name(word: Word) -> str | None:
    """How a command name that was not written literally was computed, for the via chain."""
    for p in word.parts:
        if isinstance(p, Param):
            return f"array {p.name}" if p.index in ("@", "*") else f"variable {p.name}"
        if isinstance(p, CmdSub):
            return "command substitution"
    return None


def _piped(inv: Invocation, later: tuple[tuple[str, ...], ...]) -> Invocation:
    """``inv`` with ``pipe_to=later``, built positionally in the record's field order: the
    pipeline gives every stage's invocations their ``pipe_to``, and the generic ``replace``
    bound sixteen keyword arguments for each."""
    return Invocation(inv.program, inv.argv, inv.cwd, inv.env, inv.via, inv.stdin, later, inv.writes, inv.var_refs,
                      inv.pos, inv.lang, inv.reads, inv.removed, inv.cloned, inv.facts, inv.kind)


# The frame a command's walk starts in: frames are never changed once made, so every walk
# shares this one.
_OUTERMOST = Frame()


def walk_script(script: Script, ctx: Context, sink: Sink, reparse: Callable[[str], Script]) -> None:
    st = initial_state(ctx)
    w = Walker(ctx, sink, reparse)
    if ctx.startup_files:
        sourced.startup(w, ctx.startup_files, st)
    w.node(script.body, st, _OUTERMOST)


def _start(ctx: Context) -> tuple[str, dict, dict[str, str | FunctionDef], tuple[str, ...], frozenset[str]]:
    """The cwd, variables, functions and known folders (the cwd and the trees) a command in
    ``ctx`` starts with, before the copy each command gets. A stream of commands in one context
    (``guard check --jsonl``, a server worker) asks for the same each time, so the last one is
    kept with what it was made from: a copy of the environment compared by value (a caller may
    change its dict between commands), the cwd, the functions and the trees."""
    last = _last_start
    if last and last[1] == ctx.cwd and last[0] == ctx.env and last[2] == ctx.functions and last[4] == ctx.trees:
        return last[3]
    cwd = paths.normalise(ctx.cwd)
    env = ctx.env
    vars: dict = dict(env)
    # bash sets BASH itself; an agent's SHELL is this shell (guard-shell runs /bin/bash)
    vars.setdefault("BASH", "/bin/bash")
    vars["IFS"] = " \t\n"  # bash never takes IFS from the environment
    vars.setdefault("SHELL", "/bin/bash")
    # bash keeps $PWD from the environment only when it names the folder it starts in; the
    # command starts in ctx.cwd, whatever folder the caller (guard check --cwd) is in
    pwd = env.get("PWD")
    if not pwd or (pwd != cwd and paths.real(pwd) != paths.real(cwd)):
        vars["PWD"] = cwd
    functions: dict = dict(ctx.functions) if ctx.functions else {}
    # bash's exported functions: BASH_FUNC_name%%='() { body; }'. Most environments hold none,
    # and one search of the names joined finds that without a Python loop over them.
    if "BASH_FUNC_" in "\0".join(env):
        for key in [k for k in env if k[:10] == "BASH_FUNC_"]:
            value = env[key]
            if key.endswith("%%") and value.lstrip().startswith("()"):
                name = key[10:-2]
                functions[name] = f"{name} {value}"
                vars.pop(key, None)
    start = (cwd, vars, functions, (cwd, *ctx.trees), frozenset(env))
    _last_start[:] = (dict(env), ctx.cwd, dict(ctx.functions), start, ctx.trees)
    return start


_last_start: list = []


def initial_state(ctx: Context) -> State:
    cwd, vars, functions, given, inherited = _start(ctx)
    st = State.start(cwd, dict(vars), dict(ctx.aliases) if ctx.aliases else {}, given, inherited)
    if functions:
        st.functions.update(functions)
    return st
