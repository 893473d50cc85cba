"""What an invocation does, in terms the YAML rules match on.

Each program family (git, gh, HTTP clients, file copies, token probes) has one pure function
that reads an Invocation's static argv and returns a flat dict of facts. The rules never see argv
parsing; the Python never decides a category.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache

from guard.ir import ENV_READ, KIND_NAMES, UNKNOWN, Invocation
from guard.record import dataclass
from guard.resolve import paths
from guard.ruleset import catalogue as cat
from guard.ruleset.model import Forge
from guard.ruleset.programs import Reading, Spec, is_url, read, reader_facts, spec_for
from guard.ruleset.stores import Stores

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guard.ruleset.derived import PrefixSearch

# Literal patterns, compiled at import (before the analysis server forks its workers).


NO_SPEC_READER = Spec("", subcommand=False)
NO_STORES = Stores(())


@dataclass(frozen=True, slots=True)
class World:
    """The configuration facts depend on."""

    trees: tuple[str, ...]
    env: Mapping[str, str]
    forges: tuple[Forge, ...]
    token_vars: frozenset[str]
    token_prefixes: PrefixSearch | None  # config token_prefixes, each letter also as a [class] holding it
    token_words: re.Pattern[str] | None  # config token_words: what a search of the environment hunts
    programs: Mapping[str, Spec]
    named: frozenset[str]  # programs some rule names
    read_all: bool = False  # a rule naming no program wants args or flags: read every program's
    stores: Stores = NO_STORES  # credential stores (config credential_stores)

    @property
    def home(self) -> str:
        return self.env.get("HOME") or "/root"


def where(path: str | None, world: World) -> str | None:
    """``"tree"``, ``"outside"`` or ``"unknown"`` for an absolute path (None: no path)."""
    if path is None:
        return None
    if path.startswith(UNKNOWN):
        return "unknown"
    return _where_in(path, world.trees)


@lru_cache(maxsize=4096)
def _where_in(path: str, trees: tuple[str, ...]) -> str:
    """``where`` for a path that may be in the trees. Cached per process like ``paths.real``,
    which it rests on: a path's place does not change during a run, and nearly every
    invocation asks it of a cwd that earlier ones asked already."""
    hit = paths.in_trees(path, trees)
    return "tree" if hit else ("outside" if hit is False else "unknown")


def _combine(*places: str | None) -> str:
    vals = [p for p in places if p is not None]
    if "tree" in vals:
        return "tree"
    if "unknown" in vals:
        return "unknown"
    return "outside"


# ----------------------------------------------------------------------------- git

def git_repository(inv: Invocation, r: Reading, world: World, spec: Spec = NO_SPEC_READER) -> dict:
    """Where a git invocation's repository lies (cwd, ``-C``, ``--git-dir``, ``--work-tree``,
    ``GIT_DIR``), and what a clone, init, bundle, linked work tree or config write writes."""
    home = world.home
    base = inv.cwd
    gitdir = worktree = None
    configs: list[str] = []
    for opt, val in r.global_options:
        if opt == "-C":
            base = paths.real(paths.join(base, val, home)) if val else base
        elif opt == "-c":
            configs.append(val)
        elif opt == "--git-dir":
            gitdir = val
        elif opt == "--work-tree":
            worktree = val
    sub = r.subcommand
    pos = r.args
    flags = r.flags
    env = dict(world.env)
    env.update({k: v for k, v in inv.env.items() if v is not None})
    gitdir = gitdir if gitdir is not None else (inv.env.get("GIT_DIR") if "GIT_DIR" in inv.env else env.get("GIT_DIR"))
    worktree = worktree if worktree is not None else env.get("GIT_WORK_TREE")
    gd = paths.real(paths.join(base, gitdir, home)) if gitdir else None
    wt = paths.real(paths.join(base, worktree, home)) if worktree else None
    if wt is not None:
        repo = _combine(where(wt, world), where(gd, world))
        repo_path = wt
    elif gd is not None:
        repo = _combine(where(gd, world), where(base, world))
        repo_path = base
    else:
        repo = where(base, world) or "unknown"
        repo_path = base
    facts: dict = {"repo": repo, "repo_path": repo_path, "configs": configs}
    dest = None
    if sub == "clone":
        if len(pos) >= 2:
            dest = pos[1]
        elif pos:
            url = pos[0].rstrip("/")
            name = url.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
            dest = name[:-4] if name.endswith(".git") else name
            if "--bare" in flags or "--mirror" in flags:
                dest = name if name.endswith(".git") else name + ".git"
        if pos:
            facts["url"] = pos[0]
    elif sub == "init":
        dest = pos[0] if pos else "."
    elif sub == "bundle" and pos[:1] == ("create",) and len(pos) > 1:
        dest = pos[1]
    elif sub == "worktree" and pos[:1] == ("add",):
        dest = pos[1] if len(pos) > 1 else None  # a linked work tree holds a .git file
    reads_only = spec.per_sub(spec.sub_reads_only, sub)
    if reads_only is not None:
        options, actions, unless = reads_only
        facts["config_read"] = bool(flags & options) or (pos[:1] and pos[0] in actions) or (
            len(pos) == 1 and not flags & unless)
    if sub == "config":
        if "--global" in flags:
            facts["config_scope"] = "global"
            xdg = env.get("XDG_CONFIG_HOME")
            owner = env.get("HOME") or home  # HOME=/workspace/app git config --global: the file lands there
            dest = paths.join("/", owner) + "/.gitconfig" if not xdg else xdg + "/git/config"
        elif "--system" in flags:
            facts["config_scope"] = "system"
            dest = "/etc/gitconfig"
        elif "--file" in flags or "-f" in flags:
            facts["config_scope"] = "file"
            for opt, val in r.options:
                if opt in ("--file", "-f"):
                    dest = val
        else:
            facts["config_scope"] = "local"
    if sub in ("clone", "init"):
        for opt, sep in r.options:  # --separate-git-dir puts the repository itself there
            if opt == "--separate-git-dir" and sep and where(paths.real(paths.join(base, sep, home)), world) == "tree":
                dest = sep
    if dest is not None:
        full = paths.real(paths.join(base, dest, home))
        facts["dest"] = where(full, world)
        facts["dest_path"] = full
    return facts


# ----------------------------------------------------------------------------- forge CLIs


def cli_clone(inv: Invocation, r: Reading, world: World) -> dict:
    """``gh repo clone REPO [DIR]``: DIR, or the repository's name, is written."""
    ops = r.args[1:]
    if not ops:
        return {}
    name = ops[0].rstrip("/").rsplit("/", 1)[-1]
    dest = ops[1] if len(ops) > 1 else name
    full = paths.real(paths.join(inv.cwd, dest, world.home))
    return {"dest": where(full, world), "dest_path": full}


