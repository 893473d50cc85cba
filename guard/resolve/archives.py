"""Programs that pack files into an archive or unpack one, read from a program spec's
``archive:`` (rules/programs/archives.yaml): which mode a command line is in, the archive file,
the folder it reads from or writes to, and the files it names.

The walk remembers an archive the command makes from known folders (``Effects.archives``); an
archive unpacked later in the same command lands those folders' contents where it is unpacked,
which is judged as the copy it is. Nothing here runs a program; a reading only reads argv.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from guard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


@dataclass(frozen=True, slots=True)
class Reading:
    """One archiver command line: ``mode`` is ``create``, ``extract`` or "" (list, test, help);
    ``archive`` the archive file as written ("-": standard input or output); ``folder`` the
    folder named to read from (create) or write into (extract), "" for the cwd; ``names`` the
    files named (what is packed, or the members to unpack); ``recursive`` whether a folder named
    brings what is under it; ``leaves_vcs`` whether a ``.git`` under a folder is left out."""

    mode: str
    archive: str
    folder: str
    names: tuple[str, ...]
    recursive: bool
    leaves_vcs: bool


def _opts(spec: Mapping[str, Any], key: str) -> frozenset[str]:
    return frozenset(str(o) for o in spec.get(key) or ())


def names_git_dir(pattern: str) -> bool:
    """Whether an exclude pattern leaves out a repository's ``.git`` folder: its last component,
    after any ``/*`` or ``/**`` for what is inside, matches ``.git`` (``.git``, ``*/.git``,
    ``proj/.git/*``)."""
    p = pattern.strip("'\"").rstrip("/")
    while p.endswith(("/*", "/**")):
        p = p.rsplit("/", 1)[0]
    last = p.rsplit("/", 1)[-1]
    return bool(last) and fnmatchcase(".git", last)


def _options(word: str, takes: frozenset[str]) -> list[tuple[str, str | None]]:
    """The options one word gives, each with the value attached to it (None: the next word is
    its value, if it takes one): ``--file=F``, a whole word (``-tt``), or a cluster of letters
    where the first that takes a value takes the rest (``-czf``, ``-C/tmp``)."""
    if word.startswith("--"):
        name, eq, val = word.partition("=")
        return [(name, val if eq else None)]
    if word in takes:
        return [(word, None)]
    out: list[tuple[str, str | None]] = []
    for k, ch in enumerate(word[1:], start=1):
        out.append(("-" + ch, None))
        if "-" + ch in takes:
            out[-1] = ("-" + ch, word[k + 1 :] or None)
            break
    return out


def read(argv: tuple[str, ...], spec: Mapping[str, Any]) -> Reading:
    """How ``argv`` reads under the spec's ``archive:`` grammar (see rules/README.md)."""
    create, extract, neither = _opts(spec, "create"), _opts(spec, "extract"), _opts(spec, "neither")
    file_opt, folder_opt = _opts(spec, "file_option"), _opts(spec, "folder_option")
    exclude_opt, vcs_opt, recurse_opt = (
        _opts(spec, "exclude_option"),
        _opts(spec, "leaves_vcs"),
        _opts(spec, "recursive"),
    )
    takes = _opts(spec, "with_value") | file_opt | folder_opt | exclude_opt
    mode = str(spec.get("mode") or "")
    archive = folder = ""
    names: list[str] = []
    recursive, leaves = not recurse_opt, False
    letters_first = bool(spec.get("old_style"))
    values: list[str] = []  # options seen whose value is still to come (an old-style cluster: tar czf F)

    def took(opt: str, value: str) -> None:
        nonlocal archive, folder, leaves
        if opt in file_opt:
            archive = value
        elif opt in folder_opt:
            folder = value
        elif opt in exclude_opt and names_git_dir(value):
            leaves = True

    def flag(opt: str) -> None:
        nonlocal mode, recursive, leaves
        if opt in create:
            mode = "create"
        elif opt in extract:
            mode = "extract"
        if opt in neither:
            mode = "none"
        if opt in recurse_opt:
            recursive = True
        if opt in vcs_opt:
            leaves = True

    i, dashdash = 1, False
    while i < len(argv):
        a = argv[i]
        i += 1
        if values and not (a.startswith("-") and not dashdash):
            took(values.pop(0), a)
            continue
        if dashdash or a == "-" or not a.startswith("-"):
            if letters_first and i == 2 and a[:1].isalpha() and a.isalnum():
                for ch in a:  # tar czf ARCHIVE …: the first word is a cluster without its dash
                    flag("-" + ch)
                    if "-" + ch in takes:
                        values.append("-" + ch)
                continue
            names.append(a)
            continue
        if a == "--":
            dashdash = True
            continue
        for opt, attached in _options(a, takes):
            flag(opt)
            if opt in takes:
                if attached is not None:
                    took(opt, attached)
                elif i < len(argv):
                    took(opt, argv[i])
                    i += 1
    if not archive and file_opt:
        archive = "-"  # tar without -f: the archive is standard input or output
    elif not archive and names:
        archive, names = names[0], names[1:]
    return Reading("" if mode == "none" else mode, archive, folder, tuple(names), recursive, leaves)
