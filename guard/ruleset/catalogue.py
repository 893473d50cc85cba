"""The program catalogue's argv grammars: what a program searches, copies, writes or sends, as its
entry in ``rules/programs/`` says (``searches``, ``dumps_environment``, ``copies``, ``writes``,
``http``, ``reads_operands``). Pure readers from argv to the words that matter; where those words
lie and what they mean for the rules (the tree, a forge, a credential store) is the policy's.
The same readers check each entry's examples when the rules load (``catalogue_problems``).
"""

from __future__ import annotations

import re

from guard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from guard.ruleset.read import Diagnostic, Doc


def _fs(v: Any) -> frozenset[str]:
    return frozenset(str(x) for x in v or ())


@dataclass(frozen=True, slots=True)
class Grammar:
    """How a program's options take values: ``with_value`` take the next word (or follow ``=``,
    or are attached to a short option), ``two_values`` take the next two words, ``attached_value``
    take a value only when it is attached (``sed -i.bak``), ``clusters``: ``-abc`` is ``-a -b -c``;
    after one of ``ends_files`` the operands are not files."""

    with_value: frozenset[str] = frozenset()
    two_values: frozenset[str] = frozenset()
    attached_value: frozenset[str] = frozenset()
    clusters: bool = True
    ends_files: frozenset[str] = frozenset()


def grammar(d: Mapping[str, Any], *valued: str) -> Grammar:
    """The grammar a catalogue key states; the options of its ``valued`` keys take a value too
    (a body option's value is the body)."""
    return Grammar(
        _fs(d.get("with_value")).union(*(_fs(d.get(k)) for k in valued)),
        _fs(d.get("two_values")),
        _fs(d.get("attached_value")),
        d.get("clusters", True) is not False,
        _fs(d.get("ends_files")),
    )


def words(args: tuple[str, ...] | list[str], g: Grammar) -> list[tuple[str, str | None]]:
    """``args`` as (option, value) pairs, value None for an option that takes none; an operand
    comes as ("", operand). ``--`` ends the options; ``-`` alone is an operand."""
    out: list[tuple[str, str | None]] = []
    n = len(args)
    i = 0
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            out.extend(("", x) for x in args[i:])
            break
        if not a.startswith("-") or a == "-":
            out.append(("", a))
        elif a.startswith("--") or not g.clusters:
            name, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
            if eq:
                out.append((name, val))
            elif name in g.two_values:
                out.append((name, " ".join(args[i : i + 2])))
                i += 2
            elif name in g.with_value:
                out.append((name, args[i] if i < n else ""))
                i += 1
            else:
                out.append((name, None))
        else:
            for j in range(1, len(a)):
                opt = "-" + a[j]
                if opt in g.attached_value:
                    out.append((opt, a[j + 1 :]))
                    break
                if opt in g.with_value:
                    val = a[j + 1 :]
                    if not val:
                        val = args[i] if i < n else ""
                        i += 1
                    out.append((opt, val))
                    break
                out.append((opt, None))
    return out


def operands(args: tuple[str, ...] | list[str], g: Grammar) -> list[str]:
    return [v or "" for o, v in words(args, g) if o == ""]


# ----------------------------------------------------------------------------- searches


@dataclass(frozen=True, slots=True)
class Search:
    """``searches:``: the program reads its input or the files it names and prints what matches.
    The pattern (or program, or filter) is the value of one of ``pattern_options``, else the first
    operand when ``pattern_operand``; the other operands are the files it reads."""

    grammar: Grammar
    pattern_options: frozenset[str] = frozenset()
    pattern_operand: bool = True


def search(d: Mapping[str, Any]) -> Search:
    return Search(
        grammar(d, "pattern_options"),
        _fs(d.get("pattern_options")),
        d.get("pattern_operand", True) is not False,
    )


def searched_files(args: tuple[str, ...] | list[str], s: Search) -> list[str]:
    """The files a search reads (empty: its standard input)."""
    ws = words(args, s.grammar)
    pattern_given = any(o in s.pattern_options for o, _ in ws)
    files: list[str] = []
    skip = s.pattern_operand and not pattern_given
    for o, v in ws:
        if o in s.grammar.ends_files:
            break
        if o != "":
            continue
        if skip:
            skip = False
            continue
        files.append(v or "")
    return files


# ----------------------------------------------------------------------------- environment


@dataclass(frozen=True, slots=True)
class EnvDump:
    """``dumps_environment:``: when the program prints every variable. ``when``: ``bare`` (no
    word at all: set), ``options-only`` (no operand: env, export -p), ``option`` (one of
    ``options``: compgen -v). ``prints_operands``: its operands are variables whose values it prints."""

    when: str
    grammar: Grammar
    options: frozenset[str] = frozenset()
    prints_operands: bool = False


