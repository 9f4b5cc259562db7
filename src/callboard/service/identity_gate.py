"""The identity gate: only a person may name no agent, and then only look.

A person's credential (this machine's embedded store, a hub's user or admin token) may leave
the agent unnamed: it may then see ``who``, the agents, channels, runners, workspaces and audit
trail, and a message's status. Every other operation acts as an agent, and each collaborator
asks for one here, at the top of the operation, before it reads or writes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from callboard.errors import NoIdentity
from callboard.model import Caller

if TYPE_CHECKING:

    class AgentCaller(Caller):
        """A caller the gate let through, as the type checker sees it: it names its agent. At
        run time it is the same Caller (the gate checks, it does not copy)."""

        agent: str

else:
    AgentCaller = Caller

# What a person who names no agent is told when it asks for more than a look.
NO_AGENT = (
    "this acts as an agent, and none is named: set CALLBOARD_AGENT=name (sent to a hub as X-Callboard-Agent), "
    "put the name in a .callboard-agent file in the project, or run inside a git repository."
)


def as_agent(caller: Caller) -> AgentCaller:
    """The caller, when it names the agent it acts as; no_identity when it names none."""
    if caller.agent is None:
        raise NoIdentity(NO_AGENT)
    return cast(AgentCaller, caller)
