"""The resident analysis server: guard-shell's fast path for commands that need the analysis.

A guard-shell that must analyse a command asks a per-user server instead of importing and
warming the whole engine itself (about 25 ms on every such command). The server has everything
imported and warm; for each request it forks, and the forked child runs exactly the code a
guard-shell would run in-process (``guard.shell.main.guard_command``) with the caller's argv,
working directory and environment, then sends back the action and what it wrote on stderr.

- ``wire``: the request and reply bytes (pure functions).
- ``client``: where the server listens, asking it, starting it. Imports almost nothing.
- ``server``: the accept-and-fork loop, warm-up, idle exit and staleness checks.

The server is an accelerator, never an authority of its own: any failure (no server, a server
that is not ours, a dropped connection, a garbled reply) sends guard-shell back to the
in-process analysis, and ``GUARD_SERVER=0`` turns it off.
"""