def cli_api(inv: Invocation, r: Reading, spec: Spec) -> dict:
    """``gh api ENDPOINT`` and its kind: the method, the endpoint and whether the call writes,
    read with the option names of the spec's ``api`` block."""
    args = inv.argv[r.sub_index + 1 :]
    method_opts = spec.api_option("method")
    field_opts = spec.api_option("fields")
    body_opts = spec.api_option("body_files")
    skip = spec.api_option("with_value") | spec.with_value
    method = None
    fields = False
    endpoint = None
    queries: list[str] = []
    opaque_body = False  # --input FILE, -F query=@file: a body guard cannot read
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        name, eq, val = a.partition("=")
        short = a[:2] if len(a) > 2 and not a.startswith("--") else ""
        if a in method_opts:
            method = nxt.upper()
            i += 2
            continue
        if eq and name in method_opts:
            method = val.upper()
        elif short in method_opts:
            method = a[2:].upper()
        elif a in field_opts or a in body_opts or short in field_opts or (eq and (name in field_opts or name in body_opts)):
            fields = True
            if a in field_opts or a in body_opts:
                value, i = nxt, i + 2
            else:
                value, i = (val if a.startswith("--") else a[2:]), i + 1
            if (name if a.startswith("--") else a) in body_opts:
                opaque_body = True
            elif value.startswith("query="):
                q = value[6:]
                opaque_body = opaque_body or q.startswith("@")
                queries.append(q)
            continue
        elif a in skip:
            i += 2
            continue
        elif not a.startswith("-") and endpoint is None:
            endpoint = a
        i += 1
    endpoint = endpoint or ""
    graphql = endpoint.strip("/") == "graphql"
    if method is None:
        method = "POST" if fields else "GET"
    write = method not in ("GET", "HEAD")
    if graphql:
        # a GraphQL body is a write when it holds a mutation, or when guard cannot read it
        write = opaque_body or any("mutation" in q or UNKNOWN in q for q in queries)
    forge = str(spec.api_option("forge", ""))
    if graphql and spec.api_option("graphql_path", None):
        path = str(spec.api_option("graphql_path"))
    elif "://" in endpoint or endpoint.startswith("/"):
        path = "/" + endpoint.lstrip("/")
    else:
        path = str(spec.api_option("path_prefix", "/")) + endpoint.lstrip("/")
    return {"http_write": write, "http_method": method, "forge": forge, "github": forge == "github",
            "endpoint": endpoint, "http_path": path, "graphql": graphql}


