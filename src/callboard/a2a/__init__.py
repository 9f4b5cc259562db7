"""A2A 1.0 through the official a2a-sdk: every Callboard agent is an A2A agent, and any agent
can task an outside one.

``cards`` builds an agent's card, ``convert`` maps our tasks to the SDK's protobuf types,
``handler`` answers every A2A method over the Service, ``context`` names the caller for the
SDK, and ``push`` posts task updates to the webhooks A2A clients registered. The door for
``/a2a/{workspace}/{agent}/…`` is the hub's (hub/a2a_endpoint.py, beside its MCP one): this
package imports nothing of hub/.

Outside agents (the SDK's client): ``remote_card`` fetches and checks a card, ``remote_client``
sends one message and follows its task (``remote_tracking`` turns what comes back into our
updates, ``remote_parts`` converts parts, ``remote_errors`` sorts failures), and ``remote_pump``
sends the remote outbox and writes the answers as mail.
"""
