"""The hub: the mailbox core served over HTTP (REST /v1, SSE, long-poll) with credentials."""

from switchboard.hub.app import create_app

__all__ = ["create_app"]
