"""The hub's /mcp tool calls act through ``CredentialBound``: a read_messages that waits for mail
ends once its token is revoked, and takes no mail sent after the revocation (as the REST
long-poll does). In process, on a real store and the hub's own Credentials, so that the test
knows the read is waiting before it revokes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from callboard.errors import Unauthorized
from callboard.hub.mcp_endpoint import CredentialBound
from callboard.model import Caller
from callboard.requests import ReadQuery, SendRequest
from callboard.service.credentials import Credentials
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore
from tests.support.waiting import wait_until


def test_a_waiting_tool_read_ends_at_the_revocation_and_later_mail_stays_unread(tmp_path: Path) -> None:
    service = Service(SQLiteStore(tmp_path / "hub.db"), machine="hub")
    credentials = Credentials(service.store)
    issued = credentials.issue(None, "agent", workspace="team", agent="bob")
    bob = Caller(workspace="team", agent="bob", person=False)
    client = CredentialBound(service, bob, lambda: credentials.authenticate(issued.token))
    outcome: list[object] = []

    def wait_for_mail() -> None:
        try:
            outcome.append(client.read(ReadQuery(wait=30)))
        except Unauthorized as error:
            outcome.append(error)

    reader = threading.Thread(target=wait_for_mail)
    reader.start()
    wait_until(lambda: service.events._waiters.get(("team", "bob")), 10, "the read to wait for bob's mail")
    credentials.revoke(credentials.authenticate(issued.token), issued.id)
    sent = service.sending.send(
        Caller(workspace="team", agent="alice"), SendRequest(to="bob", text="after the revocation")
    )
    reader.join(10)
    assert not reader.is_alive(), "the read went on waiting after its token was revoked"
    (ended,) = outcome
    assert isinstance(ended, Unauthorized), ended
    (item,) = service.mailbox.inbox(bob)
    assert item.message.id == sent.message_id and item.state.value in ("queued", "delivered")
    service.store.close()


@pytest.mark.parametrize("wait", [0.0, 0.5])
def test_a_tool_read_with_a_valid_token_takes_mail_as_before(tmp_path: Path, wait: float) -> None:
    service = Service(SQLiteStore(tmp_path / "hub.db"), machine="hub")
    bob = Caller(workspace="team", agent="bob")
    service.sending.send(Caller(workspace="team", agent="alice"), SendRequest(to="bob", text="hello"))
    got = CredentialBound(service, bob, lambda: None).read(ReadQuery(wait=wait))
    assert [item.message.text for item in got.items] == ["hello"] and got.unread == 0
    service.store.close()