# ----------------------------------------------------------------------------- HTTP clients


def forge_of(url: str, world: World) -> tuple[str, str]:
    """(the forge the URL is on, from the config's ``forges``, or ""; the URL's path)."""
    from urllib.parse import urlsplit  # only for HTTP clients: keeps ~2 ms off other commands

    if "://" not in url:
        url = "https://" + url
    try:
        parts = urlsplit(url.replace(UNKNOWN, "x"))
        host = (parts.hostname or "").lower()
        path = parts.path or "/"
    except ValueError:
        return "", ""
    for f in world.forges:
        for h in f.hosts:
            if h.startswith("*.") and (host.endswith(h[1:]) or host == h[2:]):
                return f.name, path
            if host == h:
                return f.name, path
    for f in world.forges:
        for p in f.api_paths:
            if path.startswith(p) if p.endswith("/") else path.rstrip("/") == p:
                return f.name, path
    return "", path


def http_facts(inv: Invocation, spec: Spec, world: World) -> dict:
    """What an HTTP call sends, and to which forge: an inline call's record (``http-inline``), or
    the client's argv read with its catalogue entry's ``http:`` grammar."""
    if spec.meaning == "http-inline":
        h = inv.facts.get("http", {})
        raw = {"http_method": (h.get("method") or "GET").upper(), "urls": [h.get("url") or ""], "body": h.get("body") or ""}
    else:
        req = cat.request(inv.program, inv.argv[1:], spec.http) if spec.http else cat.Request("GET", (), "")
        raw = {"http_method": req.method, "urls": list(req.urls), "body": req.body}
    forge = ""
    gpath = ""
    url = raw["urls"][0] if raw["urls"] else ""
    for u in raw["urls"]:
        hit, p = forge_of(u, world)
        if hit:
            forge, gpath, url = hit, p, u
            break
    method = raw["http_method"]
    body = raw["body"] or ""
    graphql = gpath.rstrip("/").endswith("graphql")
    write = method not in ("GET", "HEAD", "OPTIONS")
    if graphql and method == "POST":
        write = ("mutation" in body) or (UNKNOWN in body) or body.startswith("@")
    oauth = bool(forge) and any(gpath.startswith(t) for f in world.forges if f.name == forge for t in f.token_paths)
    return {"http_method": method, "forge": forge, "github": forge == "github",
            "http_write": write and bool(forge) and not oauth, "url": url, "http_path": gpath, "graphql": graphql,
            "oauth": oauth}


# ----------------------------------------------------------------------------- tokens



def _entry(program: str, world: World) -> Spec | None:
    """``program``'s catalogue entry (its spec), by its name as run."""
    return world.programs.get(program)


def _searches(program: str, world: World) -> bool:
    spec = world.programs.get(program.rsplit("/", 1)[-1])
    return spec is not None and spec.searches is not None


def _searching_sub(argv: tuple[str, ...], spec: Spec) -> bool:
    """The invocation runs one of the spec's searching subcommands (git grep)."""
    return read(argv, spec).subcommand in spec.sub_searches


