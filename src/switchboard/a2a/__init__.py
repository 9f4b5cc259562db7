"""A2A 1.0 through the official a2a-sdk: every Switchboard agent is an A2A agent.

``cards`` builds an agent's card, ``convert`` maps our tasks to the SDK's protobuf types,
``handler`` answers every A2A method over the Service, ``context`` names the caller for the
SDK, ``mount`` is the hub's door for ``/a2a/{workspace}/{agent}/…``, and ``push`` posts task
updates to the webhooks A2A clients registered.
"""
