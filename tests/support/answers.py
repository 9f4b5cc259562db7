"""What the service tests pick out of the service's answers: message ids read, one recipient's
outcome of a send or row of a status, one agent of ``who``."""

from __future__ import annotations

from callboard.client.local import LocalClient
from callboard.model import (
    AgentPresence,
    MessageStatus,
    ReadResult,
    RecipientOutcome,
    RecipientStatus,
    SendResult,
    WhoReport,
)
from callboard.requests import ReadQuery


def ids(result: ReadResult) -> list[str]:
    return [item.message.id for item in result.items]


def everything(client: LocalClient) -> list[str]:
    """Every message in the client's mailbox, read or not, without marking anything."""
    return ids(client.read(ReadQuery(peek=True, after=0, limit=1000)))


def outcome(result: SendResult, address: str) -> RecipientOutcome:
    (found,) = [o for o in result.recipients if o.address == address]
    return found


def row(status: MessageStatus, address: str) -> RecipientStatus:
    (found,) = [r for r in status.recipients if r.address == address]
    return found


def presence(report: WhoReport, name: str) -> AgentPresence:
    (found,) = [a for a in report.agents if a.name == name]
    return found