def env_dump(d: Mapping[str, Any]) -> EnvDump:
    return EnvDump(
        str(d.get("when", "options-only")), grammar(d), _fs(d.get("options")), bool(d.get("prints_operands"))
    )


def dumps_environment(args: tuple[str, ...] | list[str], e: EnvDump) -> bool:
    if e.when == "bare":
        return not args
    if e.when == "option":
        return any(o in e.options for o, _ in words(args, e.grammar))
    return not operands(args, e.grammar)


# ----------------------------------------------------------------------------- copies and writes


@dataclass(frozen=True, slots=True)
class Copy:
    """``copies:``: the program copies, moves or links its source operands to the last operand
    (or to a ``target_directory`` option's value); ``one_operand: into-cwd``: a lone source lands in
    the cwd under its own name (ln). ``remote``: ``HOST:PATH`` names another machine. The
    version-control folders stay behind with one of ``excludes_vcs``, or an ``exclude_options``
    pattern (or ``filter_options`` rule) that matches ``.git``."""

    grammar: Grammar
    target_directory: frozenset[str] = frozenset()
    into_cwd: bool = False
    remote: bool = False
    excludes_vcs: frozenset[str] = frozenset()
    exclude_options: frozenset[str] = frozenset()
    filter_options: frozenset[str] = frozenset()


def copy(d: Mapping[str, Any]) -> Copy:
    return Copy(
        grammar(d, "target_directory", "exclude_options", "filter_options"),
        _fs(d.get("target_directory")),
        d.get("one_operand") == "into-cwd",
        bool(d.get("remote")),
        _fs(d.get("excludes_vcs")),
        _fs(d.get("exclude_options")),
        _fs(d.get("filter_options")),
    )


REMOTE_RE = re.compile(r"^[\w.@-]+:(?!//)")  # HOST:PATH, USER@HOST:PATH (not a URL)


def is_remote(path: str, c: Copy) -> bool:
    return c.remote and REMOTE_RE.match(path) is not None


def copy_operands(args: tuple[str, ...] | list[str], c: Copy) -> tuple[list[str], str | None]:
    """(sources, destination) of a copy, as written."""
    ws = words(args, c.grammar)
    target = None
    for o, v in ws:
        if o in c.target_directory:
            target = v
    ops = [v or "" for o, v in ws if o == ""]
    if target is not None:
        return ops, target
    if len(ops) >= 2:
        return ops[:-1], ops[-1]
    if len(ops) == 1 and c.into_cwd:
        return ops, ops[0].rstrip("/").rsplit("/", 1)[-1] or "."
    return [], None


def names_git_dir(pattern: str) -> bool:
    """Whether an exclusion pattern matches a ``.git`` folder or everything in it (``.git``,
    ``./.git``, ``.git/``, ``.git/*``, ``*/.git``, ``/.git``, ``.g*``), not a file beside it such
    as ``.gitignore``."""
    from fnmatch import fnmatchcase

    p = pattern.strip("'\"").rstrip("/")
    if p.rstrip("/*") in (".git", "./.git", "*/.git"):
        return True
    for cand in (".git", "./.git", "proj/.git", "a/b/.git"):
        if fnmatchcase(cand, p) or fnmatchcase(cand, p.lstrip("/")):
            return True
    return False


_FILTER_EXCLUDE = re.compile(
    r"^(?:-|exclude)[,!/ps]*[ _](.+)$"
)  # rsync filter rule: "- PATTERN", "exclude,s PATTERN"


def excludes_vcs(args: tuple[str, ...] | list[str], c: Copy) -> bool:
    """Whether the copy leaves ``.git`` folders behind."""
    for o, v in words(args, c.grammar):
        if o in c.excludes_vcs:
            return True
        if v is not None and o in c.exclude_options and names_git_dir(v):
            return True
        if v is not None and o in c.filter_options:
            m = _FILTER_EXCLUDE.match(v.strip())
            if m and names_git_dir(m.group(1).strip()):
                return True
    return False


@dataclass(frozen=True, slots=True)
class Find:
    """``finds:``: a program that walks folders and tests each name (find, bfs). ``name_tests``
    test the last part of a path, ``path_tests`` the whole path, against the next word; a test that
    matches ``.git`` followed by one of ``prune`` (or after one of ``negations``) leaves it out."""

    name_tests: frozenset[str] = frozenset()
    path_tests: frozenset[str] = frozenset()
    prune: frozenset[str] = frozenset()
    negations: frozenset[str] = frozenset()

    def leaves_vcs(self, args: tuple[str, ...] | list[str]) -> bool:
        """Whether what it prints leaves ``.git`` folders out (``-name .git -prune``, ``! -path '*/.git*'``)."""
        for k, (test, pat) in enumerate(zip(args, args[1:], strict=False)):
            if test in self.name_tests | self.path_tests and names_git_dir(pat):
                if any(a in self.prune for a in args[k + 2 : k + 4]) or (
                    k > 0 and args[k - 1] in self.negations
                ):
                    return True
        return False


