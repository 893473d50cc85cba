"""``guard annotate -- PROGRAM [ARGS…]``: run a program under the stderr relay, which annotates.

Apart from ``guard.act.annotate`` (the annotator itself), which the relay's sink reaches: the
command imports the relay, the relay the sink, the sink the annotator, one way only. Runnable
as ``python -m guard.cli.annotate -- PROGRAM …``.
"""

from __future__ import annotations

import os

USAGE = "usage: guard annotate -- PROGRAM [ARGS...]"


def main(argv: list[str]) -> int:
    """``guard annotate -- PROGRAM [ARGS…]``; ``argv`` is what follows ``annotate``."""
    args = list(argv)
    if args and args[0] == "--":
        args = args[1:]
    elif args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    elif args and args[0].startswith("-"):
        _usage_error(f"unknown option {args[0]}")
        return 2
    if not args:
        _usage_error("no program given")
        return 2
    from guard.act.relay import run

    return run(args, mirror_signal=True)


def _usage_error(msg: str) -> None:
    try:
        os.write(2, f"guard annotate: {msg}; {USAGE}\n".encode())
    except OSError:
        pass


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