def token_facts(inv: Invocation, world: World) -> dict:
    facts: dict = {}
    if inv.var_refs:
        refs = set(inv.var_refs)
        if inv.kind == ENV_READ:
            facts["token_ref"] = bool(refs & world.token_vars) or "*" in refs
        elif refs & world.token_vars:
            facts["token_ref"] = True
    elif inv.kind == ENV_READ:
        facts["token_ref"] = False
    prog = inv.program
    args = inv.argv[1:]
    spec = _entry(prog, world)
    dump = spec.dumps_environment if spec is not None else None
    if dump is not None and dump.prints_operands and any(a in world.token_vars for a in args):
        facts["token_ref"] = True
    if dump is not None and inv.pipe_to and cat.dumps_environment(args, dump):
        for nxt in inv.pipe_to:
            if nxt and _searches(nxt[0], world) and world.token_words is not None and any(
                    world.token_words.search(a) for a in nxt[1:]):
                facts["env_search"] = True
    if (spec is None or spec.reads_operands) and _names_a_store(inv, world):
        facts["cred_store"] = True
    search = spec.searches if spec is not None else None
    if search is not None or (spec is not None and spec.sub_searches and _searching_sub(inv.argv, spec)):
        # one search over all the words first: a match inside one word is a match in them joined,
        # and most searches (grep -rn def src) have none
        prefixes = world.token_prefixes
        joined = "\n".join(args)
        if prefixes is not None and prefixes.search(joined) and any(prefixes.search(a) for a in args):
            facts["token_grep"] = True
        elif "oauth_token" in joined and any(  # no newline in it: in the joined words iff in one
                paths.join(inv.cwd, a, world.home).rstrip("/") in (world.home.rstrip("/"), world.home.rstrip("/") + "/.config")
                for a in (cat.searched_files(args, search) if search is not None else args) if not a.startswith("-")):
            facts["token_grep"] = True  # gh keeps its token as oauth_token in ~/.config/gh/hosts.yml
    finds = spec.finds if spec is not None else None
    if finds is not None:  # find -name .netrc: looking for a credential store by its name
        from fnmatch import fnmatchcase

        for pat, whole in cat.name_tests(args, finds):
            if world.stores.spelled(pat) and any(fnmatchcase(t, pat if whole else "*/" + pat)
                                                 for t in world.stores.samples(world.home)):
                facts["cred_store"] = True
    return facts


def _names_a_store(inv: Invocation, world: World) -> bool:
    """Whether an operand or input redirection of ``inv`` names a credential store."""
    operands = (*inv.argv[1:], *inv.reads) if inv.reads else inv.argv[1:]
    # One hint pass over all operands first: no hint literal contains a newline, so the
    # joined text holds a hint exactly when some operand does (most hold none).
    if world.stores.hint("\n".join(operands)):
        for a in operands:  # a loop, not any() over a generator: a hint is common (a glob, "gh")
            if _is_cred_store(a, inv.cwd, world):
                return True
    return False


def _is_cred_store(arg: str, cwd: str, world: World) -> bool:
    """Does ``arg`` (an operand, or a redirect target) name a credential store? Relative paths
    count from the cwd (``cd /proc/1 && cat environ``), ``..`` is folded, and a glob counts when
    it could match one (``cat /pr*/1/environ``, ``cat ~/.n?trc``)."""
    if not world.stores.hint(arg):  # cheap gate: most operands name nothing of the kind
        return False
    value = arg.split("=", 1)[-1] if arg.startswith("-") else arg
    if not value or UNKNOWN in value.split("/")[0]:
        return False
    home = world.home
    full = paths.join(cwd, value.replace(UNKNOWN, "x"), home) if not value.startswith(("-", "http")) else value
    for cand in (value, full):
        c = paths.expand_tilde(cand, home).rstrip("/")
        if world.stores.names(c):
            return True
    cut = -1  # where the first glob character is (a loop: min() over a generator cost more)
    for ch in "*?[":
        i = full.find(ch)
        if i >= 0 and (cut < 0 or i < cut):
            cut = i
    if cut >= 0:
        head = full[:cut]
        targets = [t for t in world.stores.samples(home) if t.startswith(head)]
        if targets:  # only a glob whose literal start leads to a store is worth matching
            from fnmatch import fnmatchcase

            return any(fnmatchcase(t, full) for t in targets)
    return False


# ----------------------------------------------------------------------------- files

# guard's own record of an environment read by inline code: token_facts looks at it by name.
# facts_for takes its short way only for the programs without a catalogue entry besides it.
_OWN_FACTS = frozenset({KIND_NAMES[ENV_READ]})


