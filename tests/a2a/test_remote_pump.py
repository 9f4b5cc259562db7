"""Mail to outside A2A agents, end to end below the faces: a real store (SQLite file and
PostgreSQL schema), the Service, the remote pump, and a real outside agent (the a2a-sdk's own
server on loopback). A send to a registered remote stores the mail, the task and the outbox row;
the pump sends it, follows the remote task, and its updates arrive as mail in the sender's thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from callboard.a2a.remote.card import card_source
from callboard.a2a.remote.pump import PumpSettings, RemotePump
from callboard.a2a.remote.timeouts import RemoteTimeouts
from callboard.errors import AlreadyExists, BadRemoteAnswer, BadRequest, RemoteUnreachable, UnknownAgent
from callboard.model import Caller, MailItem
from callboard.requests import ReadQuery, SendRequest, TaskRequest
from callboard.service.door import Service
from callboard.store.opening import open_store
from callboard.tasks import TaskState
from tests.support.outside_agent import OutsideAgent
from tests.support.postgres import fresh_schema
from tests.support.waiting import scaled, wait_until

WS = "team"
ALICE = Caller(workspace=WS, agent="alice")
BOB = Caller(workspace=WS, agent="bob")
FAST = PumpSettings(
    timeouts=RemoteTimeouts(connect=3.0, call=3.0, deadline=6.0, poll_first=0.05, poll_most=0.2),
    lease_seconds=6.0,
    retry_first=0.1,
    retry_most=0.3,
    idle_seconds=0.05,
)


@pytest.fixture(params=["sqlite", "postgres"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Service]:
    def opened(location: str) -> Service:
        service = Service(open_store(location), machine="box", card_source=card_source)
        for caller in (ALICE, BOB):
            service.directory.enter(caller)
        return service

    if request.param == "sqlite":
        service = opened(str(tmp_path / "callboard.db"))
        yield service
        service.store.close()
        return
    with fresh_schema() as url:
        service = opened(url)
        yield service
        service.store.close()


def pump_until(service: Service, done: object, what: str, timeout: float = 15.0, settings: PumpSettings = FAST) -> None:
    """Run the pump until ``done()`` holds (a deadline, never a sleep)."""

    async def run() -> None:
        stop = asyncio.Event()
        worker = asyncio.create_task(RemotePump(service, settings).run(stop))
        deadline = time.monotonic() + timeout
        try:
            while not await asyncio.to_thread(done):  # type: ignore[arg-type]
                if time.monotonic() > deadline:
                    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
                await asyncio.sleep(0.02)
        finally:
            stop.set()
            await worker

    asyncio.run(run())


def mail_from(service: Service, caller: Caller, sender: str) -> list[MailItem]:
    return [i for i in service.mailbox.read(caller, ReadQuery(peek=True)).items if i.message.sender == sender]


def texts(items: list[MailItem]) -> str:
    return " | ".join(p.text or "" for i in items for p in i.message.parts)


def test_register_list_and_remove_a_remote(service: Service, outside: OutsideAgent) -> None:
    remote = service.remotes.add(ALICE, "echo", outside.url, token="secret-1")
    assert (remote.name, remote.url, remote.streaming, remote.has_token) == ("echo", outside.url, True, True)
    assert "secret-1" not in remote.model_dump_json()  # the token is never shown
    assert [r.name for r in service.remotes.list(ALICE)] == ["echo"]
    agents = {a.name: a for a in service.list_agents(ALICE)}
    assert agents["echo"].remote == outside.url and agents["alice"].remote is None
    who = {a.name: a for a in service.who(ALICE).agents}
    assert who["echo"].remote == outside.url
    with pytest.raises(AlreadyExists, match="not an outside agent"):
        service.remotes.add(ALICE, "bob", outside.url)
    with pytest.raises(AlreadyExists, match="registered already, as echo"):
        service.remotes.add(ALICE, "echo2", outside.url)
    service.remotes.remove(ALICE, "echo")
    assert service.remotes.list(ALICE) == [] and "echo" not in {a.name for a in service.list_agents(ALICE)}
    with pytest.raises(UnknownAgent, match="no outside agent named echo"):
        service.remotes.remove(ALICE, "echo")


@pytest.mark.parametrize("streamed", [True, False])
def test_a_send_becomes_a_remote_task_and_its_artifact_comes_back_as_mail(
    service: Service, outside: OutsideAgent, outside_polled: OutsideAgent, streamed: bool
) -> None:
    agent = outside if streamed else outside_polled
    service.remotes.add(ALICE, "echo", agent.url)
    sent = service.sending.send(ALICE, SendRequest(to="echo", text="complete the review"))
    (outcome,) = sent.recipients
    assert outcome.state == "queued" and "outside A2A agent echo" in (outcome.reason or "")
    status = service.message_status(ALICE, sent.message_id)
    assert status.remote is not None and status.remote.state == "pending" and status.task_state is TaskState.SUBMITTED

    def completed() -> bool:
        status = service.message_status(ALICE, sent.message_id)
        return status.task_state is TaskState.COMPLETED and status.remote.state == "done"  # type: ignore[union-attr]

    pump_until(service, completed, "the remote task to complete, and its row to settle")
    items = mail_from(service, ALICE, "echo")
    assert "result: complete the review" in texts(items)
    assert {i.message.thread_id for i in items} == {sent.thread_id}  # in the sender's thread
    assert {i.message.task_id for i in items} == {status.task_id}
    status = service.message_status(ALICE, sent.message_id)
    assert status.remote.state == "done" and status.remote.remote_task_id  # type: ignore[union-attr]
    assert status.recipients[0].state in ("read", "acked")  # the remote took it
    task = service.tasking.get_task(ALICE, status.task_id)  # type: ignore[arg-type]
    assert task.worker == "echo" and task.artifacts[0].parts[0].text == "result: complete the review"
    # The outside agent saw our message id as its A2A message id.
    assert sent.message_id in [s["message_id"] for s in agent.seen()]


def test_input_required_then_the_senders_reply_in_thread_continues_the_same_remote_task(
    service: Service, outside: OutsideAgent
) -> None:
    service.remotes.add(ALICE, "echo", outside.url)
    sent = service.sending.send(ALICE, SendRequest(to="echo", text="ask me something"))
    task_id = service.message_status(ALICE, sent.message_id).task_id

    def waiting() -> bool:
        return service.message_status(ALICE, sent.message_id).task_state is TaskState.INPUT_REQUIRED

    pump_until(service, waiting, "the remote to ask for input")
    assert "which branch?" in texts(mail_from(service, ALICE, "echo"))
    answer = service.sending.send(ALICE, SendRequest(to="echo", text="main", thread_id=sent.thread_id))
    assert service.message_status(ALICE, answer.message_id).task_id == task_id  # a follow-up, same task

    def completed() -> bool:
        return service.tasking.get_task(ALICE, task_id).state is TaskState.COMPLETED  # type: ignore[arg-type]

    pump_until(service, completed, "the follow-up to complete the task")
    assert "answer: main" in texts(mail_from(service, ALICE, "echo"))
    remote_ids = {r["task_id"] for r in outside.seen() if r["message_id"] in (sent.message_id, answer.message_id)}
    assert len(remote_ids) == 1  # one remote task for both messages


@pytest.mark.parametrize("streamed", [True, False])
def test_an_answer_the_remote_first_shows_the_question_for_still_completes_the_task_and_asks_once(
    service: Service, outside: OutsideAgent, outside_polled: OutsideAgent, streamed: bool
) -> None:
    """The remote's events for our answer open with its stored task, still input-required with
    the question (a stream that starts with a snapshot; a send answered before the answer is taken
    up): the pump reads on until the task moves, and mails the question once."""
    agent = outside if streamed else outside_polled
    service.remotes.add(ALICE, "echo", agent.url)
    sent = service.sending.send(ALICE, SendRequest(to="echo", text="restate the plan"))
    task_id = service.message_status(ALICE, sent.message_id).task_id
    assert task_id is not None

    def waiting() -> bool:
        return service.tasking.get_task(ALICE, task_id).state is TaskState.INPUT_REQUIRED

    pump_until(service, waiting, "the remote to ask for input")
    service.sending.send(ALICE, SendRequest(to="echo", text="main", thread_id=sent.thread_id))

    def settled() -> bool:
        return all(r.state in ("done", "failed") for r in service.store.remotes.remote_sends(WS, task_id=task_id))

    pump_until(service, settled, "the pump to be done with the answer")
    task = service.tasking.get_task(ALICE, task_id)
    assert task.state is TaskState.COMPLETED, texts(mail_from(service, ALICE, "echo"))
    assert [p.text for a in task.artifacts for p in a.parts] == ["answer: main"]
    assert texts(mail_from(service, ALICE, "echo")).count("which branch?") == 1


@pytest.mark.parametrize("streamed", [True, False])
def test_a_remote_that_asks_the_same_question_again_is_heard_asking_again(
    service: Service, outside: OutsideAgent, outside_polled: OutsideAgent, streamed: bool
) -> None:
    """The other side of passing the old question over: asked again after our answer, it is
    mailed again and the task waits on us, once the remote is done with the answer."""
    agent = outside if streamed else outside_polled
    service.remotes.add(ALICE, "echo", agent.url)
    sent = service.sending.send(ALICE, SendRequest(to="echo", text="nag me"))
    task_id = service.message_status(ALICE, sent.message_id).task_id
    assert task_id is not None
    pump_until(
        service, lambda: service.tasking.get_task(ALICE, task_id).state is TaskState.INPUT_REQUIRED, "a question"
    )
    service.sending.send(ALICE, SendRequest(to="echo", text="main", thread_id=sent.thread_id))

    def asked_again() -> bool:
        rows = service.store.remotes.remote_sends(WS, task_id=task_id)
        return all(r.state in ("done", "failed") for r in rows) and (
            texts(mail_from(service, ALICE, "echo")).count("which branch?") == 2
        )

    pump_until(service, asked_again, "the question asked again")
    assert service.tasking.get_task(ALICE, task_id).state is TaskState.INPUT_REQUIRED


def test_a_send_to_a_remote_and_others_together_is_refused_whole(service: Service, outside: OutsideAgent) -> None:
    service.remotes.add(ALICE, "echo", outside.url)
    with pytest.raises(BadRequest, match="outside A2A agent: mail to it is a task of its own"):
        service.sending.send(ALICE, SendRequest(to=["echo", "bob"], text="hello both"))
    assert service.mailbox.read(BOB, ReadQuery(peek=True)).items == []


# --- a remote that is down, hangs, or answers garbage -------------------------------------------


def _state(service: Service, message_id: str) -> str | None:
    remote = service.message_status(ALICE, message_id).remote
    return remote.state if remote else None


@pytest.mark.e2e  # waits out a remote's deadline
def test_a_hanging_remote_fails_the_task_with_the_reason_after_its_deadline(
    service: Service, outside: OutsideAgent
) -> None:
    service.remotes.add(ALICE, "echo", outside.url)
    started = time.monotonic()
    sent = service.sending.send(ALICE, SendRequest(to="echo", text="hang around"))
    pump_until(service, lambda: _state(service, sent.message_id) == "failed", "the hanging task to fail", 20)
    assert time.monotonic() - started < FAST.timeouts.deadline + scaled(14)  # the deadline, not forever
    status = service.message_status(ALICE, sent.message_id)
    assert status.task_state is TaskState.FAILED
    assert "deadline" in (status.remote.last_error or "")  # type: ignore[union-attr]
    told = texts(mail_from(service, ALICE, "echo"))
    assert "failed" in told and "deadline" in told  # the sender is told why, by mail
    assert service.store.sent.get_message(WS, sent.message_id) is not None  # the message is kept


def test_a_remote_down_at_send_is_tried_again_with_the_same_message_id(service: Service, tmp_path: Path) -> None:
    late = OutsideAgent(tmp_path).start()
    try:
        service.remotes.add(ALICE, "late", late.url)
        late.stop()
        sent = service.sending.send(ALICE, SendRequest(to="late", text="complete when you can"))
        slow = PumpSettings(
            timeouts=RemoteTimeouts(connect=1.0, call=2.0, deadline=60.0, poll_first=0.05, poll_most=0.2),
            retry_first=0.1,
            retry_most=0.3,
            idle_seconds=0.05,
        )

        def tried_and_failed() -> bool:
            remote = service.message_status(ALICE, sent.message_id).remote
            return bool(remote and remote.attempts >= 2 and "could not be reached" in (remote.last_error or ""))

        pump_until(service, tried_and_failed, "a failed try while the remote is down", settings=slow)
        assert _state(service, sent.message_id) == "pending"  # kept, to be tried again
        late.start()
        done = lambda: service.message_status(ALICE, sent.message_id).task_state is TaskState.COMPLETED  # noqa: E731
        pump_until(service, done, "the task to complete once the remote is up", 30, settings=slow)
        assert [s["message_id"] for s in late.seen()] == [sent.message_id]  # one message id, seen once
        assert "result: complete when you can" in texts(mail_from(service, ALICE, "late"))
    finally:
        late.stop()


def test_garbage_fails_the_task_with_a_clear_reason(service: Service, tmp_path: Path) -> None:
    junk = OutsideAgent(tmp_path, mode="garbage").start()
    junk_card = OutsideAgent(tmp_path, mode="garbage-card").start()
    try:
        with pytest.raises(BadRemoteAnswer, match="is not an A2A agent card"):
            service.remotes.add(ALICE, "nocard", junk_card.url)
        assert service.remotes.list(ALICE) == []  # nothing half-registered
        service.remotes.add(ALICE, "junk", junk.url)
        sent = service.sending.send(ALICE, SendRequest(to="junk", text="complete this"))
        pump_until(service, lambda: _state(service, sent.message_id) == "failed", "the garbage task to fail")
        status = service.message_status(ALICE, sent.message_id)
        assert status.task_state is TaskState.FAILED and "junk" in (status.remote.last_error or "")  # type: ignore[union-attr]
        assert "broken answer" in texts(mail_from(service, ALICE, "junk"))
    finally:
        junk.stop()
        junk_card.stop()


def test_an_a2a_address_registers_the_agent_on_first_use(service: Service, outside: OutsideAgent) -> None:
    sent = service.sending.send(ALICE, SendRequest(to=f"a2a:{outside.url}", text="complete via address"))
    (outcome,) = sent.recipients
    assert outcome.agent == "outside-echo" and outcome.state == "queued"
    assert [r.url for r in service.remotes.list(ALICE)] == [outside.url]
    again = service.sending.send(ALICE, SendRequest(to=f"a2a:{outside.url}/", text="complete again"))
    assert again.recipients[0].agent == "outside-echo" and len(service.remotes.list(ALICE)) == 1

    def done() -> bool:
        return all(
            service.message_status(ALICE, m).task_state is TaskState.COMPLETED
            for m in (sent.message_id, again.message_id)
        )

    pump_until(service, done, "both tasks sent by address to complete")
    assert "result: complete via address" in texts(mail_from(service, ALICE, "outside-echo"))


def test_without_a_card_source_an_unregistered_address_is_refused_and_nothing_stored(
    tmp_path: Path, outside: OutsideAgent
) -> None:
    service = Service(open_store(str(tmp_path / "plain.db")), machine="box")
    try:
        service.directory.enter(ALICE)
        with pytest.raises(RemoteUnreachable, match="agent add-remote"):
            service.sending.send(ALICE, SendRequest(to=f"a2a:{outside.url}", text="hi"))
        assert service.remotes.list(ALICE) == [] and service.store.remotes.remote_sends(WS, task_id="x") == []
    finally:
        service.store.close()


def test_a_task_opened_for_a_remote_goes_out_and_a_cancel_here_cancels_it_there(
    service: Service, outside: OutsideAgent
) -> None:
    service.remotes.add(ALICE, "echo", outside.url)
    opened = service.tasking.open_task(
        ALICE, TaskRequest(to="echo", parts=[{"text": "complete as a task"}])
    )  # as the A2A face or MCP do

    def completed() -> bool:
        return service.tasking.get_task(ALICE, opened.task.id).state is TaskState.COMPLETED

    pump_until(service, completed, "a task opened for the remote to complete")
    hanging = service.tasking.open_task(ALICE, TaskRequest(to="echo", parts=[{"text": "hang for a cancel"}]))

    def followed() -> bool:
        return _state(service, hanging.send.message_id) == "following"

    patient = PumpSettings(
        timeouts=RemoteTimeouts(connect=1.0, call=1.0, deadline=60.0, poll_first=0.05, poll_most=0.2),
        lease_seconds=6.0,
        idle_seconds=0.05,
    )
    pump_until(service, followed, "the remote to take the hanging task", settings=patient)
    remote_task = service.message_status(ALICE, hanging.send.message_id).remote.remote_task_id  # type: ignore[union-attr]
    service.tasking.cancel_task(ALICE, hanging.task.id)
    pump_until(service, lambda: remote_task in outside.canceled(), "the cancel to reach the remote", settings=patient)
    assert service.tasking.get_task(ALICE, hanging.task.id).state is TaskState.CANCELED


def test_a_row_is_leased_to_one_claimer_and_comes_due_again_when_its_lease_ends(
    service: Service, outside: OutsideAgent
) -> None:
    service.remotes.add(ALICE, "echo", outside.url)
    sent = service.sending.send(ALICE, SendRequest(to="echo", text="complete once"))
    outbox = service.remote_outbox
    (first,) = outbox.claim(lease_seconds=0.5, limit=10)
    assert (first.message_id, first.attempts, first.state) == (sent.message_id, 1, "pending")
    assert outbox.claim(lease_seconds=0.5, limit=10) == []  # leased: no second claimer gets it
    again = wait_until(lambda: outbox.claim(lease_seconds=30, limit=10), 10, "the lease to end")
    assert [(r.message_id, r.attempts) for r in again] == [(sent.message_id, 2)]
    outbox.retry(again[0], "down", 0)
    (third,) = outbox.claim(lease_seconds=30, limit=10)
    assert third.attempts == 3 and outbox.of_message(WS, sent.message_id).last_error == "down"  # type: ignore[union-attr]
    outbox.settle(third, "gave up")
    outbox.retry(third, None, 0)  # a pump cut short just after settling it lets it go: it stays settled
    assert outbox.claim(lease_seconds=30, limit=10) == []  # settled: never again
    assert outbox.of_message(WS, sent.message_id).last_error == "gave up"  # type: ignore[union-attr]
    assert service.message_status(ALICE, sent.message_id).remote.state == "failed"  # type: ignore[union-attr]


def test_a_remote_that_wants_a_token_gets_the_one_registered_and_refuses_without(
    service: Service, tmp_path: Path
) -> None:
    guarded = OutsideAgent(tmp_path, token="let-me-in").start()
    try:
        service.remotes.add(ALICE, "locked", guarded.url)  # no token: its card is public, its endpoint not
        refused = service.sending.send(ALICE, SendRequest(to="locked", text="complete this"))
        pump_until(service, lambda: _state(service, refused.message_id) == "failed", "the refused task to fail")
        assert "check its token" in (service.message_status(ALICE, refused.message_id).remote.last_error or "")  # type: ignore[union-attr]
        service.remotes.add(ALICE, "locked", guarded.url, token="let-me-in")  # again, with its token
        sent = service.sending.send(ALICE, SendRequest(to="locked", text="complete with the token"))
        done = lambda: service.message_status(ALICE, sent.message_id).task_state is TaskState.COMPLETED  # noqa: E731
        pump_until(service, done, "the task sent with the token to complete")
        assert [s["message_id"] for s in guarded.seen()] == [sent.message_id]  # the refused one never got in
    finally:
        guarded.stop()


def test_an_outside_agent_takes_part_in_a_round_by_answering_its_phase_tasks(
    service: Service, outside: OutsideAgent
) -> None:
    """Each phase prompt reaches the outside agent as an A2A task; it proposes with an artifact
    and votes in words, as an A2A agent does, and the round is decided with no person in it."""
    from callboard.requests import RoundProposal, RoundRequest

    service.remotes.add(ALICE, "echo", outside.url)
    info = service.rounds.open_round(BOB, RoundRequest(goal="pick one", agents=["echo", "alice"], quorum=2))
    service.rounds.propose(ALICE, info.id, RoundProposal(parts=[{"text": "alice's plan"}]))

    def proposed() -> bool:
        events = service.rounds.get_round(BOB, info.id).events
        return any(e.kind == "proposal" and e.agent == "echo" for e in events)

    pump_until(service, proposed, "the outside agent's proposal", timeout=scaled(60))
    from callboard.requests import RoundVote

    assert service.rounds.vote(ALICE, info.id, RoundVote(endorse="alice", reason="mine")).accepted

    def decided() -> bool:
        return service.rounds.get_round(BOB, info.id).phase == "decided"

    pump_until(service, decided, "the outside agent's vote", timeout=scaled(60))
    final = service.rounds.get_round(BOB, info.id)
    assert final.decision is not None and final.decision.choice == "alice"  # echo voted for alice too
    echo_proposal = next(e for e in final.events if e.kind == "proposal" and e.agent == "echo")
    assert "result: Round" in str(echo_proposal.content)
    echo_vote = next(e for e in final.events if e.kind == "vote" and e.agent == "echo")
    assert (echo_vote.choice, echo_vote.reason) == ("alice", "the first one")
