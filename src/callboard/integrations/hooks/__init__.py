"""``callboard hook <event>``: mail into a coding agent's context through the agent CLI's hooks.

Each agent CLI runs ``callboard hook <event> --client <cli>`` at points of its session and
passes a JSON document on stdin; the hook answers with that CLI's JSON on stdout:

- ``session-start``: registers the agent CLI's session and puts the mail waiting into context;
- ``prompt``: puts new mail into context before the model sees the user's prompt;
- ``post-tool``: between tool calls, puts in only mail sent urgent (a busy agent is not interrupted);
- ``stop``: while mail is waiting, keeps the agent going to handle it (within a budget);
- ``wake`` (Claude Code, an ``asyncRewake`` hook): waits in the background and wakes an idle
  session when mail arrives.

A hook never breaks its host: whatever fails, it exits 0 with one line on stderr. The hooks run on
every prompt and tool call, so the common case — nothing new — is answered without loading the
service (see ``probe``). ``entry.run`` is the whole command; ``cli/main.py`` calls it before
loading anything else.
"""
