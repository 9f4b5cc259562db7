"""The synchronous hooks: session-start, prompt, post-tool and stop.

Each takes the run's ``HookContext`` and returns the JSON to print, or None for nothing. Mail is
taken with ``Client.surface(SurfaceQuery(via="hook"))``: each message reaches the model's context once, fenced
as another agent's words, and stays unread in the mailbox.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from callboard.client.session_keeper import HEARTBEAT_SECONDS
from callboard.errors import CallboardError, UnknownSession
from callboard.integrations.agent_clis import CLAUDE_CODE
from callboard.integrations.claude_code.wakeable import woken_for_mail
from callboard.integrations.hooks import budget, output
from callboard.integrations.hooks.context import HookContext
from callboard.integrations.hooks.state import prune

if TYPE_CHECKING:
    from callboard.model import MailItem

Output = dict[str, Any] | None

REPLY_HINT = "Answer with the send_message tool (or `callboard send <agent> <text>`) when an answer is needed."
STOP_ASK = "New mail is waiting (above): handle it — answer it if it needs an answer — before you finish."


def session_start(ctx: HookContext) -> Output:
    """Register the agent CLI's session (mail a gone session held comes back to the mailbox),
    then put the mail waiting into context — unless the session is woken for it.

    A Claude Code session that can be woken (``woken_for_mail``) takes no mail here: what waits
    when it starts, new or returned, wakes it as new mail does. Its waiter (beside this hook) or
    its socket injector starts a turn that carries it. Put into this hook's context, the mail
    would be marked surfaced while the session sat idle, no turn reading it until someone typed,
    and its wakes would find nothing to wake for."""
    try:
        register(ctx)
    except CallboardError as error:  # presence is missing, but the mail can still be taken
        ctx.warn(error)
    prune(ctx.settings.home)
    if ctx.client_name == CLAUDE_CODE.name and woken_for_mail(ctx.agent_pid):
        return None
    return _drain(ctx)


def prompt(ctx: HookContext) -> Output:
    """New mail into context before the model reads the prompt; heartbeat the session when due."""
    state = ctx.files.load()
    if state.session is not None and time.time() - state.last_beat >= HEARTBEAT_SECONDS:
        _heartbeat(ctx, state.session)
    elif not ctx.may_have_mail():  # the common case: answered without loading the service
        return None
    return _drain(ctx)


def post_tool(ctx: HookContext) -> Output:
    """Between tool calls: only mail sent urgent; ordinary mail waits for the turn to end."""
    if not output.takes_context(ctx.client_name, ctx.event) or not ctx.may_have_mail(urgent_only=True):
        return None
    return _drain(ctx, urgent_only=True)


def stop(ctx: HookContext) -> Output:
    """While mail is waiting, keep the agent going to handle it, within the budget (``budget``)."""
    confirm_from_transcript(ctx)
    now, active = time.time(), ctx.payload.stop_hook_active
    with ctx.files.updating() as state:
        if budget.cooling(state, now):
            return None
        if not ctx.may_have_mail():
            budget.quiet(state)
            return None
        if not budget.may_block(state, now, active):
            budget.cool_down(state, now)
            return None
        from callboard.requests import SurfaceQuery  # with the client: an empty mailbox loads neither

        items = ctx.client().surface(SurfaceQuery(via="hook")).items
        if not items:
            budget.quiet(state)
            return None
        budget.blocked(state, active)
    return output.block(mail_text(items, STOP_ASK))


HANDLERS: dict[str, Callable[[HookContext], Output]] = {
    "session-start": session_start,
    "prompt": prompt,
    "post-tool": post_tool,
    "stop": stop,
}


def confirm_from_transcript(ctx: HookContext) -> None:
    """The fallback for a session whose ``callboard mcp`` does not watch its transcript: at
    the end of each turn, mail handed to the session that the turn's records show carried to
    the model is confirmed surfaced (the rule is the service's: ``handing``)."""
    path = ctx.payload.transcript_path
    if path is None or not ctx.may_have_handed():
        return
    from callboard.integrations.claude_code.transcript_watch import ids_in_tail

    ids = ids_in_tail(path)
    if ids:
        try:
            ctx.client().confirm_surfaced(ids, "transcript")
        except CallboardError as error:
            ctx.warn(error)


def register(ctx: HookContext) -> None:
    """Register the agent CLI's session. Registering it again only refreshes it: a heartbeat."""
    session = ctx.client().register_session(runtime=ctx.runtime, pid=ctx.agent_pid)
    with ctx.files.updating() as state:
        state.session, state.last_beat = session.id, time.time()


def mail_text(items: Sequence[MailItem], ask: str = REPLY_HINT) -> str:
    """The mail as the model reads it: a count, each message fenced, and what to do with it."""
    from callboard.fence import fenced_mail  # the models load only when there is mail to show

    count = f"{len(items)} new message{'' if len(items) == 1 else 's'}"
    return f"Callboard: {count} in your mailbox.\n\n{fenced_mail(items)}\n\n{ask}"


def _drain(ctx: HookContext, *, urgent_only: bool = False) -> Output:
    if not output.takes_context(ctx.client_name, ctx.event):
        return None
    from callboard.requests import SurfaceQuery  # with the client: an empty mailbox loads neither

    items = ctx.client().surface(SurfaceQuery(via="hook", urgent_only=urgent_only)).items
    return output.context(ctx.client_name, ctx.event, mail_text(items)) if items else None


def _heartbeat(ctx: HookContext, session_id: str) -> None:
    try:
        ctx.client().heartbeat(session_id)
    except UnknownSession:  # ended and gone: the next session-start registers a new one
        with ctx.files.updating() as state:
            state.session = None
        return
    except CallboardError as error:
        ctx.warn(error)
        return
    with ctx.files.updating() as state:
        state.last_beat = time.time()
