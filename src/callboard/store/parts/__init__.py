"""The store's parts: one module a part (directory, sessions, sent, mailbox, handing, guard facts,
audit, tokens, tasks, remotes, runners), each with its interface (a Protocol, the attribute of
the Store of that name) and its SQL, written once for both dialects (see ``store/sql.py``).
A dialect's folder subclasses a part only for what it really does its own way."""
