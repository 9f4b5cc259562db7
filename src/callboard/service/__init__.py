"""The service: the only writer, and the one door every face goes through.

``door.Service`` is that door; the rest of this folder are its collaborators, one idea each:
the directory of agents and channels (``directory``, names guessed in ``agent_names``), who is
there (``presence``, ``liveness``), credentials, content checks, the mailbox's events, sending
(``sending``, ``recipients``, ``holds``), reading and status, handing mail to live sessions
(``handing``), tasks (``tasking``, ``task_changes``, ``push_targets``, ``push_outbox``), outside agents
(``remotes``, ``remote_outbox``) and runner reports. It knows no face; below it are the store
and the pure core.
"""
