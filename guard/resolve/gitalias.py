"""git's own aliases: ``git -c alias.p=push p``, ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``,
``git config alias.p push`` earlier in the command, and the user's git config files."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from functools import lru_cache

import guard.resolve.files as files

# Literal patterns, compiled at import (before the analysis server forks its workers).
_CONFIG_SECTION = re.compile(r"^\[\s*([^\]\s\"]+)")


GLOBAL_WITH_ARG = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"})


# git runs a built-in command of the name first and a ``git-NAME`` program next, and only then
# looks for an alias ("aliases that hide existing Git commands are ignored", git-config(1);
# ``run_argv`` in git.c): an alias named after one of these never runs. The names are git 2.39's
# ``git --list-cmds=builtins`` less those a git in use may lack, where an alias of the name would
# run: the ones added after git 2.25 (bugreport, maintenance, for-each-repo, hook, diagnose …),
# the ones later gits dropped (bisect--helper, env--helper) or drop in builds for Git 3.0
# (whatchanged, pack-redundant), and internal ``--`` helpers. A name left out is looked up as an
# alias, as every name was before. Built-in names are matched as typed: ``git STATUS`` is no
# built-in, and git looks for an alias of it.
BUILTINS = frozenset("""
    add am annotate apply archive blame branch bundle cat-file check-attr check-ignore check-mailmap
    check-ref-format checkout checkout-index cherry cherry-pick clean clone column commit commit-graph
    commit-tree config count-objects credential credential-cache credential-store describe diff
    diff-files diff-index diff-tree difftool fast-export fast-import fetch fetch-pack fmt-merge-msg
    for-each-ref format-patch fsck fsck-objects gc get-tar-commit-id grep hash-object help index-pack
    init init-db interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit merge merge-base
    merge-file merge-index merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs
    merge-subtree merge-tree mktag mktree multi-pack-index mv name-rev notes pack-objects pack-refs
    patch-id prune prune-packed pull push range-diff read-tree rebase receive-pack reflog remote
    remote-ext remote-fd repack replace rerere reset restore rev-list rev-parse revert rm send-pack
    shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace switch
    symbolic-ref tag unpack-file unpack-objects update-index update-ref update-server-info
    upload-archive upload-pack var verify-commit verify-pack verify-tag version worktree write-tree
""".split())


def split_global(argv: tuple[str, ...]) -> tuple[list[str], int]:
    """The ``-c`` values among git's global options, and the index of the subcommand."""
    configs: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-c" and i + 1 < len(argv):
            configs.append(argv[i + 1])
            i += 2
        elif a in GLOBAL_WITH_ARG:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    return configs, i


def _from_pairs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        key, _, val = p.partition("=")
        if key.lower().startswith("alias."):
            out[key[6:].lower()] = val  # a variable's name is not case-sensitive: the last one wins
    return out


def env_aliases(env: Mapping[str, str | None] | ShellEnv) -> dict[str, str]:
    out: dict[str, str] = {}
    params = env.get("GIT_CONFIG_PARAMETERS")
    if params:
        try:
            out.update(_from_pairs(shlex.split(params)))
        except ValueError:
            pass
    count = env.get("GIT_CONFIG_COUNT")
    if count and count.isdigit():
        for n in range(min(int(count), 100)):
            k, v = env.get(f"GIT_CONFIG_KEY_{n}"), env.get(f"GIT_CONFIG_VALUE_{n}")
            if k and v is not None and k.lower().startswith("alias."):
                out[k[6:].lower()] = v
    return out


@lru_cache(maxsize=16)
def _file_aliases(path: str, stamp: tuple[int, int]) -> dict[str, str]:
    text = files.read_text(path, 256 * 1024)[0]
    if text is None:
        return {}
    out: dict[str, str] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = _CONFIG_SECTION.match(line)
        if m:
            section = m.group(1).lower()
            continue
        if section == "alias" and "=" in line:
            k, v = line.split("=", 1)
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] == '"':
                v = v[1:-1].replace('\\"', '"')
            out[k.strip().lower()] = v
    return out


@lru_cache(maxsize=16)
def _config_files(home: str, xdg: str | None) -> tuple[str, str]:
    """The user's git config files, in the order git reads them (one home per run)."""
    return os.path.join(xdg or os.path.join(home, ".config"), "git", "config"), os.path.join(home, ".gitconfig")


def file_aliases(env: Mapping[str, str | None] | ShellEnv) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in _config_files(env.get("HOME") or "/root", env.get("XDG_CONFIG_HOME")):
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # ValueError: a NUL in HOME
            continue
        out.update(_file_aliases(path, (st.st_size, st.st_mtime_ns)))
    return out


class ShellEnv:
    """The variables a program sees, as ``lookup`` reads them: its prefix assignments
    (``first``) over the shell's string variables (``vars``), asked by name with ``get``.
    Reading the few names git's aliases depend on this way costs a lookup each, where the
    merged dict it stands for was a copy of every variable per git invocation."""

    __slots__ = ("first", "vars")

    def __init__(self, first: Mapping[str, str | None], vars: Mapping[str, object]) -> None:
        self.first, self.vars = first, vars

    def get(self, key: str, default: str | None = None) -> str | None:
        if key in self.first:
            return self.first[key]
        value = self.vars.get(key)
        return value if isinstance(value, str) else default


def lookup(argv: tuple[str, ...], env: Mapping[str, str | None] | ShellEnv, defined: Mapping[str, str]) -> tuple[str, str, int] | None:
    """(alias name, its value, subcommand index) when ``argv``'s subcommand is a git alias."""
    configs, i = split_global(argv)
    if i >= len(argv):
        return None
    sub = argv[i]
    if sub in BUILTINS:
        return None  # git status, git log …: nothing to look up, no config file to read
    name = sub.lower()  # ``git PU`` runs ``alias.pu``, as git reads variable names
    for source in (_from_pairs(configs), env_aliases(env), defined, file_aliases(env)):
        if name in source:
            return name, source[name], i
    return None


def defined_by(argv: tuple[str, ...]) -> tuple[str, str] | None:
    """``git config [--global] alias.p push`` defines an alias for the rest of the command."""
    _, i = split_global(argv)
    if i >= len(argv) or argv[i] != "config":
        return None
    rest = [a for a in argv[i + 1 :] if not a.startswith("-")]
    if len(rest) >= 2 and rest[0].lower().startswith("alias."):
        return rest[0][6:].lower(), " ".join(rest[1:])
    return None