def find(d: Mapping[str, Any]) -> Find:
    return Find(
        _fs(d.get("name_tests")), _fs(d.get("path_tests")), _fs(d.get("prune")), _fs(d.get("negations"))
    )


def name_tests(args: tuple[str, ...] | list[str], f: Find) -> list[tuple[str, bool]]:
    """(pattern, whether it is matched against the whole path) for each name or path test."""
    return [
        (pat, test in f.path_tests)
        for test, pat in zip(args, args[1:], strict=False)
        if test in f.name_tests | f.path_tests
    ]


@dataclass(frozen=True, slots=True)
class Checkout:
    """``checks_out:``: an installer that, given one of ``editable`` with a version-control URL
    (starting with one of ``url_prefixes``) after the word ``after`` (install), checks the
    repository out, .git and all, into the value of ``folder_option`` (default ``default_folder``)."""

    after: str
    editable: frozenset[str]
    url_prefixes: tuple[str, ...]
    folder_option: frozenset[str]
    default_folder: str


def checkout(d: Mapping[str, Any]) -> Checkout:
    return Checkout(
        str(d.get("after", "install")),
        _fs(d.get("editable")),
        tuple(str(p) for p in d.get("url_prefixes") or ()),
        _fs(d.get("folder_option")),
        str(d.get("default_folder", ".")),
    )


def checked_out(args: tuple[str, ...] | list[str], c: Checkout) -> tuple[str, str] | None:
    """(the URL, the folder it is checked out into, as written) of an editable VCS install."""
    if c.after not in args:
        return None
    folder = c.default_folder
    for k, a in enumerate(args[:-1]):
        if a in c.folder_option:
            folder = args[k + 1]
    for k, a in enumerate(args[:-1]):
        if a in c.editable and args[k + 1].startswith(c.url_prefixes):
            return args[k + 1], folder
    return None


@dataclass(frozen=True, slots=True)
class Write:
    """``writes:``: the files a program writes: every operand (``operands: true``: tee, touch,
    mkdir), the value of an ``assignments`` operand (dd's ``of=FILE``)."""

    grammar: Grammar
    all_operands: bool = False
    assignments: frozenset[str] = frozenset()


def write(d: Mapping[str, Any]) -> Write:
    return Write(grammar(d), bool(d.get("operands")), _fs(d.get("assignments")))


def written_files(args: tuple[str, ...] | list[str], w: Write) -> list[str]:
    ops = operands(args, w.grammar)
    out = list(ops) if w.all_operands else []
    for a in ops:
        name, eq, val = a.partition("=")
        if eq and name in w.assignments:
            out.append(val)
    return out


# ----------------------------------------------------------------------------- HTTP clients


@dataclass(frozen=True, slots=True)
class Http:
    """``http:``: how an HTTP client's argv names the request. Options: ``method`` (its value),
    ``body`` (a request body: POST unless another method is named), ``implies`` (method → options
    that imply it: curl -T is PUT), ``query`` (the body goes in the query string: GET), ``url``
    (its value is a URL). Request items (httpie): ``method_operand`` (a first operand among
    ``methods`` is the method), ``items`` (a pattern an operand that is a body item matches),
    ``query_items`` (a substring marking a query item), ``default_scheme`` (program → scheme for a URL written without one)."""

    grammar: Grammar
    method: frozenset[str] = frozenset()
    body: frozenset[str] = frozenset()
    implies: tuple[tuple[str, frozenset[str]], ...] = ()
    query: frozenset[str] = frozenset()
    url: frozenset[str] = frozenset()
    method_operand: bool = False
    methods: frozenset[str] = frozenset()
    items: re.Pattern[str] | None = None
    query_items: str | None = None
    default_scheme: tuple[tuple[str, str], ...] = ()


def http(d: Mapping[str, Any]) -> Http:
    items = d.get("items")
    return Http(
        grammar(d, "method", "body", "url"),
        _fs(d.get("method")),
        _fs(d.get("body")),
        tuple((str(m).upper(), _fs(o)) for m, o in (d.get("implies") or {}).items()),
        _fs(d.get("query")),
        _fs(d.get("url")),
        bool(d.get("method_operand")),
        frozenset(str(m).upper() for m in d.get("methods") or ()),
        re.compile(items) if isinstance(items, str) else None,
        d.get("query_items"),
        tuple((str(k), str(v)) for k, v in (d.get("default_scheme") or {}).items()),
    )


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    urls: tuple[str, ...]
    body: str


