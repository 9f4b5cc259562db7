"""The SDK's call context for a request the hub's door let in: who calls, and whom it addresses.

The SDK's own builder keeps the request's headers in ``state['headers']`` (its version check
reads ``A2A-Version`` there); ours adds the Caller the door authenticated and the agent named by
the URL, and makes that caller the SDK's user.
"""

from __future__ import annotations

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from starlette.requests import Request

from callboard.model import Caller

CALLER_SCOPE = "callboard.caller"  # in the ASGI scope, set by the door once authenticated
CALLER_STATE = "callboard.caller"  # in the call context's state
WORKER_STATE = "callboard.worker"  # the agent the URL names (/a2a/{workspace}/{agent}/…)


class CallerUser(User):
    """A Callboard caller as the SDK's user: always authenticated (the door saw to it)."""

    def __init__(self, caller: Caller) -> None:
        self._caller = caller

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return f"{self._caller.workspace}/{self._caller.agent}"


class CallboardContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's context, with our caller and the agent addressed."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        caller = request.scope.get(CALLER_SCOPE)
        if isinstance(caller, Caller):
            context.user = CallerUser(caller)
            context.state[CALLER_STATE] = caller
        context.state[WORKER_STATE] = request.path_params.get("agent")
        return context

    def build_user(self, request: Request) -> User:
        caller = request.scope.get(CALLER_SCOPE)
        return CallerUser(caller) if isinstance(caller, Caller) else super().build_user(request)
