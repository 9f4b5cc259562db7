"""Our agents answering A2A: ``handler`` answers every A2A method over the Service, ``convert``
maps our tasks to the SDK's protobuf types, ``cards`` builds an agent's card, ``context`` names
the caller for the SDK, ``errors`` and ``versions`` say what the SDK should answer when we
refuse, and ``push`` posts task updates to the webhooks A2A clients registered (A2A push
notifications)."""