def request(program: str, args: tuple[str, ...] | list[str], h: Http) -> Request:
    """The request an HTTP client's argv asks for: its method (explicit, implied by an option or a
    body, else GET), its URLs and the body text it names."""
    explicit = implied = None
    urls: list[str] = []
    body = ""
    data = get = False
    operand_urls: list[str] = []
    for o, v in words(args, h.grammar):
        if o == "":
            operand_urls.append(v or "")
            urls.append(v or "")
        elif o in h.method:
            explicit = (v or "").upper()
        elif o in h.body:
            data = True
            body += v or ""
        elif o in h.query:
            get = True
        elif o in h.url:
            urls.append(v or "")
        else:
            for m, opts in h.implies:
                if o in opts and implied is None:
                    implied = m
    if h.method_operand:  # METHOD URL ITEM…: the operands are the request
        url = None
        for k, a in enumerate(operand_urls):
            if k == 0 and a.upper() in h.methods:
                explicit = explicit or a.upper()
                continue
            if url is None:
                url = a
                continue
            if h.query_items and h.query_items in a:
                continue
            if h.items is not None and h.items.match(a):
                data = True
                body += a + " "
        urls = [_with_scheme(url, program, h)] if url else []
    method = explicit or implied or ("POST" if data and not get else "GET")
    return Request(method, tuple(urls), body)


def _with_scheme(url: str, program: str, h: Http) -> str:
    if url.startswith(":"):  # :8080/path and :/path are localhost
        return "http://localhost" + (url if url[1:2].isdigit() else url[1:])
    if "://" in url:
        return url
    return dict(h.default_scheme).get(program, "http") + "://" + url


# ----------------------------------------------------------------------------- examples at load


def example_facts(program: str, argv: tuple[str, ...], entry: Mapping[str, Any]) -> dict[str, Any]:
    """What the catalogue says of one command line of ``program``, by the keys of its entry."""
    args = argv[1:]
    out: dict[str, Any] = {}
    if isinstance(entry.get("searches"), dict):
        out["reads"] = searched_files(args, search(entry["searches"]))
    if isinstance(entry.get("dumps_environment"), dict):
        out["dumps"] = dumps_environment(args, env_dump(entry["dumps_environment"]))
    if isinstance(entry.get("copies"), dict):
        c = copy(entry["copies"])
        srcs, dest = copy_operands(args, c)
        out.update(sources=srcs, dest=dest, excludes_vcs=excludes_vcs(args, c))
    if isinstance(entry.get("finds"), dict):
        f = find(entry["finds"])
        out["excludes_vcs"] = f.leaves_vcs(args)
        out["tests"] = [p for p, _ in name_tests(args, f)]
    if isinstance(entry.get("checks_out"), dict):
        got = checked_out(args, checkout(entry["checks_out"]))
        out["checkout"] = None if got is None else got[1]
        out["url"] = None if got is None else got[0]
    if isinstance(entry.get("writes"), dict):
        out["writes"] = written_files(args, write(entry["writes"]))
    if isinstance(entry.get("http"), dict):
        r = request(program, args, http(entry["http"]))
        out.update(method=r.method, urls=list(r.urls), body=r.body)
    return out


CATALOGUE_KEYS = ("searches", "dumps_environment", "copies", "finds", "checks_out", "writes", "http")


def catalogue_problems(doc: Doc) -> list[Diagnostic]:
    """Each catalogue key's ``examples``, read by the readers above: every fact an example gives
    must be what the reader finds."""
    import shlex

    out: list[Diagnostic] = []
    specs = doc.data.get("programs") if isinstance(doc.data, dict) else None
    for i, spec in enumerate(specs if isinstance(specs, list) else []):
        if not isinstance(spec, dict):
            continue
        names = spec.get("program")
        name = str(names[0] if isinstance(names, list) and names else names)
        for key in CATALOGUE_KEYS:
            part = spec.get(key)
            if not isinstance(part, dict):
                continue
            try:
                example_facts(name, (name,), spec)
            except (TypeError, ValueError, re.error) as e:
                out.append(doc.diag(("programs", i, key), f"cannot be read: {e}", "bad-catalogue"))
                continue
            for k, ex in enumerate(part.get("examples") or []):
                if not isinstance(ex, dict) or not isinstance(ex.get("command"), str):
                    continue  # the schema has said so
                try:
                    argv = tuple(shlex.split(ex["command"]))
                except ValueError as e:
                    out.append(
                        doc.diag(("programs", i, key, "examples", k), f"cannot be split: {e}", "bad-example")
                    )
                    continue
                prog = argv[0] if argv else name
                got = example_facts(prog, argv, {key: part})
                for fact, want in ex.items():
                    if fact == "command" or fact not in got or got[fact] == want:
                        continue
                    out.append(
                        doc.diag(
                            ("programs", i, key, "examples", k, fact),
                            f"{ex['command']!r} gives {fact}: {got[fact]!r}, the example says {want!r}",
                            "catalogue-example",
                        )
                    )
    return out
