"""Outside A2A agents, through the SDK's client: ``card`` fetches and checks a card, ``client``
sends one message and follows its task (``tracking`` turns what comes back into our updates,
``parts`` converts parts, ``errors`` sorts failures, ``timeouts`` bounds each step), and
``pump`` sends the remote outbox (``sending``: one row) and writes the answers as mail. How an
agent is reached is its transport's (``a2a/transports``)."""
