"""Where an interpreter's command line puts the program it runs, read from the catalogue.

A program spec's ``inline:`` (``rules/programs/interpreters.yaml``) names the dialect the
program runs and its option grammar: the options whose value is the program text
(``perl -e``), a script file (``php -f``), base64 UTF-16LE text (``pwsh -EncodedCommand``) or
something else to step over, a subcommand that runs code or a script (``go run``, ``deno
eval``), the suffixes a script operand must have (``java File.java``), and whether standard
input is the program. Pure: reading the script is the caller's business.
"""

from __future__ import annotations

import re

from guard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_VERSION = re.compile(r"\d+(?:\.\d+)*$")


@dataclass(frozen=True)
class Source:
    """Where the program is: ``code`` (its text), ``script`` (a file to read; ``label`` is what
    precedes its name in the via chain), ``stdin``, or ``module`` (``python -m``: the words after
    it, read by the caller)."""

    kind: str
    text: str
    label: str
    args: tuple[str, ...] = ()


def interpreter(name: str, table: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The ``inline:`` spec of a program basename: by its name, without ``.exe``, or without a
    version suffix when the spec says ``versioned`` (``perl5.36``, ``python3.12``, ``lua5.4``)."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith(".exe"):
        base = base[:-4]
    spec = table.get(base)
    if spec is not None:
        return spec
    if base[-1:].isdigit():
        stem = _VERSION.sub("", base)
        spec = table.get(stem)
        if spec is not None and spec.get("versioned"):
            return spec
    return None


def dialect_of(name: str, table: Mapping[str, Mapping[str, Any]]) -> str | None:
    spec = interpreter(name, table)
    return str(spec["dialect"]) if spec is not None else None


def source_of(prog: str, spec: Mapping[str, Any], argv: tuple[str, ...] | list[str]) -> Source | None:
    """Where ``argv`` (``argv[0]`` is the interpreter, named ``prog``) puts the program, or None
    when it runs none this spec knows of."""
    fold = bool(spec.get("case_insensitive"))

    def key(a: str) -> str:
        return a.lower() if fold else a

    code_opts = {key(o): o for o in spec.get("code_option", ())}
    encoded = {key(o) for o in spec.get("encoded_option", ())}
    scripts = {key(o) for o in spec.get("script_option", ())}
    values = {key(o) for o in spec.get("with_value", ())}
    modules = {key(o) for o in spec.get("module_option", ())}
    subs: Mapping[str, str] = spec.get("subcommands") or {}
    suffixes = tuple(spec.get("script_suffix", ()))
    ignored = tuple(spec.get("ignore_prefix", ()))
    clustered = bool(spec.get("clustered"))
    j, mode = 1, ""
    if subs:
        if j < len(argv) and argv[j] in subs:
            mode = subs[argv[j]]
            j += 1
        elif spec.get("subcommand_required"):
            return None
    label_sub = f"{prog} {argv[j - 1]}" if mode else prog
    done = False
    while j < len(argv):
        a = argv[j]
        k = key(a)
        if not done and a.startswith("-") and a != "-":
            if a == "--":
                done = True
                j += 1
                continue
            name, eq, val = k.partition("=")
            if k in code_opts and j + 1 < len(argv):
                return Source("code", argv[j + 1], f"{prog} {code_opts[k]}", ("-c", *argv[j + 2 :]))
            if eq and name in code_opts and name.startswith("--"):
                return Source("code", a.split("=", 1)[1], f"{prog} {code_opts[name]}", ("-c", *argv[j + 1 :]))
            for f, shown in code_opts.items():
                if len(f) == 2 and k.startswith(f) and len(a) > 2 and not a.startswith("--"):
                    return Source("code", a[2:], f"{prog} {shown}", ("-c", *argv[j + 1 :]))
            if clustered and j + 1 < len(argv) and a[1:].isalpha() and not a.startswith("--"):
                last = "-" + a[-1]
                if last in code_opts:  # perl -ne CODE: -n and -e
                    return Source("code", argv[j + 1], f"{prog} {code_opts[last]}", ("-c", *argv[j + 2 :]))
            if k in encoded and j + 1 < len(argv):
                text = _decode_utf16_base64(argv[j + 1])
                return Source("code", text, f"{prog} {a}", ()) if text is not None else None
            if k in scripts and j + 1 < len(argv):
                return Source("script", argv[j + 1], f"{label_sub} {a}", tuple(argv[j + 1 :]))
            if k in modules:
                return Source("module", "", prog, tuple(argv[j + 1 :]))
            j += 2 if k in values else 1
            continue
        if a == "-" and not done:
            return Source("stdin", "", f"{prog} stdin", ("-", *argv[j + 1 :]))
        if ignored and a.startswith(ignored):
            j += 1
            continue
        if mode == "code" or spec.get("code_operand"):
            return Source("code", a, label_sub if mode else str(spec["dialect"]), ())
        if suffixes and not a.endswith(suffixes):
            return None  # the first operand names no script of this language (a class, a package)
        return Source("script", a, label_sub, tuple(argv[j:]))
    if spec.get("stdin", True) and not mode:
        return Source("stdin", "", f"{prog} stdin", ("",))
    return None


def _decode_utf16_base64(text: str) -> str | None:
    """``pwsh -EncodedCommand``: base64 of the command in UTF-16LE."""
    import base64
    import binascii

    try:
        raw = base64.b64decode(text.strip(), validate=True)
        return raw.decode("utf-16-le")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
