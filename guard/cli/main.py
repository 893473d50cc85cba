"""``guard`` command line: check, explain, demo, annotate, audit, rules, server, hook, install.

Only dispatch lives here, importing nothing but ``os`` and ``sys``: each subcommand loads its
own module (``guard annotate`` runs in front of commands, so it must not pay for argparse, json
and the engine that ``guard check`` needs).
"""

from __future__ import annotations

import sys

EXIT_USAGE = 2


def cmd_rules(argv: list[str]) -> int:
    if argv and argv[0] == "diff":
        from guard.audit.reports.rulesdiff import main as diff

        return diff(argv[1:])
    if not argv or argv[0] not in ("list", "lint", "test", "draft", "-h", "--help"):
        print("guard: usage: guard rules list|lint|test [PATH…] | draft PROGRAM… | diff --old PATH… --new PATH… "
              "--commands FILE…", file=sys.stderr)
        return EXIT_USAGE
    from guard.cli import rules as cli

    return cli.main(argv)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(
            "usage: guard check|explain|demo|annotate|audit|rules|server|hook|install|uninstall|doctor …\n"
            "  check [--cwd DIR] [--tree DIR]… [--env K=V]… [--rules PATH]… [--json|--jsonl] -- COMMAND\n"
            "  explain [--json] -- COMMAND  the analysis and each invocation's facts, for a person\n"
            "  demo                   walk agent commands through the guard in a temporary tree\n"
            "  annotate -- PROG ARGS  run a program under the stderr relay\n"
            "  audit [LOG…] [filters] report on refused-command logs\n"
            "  rules list|lint|test   inspect, validate and test rule files\n"
            "  rules diff --old … --new … --commands …  what a rules change would refuse\n"
            "  rules draft PROGRAM…   a draft runs: entry from a wrapper's own --help and manual\n"
            "  server status|stop     the resident analysis server guard-shell uses\n"
            "  hook HOST              answer an agent host's pre-tool hook (JSON on stdin)\n"
            "  install|uninstall HOST [--scope user|project] [--fail-closed] [--print]  the host's hooks\n"
            "  doctor                 is guard really in front of each agent client on PATH"
        )
        raise SystemExit(0 if args else EXIT_USAGE)
    sub, rest = args[0], args[1:]
    try:
        if sub == "check":
            from guard.cli.check import cmd_check

            code = cmd_check(rest)
        elif sub == "explain":
            from guard.cli.check import cmd_explain

            code = cmd_explain(rest)
        elif sub == "demo":
            from guard.cli.demo import main as demo

            code = demo(rest)
        elif sub == "annotate":
            from guard.cli.annotate import main as annotate

            code = annotate(rest)
        elif sub == "audit":
            from guard.audit.reports.report import main as audit

            code = audit(rest)
        elif sub == "rules":
            code = cmd_rules(rest)
        elif sub == "server":
            from guard.shell.client import main as server

            code = server(rest)
        elif sub == "hook":
            from guard.hooks.hook import main as hook

            code = hook(rest)
        elif sub == "doctor":
            from guard.hooks.doctor import main as doctor

            code = doctor(rest)
        elif sub in ("install", "uninstall"):
            from guard.hooks.install import main as install

            code = install(sub, rest)
        else:
            print(f"guard: unknown command {sub!r} (try guard --help)", file=sys.stderr)
            code = EXIT_USAGE
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    raise SystemExit(code)


if __name__ == "__main__":
    main()
