"""The REST endpoints of /v1/rounds: rounds (a goal put to agents, who propose, vote and converge)
for scripts, people and the command line. The rules are ``rounds.py``'s and the service's; here
only what a request brings and what to answer. A refused proposal or vote is an answer (200,
``accepted: false`` with the refusal), not an error: it was recorded."""

from __future__ import annotations

from callboard.hub.endpoint import Answer, Call
from callboard.hub.long_poll import long_poll
from callboard.limits import SEQ_MAX, WAIT_SECONDS_MAX
from callboard.model import Caller
from callboard.requests import RoundProposal, RoundRequest, RoundVote
from callboard.rounds import OPEN, RoundActed, RoundInfo
from callboard.service.identity_gate import as_agent
from callboard.store.parts.rounds import round_key


async def open_round(call: Call) -> Answer:
    await call.identify()
    body = await call.body(RoundRequest)
    return Answer(await call.run_as(call.hub.service.rounds.open_round, body), 201)


async def list_rounds(call: Call) -> list[RoundInfo]:
    await call.identify()
    every = call.query_bool("all")
    return await call.run_as(call.hub.service.rounds.list_rounds, open_only=not every)


async def get_round(call: Call) -> RoundInfo:
    """The round whole; with ``after_events`` and ``wait``, once it has more events (a long-poll)."""
    credential, caller = await call.identify()
    rounds, round_id = call.hub.service.rounds, call.path("round_id")
    after = call.query_int("after_events", None, 0, SEQ_MAX)
    wait = call.query_float("wait", 0.0, 0.0, WAIT_SECONDS_MAX)

    def look(acting: Caller) -> RoundInfo:
        return rounds.get_round(acting, round_id)

    if wait <= 0 or after is None:
        return await call.run_as(look)
    subscribed = call.hub.service.subscriptions.subscribe_async(as_agent(caller).workspace, round_key(round_id))
    return await long_poll(
        call, credential, subscribed, wait, look, lambda info: len(info.events) > after or info.phase not in OPEN
    )


async def propose(call: Call) -> RoundActed:
    await call.identify()
    body = await call.body(RoundProposal)
    return await call.run_as(call.hub.service.rounds.propose, call.path("round_id"), body)


async def vote(call: Call) -> RoundActed:
    await call.identify()
    body = await call.body(RoundVote)
    return await call.run_as(call.hub.service.rounds.vote, call.path("round_id"), body)


async def cancel_round(call: Call) -> RoundInfo:
    await call.identify()
    await call.no_body()
    return await call.run_as(call.hub.service.rounds.cancel, call.path("round_id"))
