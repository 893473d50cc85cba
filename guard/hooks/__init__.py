"""Agent hosts: guard as a hook of the host's shell tool (``guard hook HOST``) and the settings
entry that installs it (``guard install HOST``).

``protocols`` holds one table entry per host: how its payload names the command, the working
directory and the session, and how it wants a refusal answered. ``hook`` runs the analysis for
one payload; ``install`` merges and removes the settings entry.
"""
