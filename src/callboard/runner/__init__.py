"""Runners: a warm headless coding CLI per agent, woken by mail, and teams of role agents.

``callboard run`` keeps one CLI working as one agent: it registers as a live session of that
agent, waits (doing nothing, costing no model tokens) until mail arrives, and then gives the mail
to the CLI as one turn. The CLI is driven through an adapter (``adapters/``, one module per CLI)
behind one interface; the loop (``loop.py``) knows no particular CLI. Teams (``team.py``) start
one runner per role from a ``team.toml``.
"""