def file_facts(inv: Invocation, world: World) -> dict:
    prog = inv.program
    spec = _entry(prog, world)
    copies = spec.copies if spec is not None else None
    writes = spec.writes if spec is not None else None
    checks_out = spec.checks_out if spec is not None else None
    if not inv.writes and copies is None and writes is None and checks_out is None:
        return {}  # writes nothing, copies nothing, installs nothing: most invocations
    facts: dict = {}
    home = world.home
    args = inv.argv[1:]
    targets = list(inv.writes)
    sources, dest = cat.copy_operands(args, copies) if copies is not None else ([], None)
    if writes is not None:
        targets += cat.written_files(args, writes)
    if dest is not None:
        targets.append(dest)
    for t in targets:
        if copies is not None and cat.is_remote(t, copies):
            continue  # host:path is on another machine
        full = paths.join(inv.cwd, t, home)
        if paths.has_component(full.replace(UNKNOWN, "x"), ".git") and where(full, world) == "tree":
            facts["dotgit_write"] = True
            facts["dest_path"] = full
    if copies is not None and dest is not None and sources and not cat.is_remote(dest, copies):
        dest_dir = paths.real(paths.join(inv.cwd, dest, home))
        if where(dest_dir, world) == "tree":
            excluded = cat.excludes_vcs(args, copies)
            for src in sources:
                if src.rstrip("/").rsplit("/", 1)[-1] == ".git":
                    facts["dotgit_write"] = True  # cp -r /tmp/r/.git . lands a .git in the tree
                    facts["dest_path"] = dest_dir.rstrip("/") + "/.git"
                    continue
                s = paths.join(inv.cwd, src, home)
                if UNKNOWN in s or any(c in s for c in "*?["):
                    continue
                gone = {r.rstrip("/") for r in inv.removed}
                made = any((s == c or c.startswith(s.rstrip("/") + "/")) and c not in gone and c + "/.git" not in gone
                           for c in inv.cloned)
                # a link is not a copy: the tree holds a link, the repository stays where it is
                # (and ln cannot hard-link a folder); a link named .git is dotgit_write above
                if not excluded and prog != "ln" and (made or _holds_repo(s, inv.removed)):
                    facts["repo_copy"] = True
                    facts["dest_path"] = dest_dir
    got = cat.checked_out(args, checks_out) if checks_out is not None else None
    if got is not None:  # pip install -e git+URL checks the repository out, .git and all
        full = paths.real(paths.join(inv.cwd, got[1], home))
        facts["editable_vcs"] = where(full, world)
        facts["url"] = got[0]
    return facts


def _holds_repo(path: str, removed: tuple[str, ...] = (), depth: int = 3) -> bool:
    """Whether copying ``path`` copies a repository: a ``.git`` in it, up to ``depth`` levels
    down, that the command has not deleted first (``rm -rf /tmp/x/.git && cp -r /tmp/x .``)."""
    import os

    gone = {r.rstrip("/") for r in removed}

    def deleted(p: str) -> bool:
        return any(p == g or p.startswith(g + "/") for g in gone)

    if path.rstrip("/").endswith("/.git"):
        return not deleted(path.rstrip("/"))
    budget = [2000]

    def walk(d: str, level: int) -> bool:
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except (OSError, ValueError):
            return False
        for e in entries:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if e.name == ".git" and not deleted(e.path):
                return True
        if level >= depth:
            return False
        return any(e.is_dir(follow_symlinks=False) and not deleted(e.path) and walk(e.path, level + 1)
                   for e in entries if e.name not in ("node_modules", ".venv"))

    return not deleted(path.rstrip("/")) and walk(path, 0)


# ----------------------------------------------------------------------------- operands

_REV_PATH = re.compile(r"^[^:\s]*:(?!//)(.+)$")  # HEAD:src/a.py, v1.2:README (not a URL)


