"""A2A 1.0 through the official a2a-sdk: every Callboard agent is an A2A agent, and any agent
can task an outside one. This package imports nothing of hub/: the door for
``/a2a/{workspace}/{agent}/…`` is the hub's (hub/a2a_endpoint.py, beside its MCP one).

``server/``: our agents answering A2A — the request handler over the Service, conversion to the
SDK's types, cards, the caller's context, and push notifications to the webhooks A2A clients
registered. ``remote/``: outside agents — card fetch, the client that sends and follows a task,
the outbox pump. ``transports/``: how an outside agent is reached, chosen in one place.
"""
