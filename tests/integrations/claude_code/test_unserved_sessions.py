"""Mail the sender injects into a Claude Code session Callboard does not serve is handed to a
session of the agent that the service can judge: it comes back to the mailbox when the
session's process is gone, unless the session's transcript shows its model took it. The
machine of tests/support/claude_code_machine.py (registry, live processes, stand-in sockets); the
transcripts are files as Claude Code writes them. With the real Claude Code:
tests/agent_clis_e2e/test_claude_code_reach.py."""

# ruff: noqa: F811 (the machine fixture is imported, and named as the tests' argument)
from __future__ import annotations

import json
from pathlib import Path

from callboard.config import Settings
from callboard.identity import machine_name
from callboard.integrations.claude_code import unserved_sessions
from callboard.integrations.claude_code.inject import UNSERVED_RUNTIME, confirm_injected, inject_sent
from callboard.integrations.claude_code.socket_delivery import render
from callboard.integrations.claude_code.unserved_sessions import Note
from callboard.model import RecipientStatus
from callboard.procs import process_start_time
from callboard.requests import ReadQuery, SendRequest, SurfaceQuery
from tests.support.claude_code_machine import FakeSession, Machine, machine  # noqa: F401 (the fixture)
from tests.support.waiting import wait_until


def alice_row(machine: Machine, message_id: str) -> RecipientStatus:
    (row,) = [r for r in machine.client("bob").message_status(message_id).recipients if r.agent == "alice"]
    return row


def kill(session: FakeSession) -> None:
    session.process.kill()
    session.process.wait()


def write_transcript(machine: Machine, session: FakeSession, text: str, kind: str = "user") -> None:
    """A transcript record as Claude Code writes it when a model request carries ``text``."""
    folder = machine.config / "projects" / str(session.project).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    record = {"type": kind, "message": {"role": "user", "content": text}, "sessionId": session.session_id}
    with (folder / f"{session.session_id}.jsonl").open("a") as file:
        file.write(json.dumps(record) + "\n")


def home(machine: Machine) -> Path:
    return Settings.load(machine.env).home


def test_injected_mail_is_handed_to_a_session_of_the_agent_at_that_process(machine):
    session = machine.session(machine.project("alice"))
    bob = machine.client("bob")

    sent = bob.send(SendRequest(to="alice", text="Can you review PR 12?"))
    inject_sent(bob, sent, machine.env)

    row = alice_row(machine, sent.message_id)
    assert (row.state, row.via, row.handed_to) == (
        "handed",
        "socket",
        f"alice@{machine_name(machine.env)}#{session.pid}",
    )
    (alice,) = [a for a in bob.who().agents if a.name == "alice"]
    (registered,) = alice.sessions
    assert (registered.pid, registered.runtime, registered.proc_start) == (
        session.pid,
        UNSERVED_RUNTIME,
        process_start_time(session.pid),
    )
    (note,) = unserved_sessions.notes(home(machine))
    assert (note.agent, note.session, note.pid, note.claude_sessions) == (
        "alice",
        registered.id,
        session.pid,
        (session.session_id,),
    )


def test_a_session_the_injection_registered_is_still_injected_into(machine):
    session = machine.session(machine.project("alice"))
    bob = machine.client("bob")

    inject_sent(bob, bob.send(SendRequest(to="alice", text="first")), machine.env)
    second = bob.send(SendRequest(to="alice", text="second"))
    report = inject_sent(bob, second, machine.env)

    assert [p.messages for p in report.injected] == [[second.message_id]]
    wait_until(lambda: len(session.frames()) == 2, what="two frames")