@lru_cache(maxsize=64)
def _compiled_like(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _exists(base: str, operand: str, home: str) -> bool:
    if UNKNOWN in operand or UNKNOWN in base:
        return False
    try:
        return os.path.lexists(paths.join(base, operand, home))
    except (OSError, ValueError):
        return False


def operand_facts(r: Reading, spec: Spec, base: str, world: World) -> dict:
    """What a subcommand's operands and option values name, as its spec says: ``files`` (the
    operands naming files, as written), ``rev_path`` (one is REV:path), ``message``,
    ``message_file``, ``branch`` (an option's value, the first operand, or a push's refspec
    destination), ``tag_push`` and ``ref_delete`` (a refspec ``:NAME``). Only the values the command names are facts."""
    sub = r.subcommand
    out: dict = {}
    args = r.args
    mode = spec.per_sub(spec.sub_files, sub)
    files: list[str] = []
    if mode is not None:
        like = _compiled_like(spec.file_like) if spec.file_like else None
        for k, a in enumerate(args):
            if mode == "all" or (r.dashdash >= 0 and k >= r.dashdash):
                files.append(a)
                continue
            m = _REV_PATH.match(a)
            if m and not is_url(a):
                out["rev_path"] = True
                files.append(m.group(1))
            elif _exists(base, a, world.home) or (like is not None and like.search(a)):
                files.append(a)
        if files:
            out["files"] = files
    for fact, opts in spec.per_sub(spec.sub_values, sub, ()):
        vals = [v for o, v in r.options if o in opts]
        if vals:
            out[fact] = "\n\n".join(vals) if fact == "message" else vals[-1]
    fact = spec.per_sub(spec.sub_operand_value, sub)
    if fact and fact not in out and args and args[0] not in files and (r.dashdash < 0 or r.dashdash > 0):
        out[fact] = args[0]
    skip = spec.per_sub(spec.sub_refspecs, sub)
    if skip is not None:
        tag = _compiled_like(spec.tag_like) if spec.tag_like else None
        if "--tags" in r.flags or "--follow-tags" in r.flags:
            out["tag_push"] = True
        for ref in args[skip:]:
            src, colon, dst = ref.lstrip("+").partition(":")
            if colon and not src:  # :NAME deletes NAME on the remote
                out["ref_delete"] = True
                continue
            dst = dst if colon else src
            if dst.startswith("refs/tags/") or (tag is not None and tag.search(dst)):
                out["tag_push"] = True
            elif dst and dst != "HEAD" and "branch" not in out:
                out["branch"] = dst.removeprefix("refs/heads/")
    return out


# ----------------------------------------------------------------------------- all

def quiet_program(prog: str, world: World) -> bool:
    """Whether ``facts_for`` gives an invocation of ``prog`` that reads no variable and writes
    nothing only ``quiet_facts``: the program has no spec (by its name or as a dashed one),
    token_facts and file_facts look at other programs by name, and no rule names it or reads
    every program. It depends on the name and the rule set only."""
    spec = spec_for(prog, world.programs)[0]
    return (spec is None or spec.quiet) and prog not in _OWN_FACTS and not world.read_all and prog not in world.named


def quiet_facts(inv: Invocation, world: World) -> dict:
    """The facts of an invocation of a ``quiet_program`` that reads no variable and writes
    nothing (most of them: ls, cat, pytest): of every fact ``facts_for`` can give, only the
    credential-store operands can hold."""
    prog = inv.program
    spec = world.programs.get(prog)
    if (spec is None or spec.reads_operands) and _names_a_store(inv, world):
        return {"program": prog, "cred_store": True}
    return {"program": prog}


def _drives_git(spec: Spec, facts: dict) -> bool:
    """The subcommand runs git in the cwd's repository (spec ``drives_git``: gh pr checkout)."""
    sub, action = facts.get("subcommand"), facts.get("action")
    return any(s == sub and (a is None or a == action) for s, a in spec.drives_git)


def facts_for(inv: Invocation, world: World) -> dict:
    """Every fact the rules may match on, for one invocation: what its program spec reads from
    the argv, what the spec's readers give it a meaning, and the facts of any program."""
    prog = inv.program
    spec = world.programs.get(prog)
    if spec is None and "-" in prog:
        spec, prog = spec_for(prog, world.programs)
    if ((spec is None or spec.quiet) and prog not in _OWN_FACTS and not inv.var_refs and not inv.writes and not world.read_all
            and prog not in world.named):
        return quiet_facts(inv, world)  # ``quiet_program``'s test, with the spec already looked up
    facts: dict = {"program": prog}
    if spec is not None and not spec.quiet:
        read_as = inv
        if prog != inv.program:  # git-push ARGS reads as git push ARGS
            read_as = Invocation(prog, (prog, inv.program[len(prog) + 1 :], *inv.argv[1:]), inv.cwd, inv.env)
        r = read(read_as.argv, spec)
        facts.update(reader_facts(r, spec))
        if spec.meaning == "git-repository" or (spec.drives_git and _drives_git(spec, facts)):
            facts.update(git_repository(read_as, r, world, spec))
        elif spec.meaning is not None or spec.http is not None:
            facts.update(http_facts(read_as, spec, world))
        if spec.api is not None and r.subcommand == spec.api_option("subcommand"):
            facts.update(cli_api(read_as, r, spec))
        if spec.clone is not None and (r.subcommand, facts.get("action")) == spec.clone:
            facts.update(cli_clone(read_as, r, world))
        if spec.sub_files or spec.sub_values or spec.sub_operand_value or spec.sub_refspecs:
            facts.update(operand_facts(r, spec, facts.get("repo_path") or inv.cwd, world))
            if facts.get("message_file") == "-" and inv.stdin:  # -F -: the text fed on stdin (a heredoc)
                facts["message"] = inv.stdin
                del facts["message_file"]
    elif world.read_all or prog in world.named:  # a rule names it: its operands and options, read without a spec
        facts.update(reader_facts(read(inv.argv, NO_SPEC_READER), None))
    facts.update(token_facts(inv, world))
    facts.update(file_facts(inv, world))
    return facts
