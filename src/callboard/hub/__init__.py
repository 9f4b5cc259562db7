"""The hub: the mailbox core served over HTTP (REST /v1, SSE, long-poll) with credentials."""