def test_mail_of_an_injected_session_that_died_comes_back_and_the_next_reader_gets_it_once(machine):
    session = machine.session(machine.project("alice"))
    bob, alice = machine.client("bob"), machine.client("alice")
    sent = bob.send(SendRequest(to="alice", text="Stop the deploy."))
    inject_sent(bob, sent, machine.env)
    handed_to = alice_row(machine, sent.message_id).handed_to

    kill(session)

    row = alice_row(machine, sent.message_id)
    assert (row.state, row.handed_to) == ("queued", None)
    assert [e.event for e in row.history][-2:] == ["handed", "returned"], row.history
    assert row.history[-2].session == row.history[-1].session == handed_to
    assert row.history[-1].detail == "its session's process is gone"
    assert [i.message.id for i in alice.read().items] == [sent.message_id]
    assert alice.read().items == []
    assert alice_row(machine, sent.message_id).state == "read"


def test_the_next_injection_confirms_what_the_transcript_shows_the_model_took(machine):
    session = machine.session(machine.project("alice"))
    bob, alice = machine.client("bob"), machine.client("alice")
    sent = bob.send(SendRequest(to="alice", text="Please rebase."))
    inject_sent(bob, sent, machine.env)
    (frame,) = wait_until(session.frames, what="a frame")
    write_transcript(machine, session, frame[-1]["message"]["content"])

    inject_sent(bob, bob.send(SendRequest(to="carol", text="unrelated")), machine.env)

    row = alice_row(machine, sent.message_id)
    assert (row.state, row.history[-1].event, row.history[-1].detail) == ("surfaced", "surfaced", "transcript")
    assert alice.surface(SurfaceQuery(via="hook")).items == []  # not again


def test_a_dead_sessions_transcript_is_read_before_its_mail_is_judged(machine):
    # The model took the mail, then the session ended: confirmed, not returned (no double delivery).
    session = machine.session(machine.project("alice"))
    bob, alice = machine.client("bob"), machine.client("alice")
    took = bob.send(SendRequest(to="alice", text="taken"))
    inject_sent(bob, took, machine.env)
    (frame,) = wait_until(session.frames, what="a frame")
    write_transcript(machine, session, frame[-1]["message"]["content"])
    missed = bob.send(SendRequest(to="alice", text="never taken"))
    inject_sent(bob, missed, machine.env)
    wait_until(lambda: len(session.frames()) == 2, what="two frames")
    kill(session)

    assert confirm_injected(bob, machine.env) == []  # the first was confirmed at the second injection
    assert unserved_sessions.notes(home(machine)) == []  # its process is gone: read a last time, forgotten
    assert alice_row(machine, took.message_id).state == "surfaced"
    assert alice_row(machine, missed.message_id).state == "queued"
    # The next session's hooks put only the mail its model never took before it.
    assert [i.message.id for i in alice.surface(SurfaceQuery(via="hook")).items] == [missed.message_id]


def test_confirming_reads_only_evidence_records_and_goes_on_without_notes(machine):
    session = machine.session(machine.project("alice"))
    bob = machine.client("bob")
    assert confirm_injected(bob, machine.env) == []  # nothing injected: nothing to read
    sent = bob.send(SendRequest(to="alice", text="queued only"))
    inject_sent(bob, sent, machine.env)
    text = render(machine.client("alice").read(ReadQuery(peek=True)).items)
    write_transcript(machine, session, text, kind="queue-operation")  # queued, no model request yet

    assert confirm_injected(bob, machine.env) == []
    assert alice_row(machine, sent.message_id).state == "handed"
    write_transcript(machine, session, text)
    assert confirm_injected(bob, machine.env) == [sent.message_id]


def test_a_note_keeps_every_claude_code_session_id_of_its_process(tmp_path):
    first = Note("default", "alice", "s1", 42, 7, ("a",))
    unserved_sessions.remember(tmp_path, first)
    unserved_sessions.remember(tmp_path, Note("default", "alice", "s1", 42, 7, ("b",)))  # after /clear
    assert unserved_sessions.notes(tmp_path) == [Note("default", "alice", "s1", 42, 7, ("a", "b"))]
    (tmp_path / "unserved" / "99-1.json").write_text("{not json")
    assert len(unserved_sessions.notes(tmp_path)) == 1  # a broken note is dropped
    unserved_sessions.forget(tmp_path, first)
    assert unserved_sessions.notes(tmp_path) == []
