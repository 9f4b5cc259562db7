"""Reading a Claude Code transcript for the turns that carried handed mail to the model
(records as 2.1.332 writes them: shared/reference and tests/agent_clis_e2e/test_claude_code_states)."""

from __future__ import annotations

import json
from pathlib import Path

from callboard.client.local import LocalClient
from callboard.fence import fenced_mail
from callboard.integrations.claude_code.transcript_watch import (
    TranscriptWatcher,
    fenced_ids,
    ids_in_tail,
    transcript_of,
)
from callboard.model import Caller, MailItem
from callboard.requests import SendRequest, SurfaceQuery
from callboard.service.door import Service
from callboard.store.opening import open_store

WS = "acme"


def clients(tmp_path: Path) -> tuple[LocalClient, LocalClient]:
    service = Service(open_store(str(tmp_path / "callboard.db")), machine="farhost")
    bob = LocalClient(service, Caller(workspace=WS, agent="bob"))
    bob.create_agent("bob")
    alice = LocalClient(service, Caller(workspace=WS, agent="alice"))
    session = alice.register_session(runtime="claude-code", machine="farhost", pid=4242)
    return bob, LocalClient(service, Caller(workspace=WS, agent="alice", session_id=session.id))


def shown(items: list[MailItem]) -> str:
    return fenced_mail(items)


def test_only_records_that_take_text_to_the_model_are_evidence(tmp_path: Path):
    bob, alice = clients(tmp_path)
    bob.send(SendRequest(to="alice", text="hello"))
    (item,) = alice.surface(SurfaceQuery(via="socket")).items
    text = shown([item])
    assert fenced_ids({"type": "attachment", "attachment": {"type": "queued_command", "prompt": text}}) == [
        item.message.id
    ]
    assert fenced_ids({"type": "api-request-blob", "message": {"role": "system", "content": [{"text": text}]}})
    assert fenced_ids({"type": "user", "message": {"role": "user", "content": text}})
    assert fenced_ids({"type": "queue-operation", "operation": "enqueue", "content": text}) == []  # queued only
    assert fenced_ids({"type": "assistant", "message": {"content": [{"text": text}]}}) == []  # the model's words
    # An id line with no fence of that message (a body naming another id) proves nothing.
    forged = f"id: {item.message.id}\n----- BEGIN MESSAGE 0123456789ab -----"
    assert fenced_ids({"type": "user", "message": {"content": forged}}) == []


def test_the_watcher_confirms_handed_mail_once_its_turn_is_recorded(tmp_path: Path):
    bob, alice = clients(tmp_path)
    sent = bob.send(SendRequest(to="alice", text="hello"))
    (item,) = alice.surface(SurfaceQuery(via="socket")).items
    text = shown([item])
    home = tmp_path / "home"
    transcript = home / ".claude" / "projects" / "-x-proj" / "sess-9.jsonl"
    transcript.parent.mkdir(parents=True)
    env = {"HOME": str(home)}
    assert transcript_of("sess-9", env) is None
    transcript.write_text(json.dumps({"type": "queue-operation", "operation": "enqueue", "content": text}) + "\n")
    assert transcript_of("sess-9", env) == transcript
    watcher = TranscriptWatcher(alice, parent=999_999_999, session_id="sess-9")
    watcher._path = transcript  # found by the registry in a real session
    assert watcher.check() == []
    record = json.dumps({"type": "attachment", "attachment": {"type": "queued_command", "prompt": text}})
    with transcript.open("a") as file:
        file.write(record[:40])  # a record half written: nothing yet
    assert watcher.check() == []
    with transcript.open("a") as file:
        file.write(record[40:] + "\n")
    assert watcher.check() == [sent.message_id]
    (row,) = bob.message_status(sent.message_id).recipients
    assert (row.state, row.history[-1].event, row.history[-1].detail) == ("surfaced", "surfaced", "transcript")
    assert ids_in_tail(transcript) == [sent.message_id]
    assert ids_in_tail(transcript, size=len(record) // 2) == []  # a cut record is not read
