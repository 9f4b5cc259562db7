"""Bring a folder-per-agent mailbox tree into Callboard, each message exactly once.

The tree some people already use to connect agents::

    PATH/<agent>/<message>.json         mail to <agent>, not yet read
    PATH/<agent>/.read/<message>.json   mail <agent> has read

Each file is a JSON object with ``id``, ``from``, ``timestamp``, ``subject``, ``body`` and
(optionally) ``to``. ``scan`` reads the tree and ``plan`` decides, without writing anything,
what each file becomes (or why it is skipped); ``import_plan`` sends each message as its
sender, keyed so that importing again stores nothing twice, then marks the ``.read/`` ones
read for their recipient. The files themselves are never moved or changed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from callboard.address import parse_name
from callboard.client.base import Client
from callboard.client.local import LocalClient
from callboard.client.opening import hub_client
from callboard.config import Settings
from callboard.errors import (
    BadAddress,
    BadName,
    BadRequest,
    IdempotencyConflict,
    TooLarge,
    UnknownMessage,
    UnknownRecipient,
)
from callboard.limits import Limits
from callboard.requests import SendRequest
from callboard.service.content import check_idempotency_key, clean_subject, message_parts

READ_FOLDER = ".read"
REQUIRED_FIELDS = ("id", "from", "timestamp", "subject", "body")
KEY_PREFIX = "import"
MARK_BATCH = 500  # message ids per mark_read call
_LIMITS = Limits()  # the limits a Service enforces unless given others
MAX_FILE_BYTES = 8 * _LIMITS.message_bytes  # JSON escapes make a file larger than its message

# What a send can refuse about one message: that file is skipped and the rest go on. Anything
# else (the hub is down, the token may not act as that agent) stops the import; rerunning it
# after the fix stores nothing twice.
_REFUSALS = (BadRequest, TooLarge, BadName, BadAddress, UnknownRecipient, IdempotencyConflict)


class BadFile(ValueError):
    """A file that cannot become a message; its text is the reason shown to the user."""


@dataclass(frozen=True, slots=True)
class InboxFile:
    """One candidate file as found in the tree, before it is understood."""

    file: str  # the path below the tree's root, with '/' separators
    folder: str  # the agent folder it is in, as spelled on disk
    read: bool  # found in the folder's .read/
    content: bytes


@dataclass(frozen=True, slots=True)
class InboxMessage:
    """A file understood as a message, ready to send."""

    file: str
    id: str
    sender: str
    recipient: str
    timestamp: str | int | float  # as the file gave it
    at: datetime  # the timestamp, parsed: the import order
    subject: str | None
    body: str
    read: bool

    @property
    def idempotency_key(self) -> str:
        """Stable per original id: a send with it stores the message once, however often it runs.

        Keys are per sender; the recipient is in it too because one message sent to several
        agents appears in each of their folders with the same id."""
        key = f"{KEY_PREFIX}:{self.recipient}:{self.id}"
        if len(key) <= _LIMITS.idempotency_key_chars:
            return key
        return f"{KEY_PREFIX}:{self.recipient}:sha256:{hashlib.sha256(self.id.encode()).hexdigest()}"

    @property
    def parts(self) -> list[dict[str, Any]]:
        """The data part recording where the message came from. It must not change when the
        file moves into .read/ (a keyed send with other content is refused), so it names the
        file without its folder."""
        return [{"data": {"imported": {"id": self.id, "timestamp": self.timestamp, "file": Path(self.file).name}}}]

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "id": self.id,
            "from": self.sender,
            "to": self.recipient,
            "timestamp": self.timestamp,
            "subject": self.subject,
            "read": self.read,
        }


@dataclass(frozen=True, slots=True)
class Skipped:
    file: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Plan:
    """What an import would do: the messages in the order they are sent, and the files skipped."""

    messages: list[InboxMessage]
    skipped: list[Skipped]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "would_import": [m.to_dict() for m in self.messages],
            "skipped": [s.to_dict() for s in self.skipped],
        }


@dataclass(frozen=True, slots=True)
class Imported:
    message: InboxMessage
    message_id: str  # the id in Callboard

    def to_dict(self) -> dict[str, Any]:
        return {**self.message.to_dict(), "message_id": self.message_id}


@dataclass(slots=True)
class ImportReport:
    imported: list[Imported] = field(default_factory=list)
    already_imported: list[Imported] = field(default_factory=list)
    marked_read: list[Imported] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": False,
            "imported": [i.to_dict() for i in self.imported],
            "already_imported": [i.to_dict() for i in self.already_imported],
            "marked_read": [{"file": i.message.file, "message_id": i.message_id} for i in self.marked_read],
            "skipped": [s.to_dict() for s in self.skipped],
        }


# --- reading the tree -------------------------------------------------------------------------


def scan(root: Path) -> Plan:
    """Read the tree at ``root`` and plan its import (nothing is written)."""
    found, unreadable = read_tree(root)
    planned = plan(found)
    return Plan(planned.messages, sorted([*unreadable, *planned.skipped], key=lambda s: s.file))


def read_tree(root: Path) -> tuple[list[InboxFile], list[Skipped]]:
    """Every message file below ``root``, and the ones that could not be read.

    Agent folders are the root's visible subfolders; in each, the visible ``*.json`` files
    and those of its ``.read/``. Anything else (hidden files, other subfolders) is ignored."""
    if not root.is_dir():
        raise BadRequest(f"{str(root)!r} is not a folder: give the folder that holds one subfolder per agent.")
    found: list[InboxFile] = []
    unreadable: list[Skipped] = []
    for folder in _visible(root, dirs=True):
        places = [(folder, False)] + ([(folder / READ_FOLDER, True)] if (folder / READ_FOLDER).is_dir() else [])
        for place, read in places:
            for path in _visible(place, dirs=False):
                if not path.name.lower().endswith(".json"):
                    continue
                file = path.relative_to(root).as_posix()
                try:
                    size = path.stat().st_size
                    if size > MAX_FILE_BYTES:  # far past what one message may carry: not read at all
                        unreadable.append(Skipped(file, f"{size} bytes, too large for one message"))
                        continue
                    content = path.read_bytes()
                except OSError as error:
                    unreadable.append(Skipped(file, f"cannot be read ({error.strerror or error})"))
                    continue
                found.append(InboxFile(file, folder.name, read, content))
    return found, unreadable


def _visible(folder: Path, *, dirs: bool) -> Iterator[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError as error:
        raise BadRequest(f"cannot list {str(folder)!r} ({error.strerror or error}); check its permissions.") from None
    for entry in entries:
        if not entry.name.startswith(".") and (entry.is_dir() if dirs else entry.is_file()):
            yield entry


# --- understanding it (pure) ------------------------------------------------------------------


def plan(files: Iterable[InboxFile]) -> Plan:
    """Each file as a message or a reason to skip it; messages by timestamp, then file name.

    Two files with the same id from the same sender to the same agent are one message: the
    first (in that order) is imported and the others are skipped, saying so."""
    messages: list[InboxMessage] = []
    skipped: list[Skipped] = []
    for inbox_file in files:
        try:
            messages.append(parse_message(inbox_file))
        except BadFile as error:
            skipped.append(Skipped(inbox_file.file, str(error)))
    messages.sort(key=lambda m: (m.at, Path(m.file).name, m.file))
    first: dict[tuple[str, str], InboxMessage] = {}
    unique: list[InboxMessage] = []
    for message in messages:
        earlier = first.setdefault((message.sender, message.idempotency_key), message)
        if earlier is message:
            unique.append(message)
        else:
            skipped.append(
                Skipped(
                    message.file,
                    f"id {message.id!r} from {message.sender} to {message.recipient} is also in "
                    f"{earlier.file}, which is imported instead; remove one of the copies.",
                )
            )
    return Plan(unique, sorted(skipped, key=lambda s: s.file))


def parse_message(inbox_file: InboxFile) -> InboxMessage:
    """The message a file holds, or BadFile saying why it holds none."""
    try:
        text = inbox_file.content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadFile(f"not UTF-8 text (byte {error.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadFile(f"not JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    if not isinstance(document, dict):
        raise BadFile(f"not a JSON object (a {_json_type(document)})")
    missing = [name for name in REQUIRED_FIELDS if name not in document]
    if missing:
        raise BadFile(f"missing field{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)}")
    message_id = _string(document, "id")
    if not message_id.strip():
        raise BadFile("'id' is empty")
    sender = _name(_string(document, "from"), "sender ('from')")
    recipient = _name(inbox_file.folder, "agent folder name")
    to = document.get("to")
    if to is not None:
        addressed = _string(document, "to")
        if addressed.strip().startswith("#"):
            raise BadFile(
                f"'to' is channel {addressed.strip()!r}, but the file is in agent {recipient}'s folder; "
                "only direct messages are imported"
            )
        if _name(addressed, "recipient ('to')") != recipient:
            raise BadFile(f"'to' is {addressed!r} but the file is in agent {recipient}'s folder; which is it?")
    timestamp = document["timestamp"]
    subject = document["subject"]
    if subject is not None and not isinstance(subject, str):
        raise BadFile(f"'subject' must be a string or null, not a {_json_type(subject)}")
    body = _string(document, "body")
    message = InboxMessage(
        file=inbox_file.file,
        id=message_id,
        sender=sender,
        recipient=recipient,
        timestamp=timestamp,
        at=_moment(timestamp),
        subject=subject,
        body=body,
        read=inbox_file.read,
    )
    _check_sendable(message)
    return message


def _string(document: Mapping[str, Any], name: str) -> str:
    value = document[name]
    if not isinstance(value, str):
        raise BadFile(f"{name!r} must be a string, not a {_json_type(value)}")
    return value


def _name(text: str, what: str) -> str:
    try:
        return parse_name(text, what)
    except BadName as error:
        raise BadFile(error.message.rstrip(".")) from None


def _moment(timestamp: Any) -> datetime:
    """An ISO 8601 date-time (UTC when it names no offset) or Unix seconds."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, (str, int, float)):
        raise BadFile(f"'timestamp' must be an ISO 8601 string or Unix seconds, not a {_json_type(timestamp)}")
    try:
        if isinstance(timestamp, str):
            moment = datetime.fromisoformat(timestamp.strip())
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        return datetime.fromtimestamp(timestamp, UTC)
    except (ValueError, OverflowError, OSError):
        raise BadFile(f"'timestamp' {timestamp!r} is not an ISO 8601 date-time or Unix seconds") from None


def _check_sendable(message: InboxMessage) -> None:
    """Refuse here what a send would refuse, so a dry run lists it too (default limits)."""
    try:
        clean_subject(message.subject, _LIMITS)
        message_parts(message.body, message.parts, _LIMITS)
        check_idempotency_key(message.idempotency_key, _LIMITS)
    except (BadRequest, TooLarge) as error:
        raise BadFile(error.message.rstrip(".")) from None


_JSON_TYPES: dict[type, str] = {str: "string", list: "list", dict: "object"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


# --- importing --------------------------------------------------------------------------------

AgentClient = Callable[[str], Client]
"""A client acting as the named agent of the workspace being imported into."""


def import_plan(planned: Plan, client_for: AgentClient) -> ImportReport:
    """Send each planned message as its sender (keyed: a repeat stores nothing), then mark the
    ``.read/`` ones read for their recipients. A message a send refuses is skipped."""
    report = ImportReport(skipped=list(planned.skipped))
    to_mark: dict[str, list[Imported]] = {}
    for message in planned.messages:
        try:
            result = client_for(message.sender).send(
                SendRequest(
                    to=message.recipient,
                    text=message.body,
                    subject=message.subject,
                    parts=message.parts,
                    idempotency_key=message.idempotency_key,
                ),
            )
        except IdempotencyConflict:
            report.skipped.append(
                Skipped(
                    message.file,
                    f"id {message.id!r} from {message.sender} was imported before with other content; "
                    "it is not imported again",
                )
            )
            continue
        except _REFUSALS as error:
            report.skipped.append(Skipped(message.file, f"{error.code}: {error.message}"))
            continue
        done = Imported(message, result.message_id)
        (report.already_imported if result.duplicate else report.imported).append(done)
        if message.read:
            to_mark.setdefault(message.recipient, []).append(done)
    for recipient, items in to_mark.items():
        for start in range(0, len(items), MARK_BATCH):
            _mark_read(client_for(recipient), items[start : start + MARK_BATCH], report)
    report.skipped.sort(key=lambda s: s.file)
    return report


def _mark_read(client: Client, items: Sequence[Imported], report: ImportReport) -> None:
    """Mark these read; one no longer in the mailbox (its agent was deleted since an earlier
    import) is reported, and the rest are marked all the same."""
    try:
        client.mark_read([i.message_id for i in items])
    except UnknownMessage as error:
        missing = set(_as_list(error.details.get("missing")))
        if not missing:  # a hub's error carries no details: find the missing one by one
            present = [i for i in items if _marks(client, i)]
        else:
            present = [i for i in items if i.message_id not in missing]
            if present:
                client.mark_read([i.message_id for i in present])
        gone = [i for i in items if i not in present]
        report.skipped += [
            Skipped(
                i.message.file,
                f"message {i.message_id} (imported earlier) is no longer in {i.message.recipient}'s mailbox; "
                "not marked read",
            )
            for i in gone
        ]
        items = present
    report.marked_read += items


def _marks(client: Client, item: Imported) -> bool:
    try:
        client.mark_read([item.message_id])
    except UnknownMessage:
        return False
    return True


def _as_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


class AgentClients:
    """Clients acting as any agent of the configured workspace, for one import: on the
    embedded store one store shared by all, on a hub one connection per agent with this
    machine's credential (which must be allowed to act as each of them)."""

    def __init__(self, settings: Settings, env: Mapping[str, str] = os.environ) -> None:
        self.settings = settings
        self.env = env
        self._local: LocalClient | None = None
        self._clients: dict[str, Client] = {}

    def __call__(self, agent: str) -> Client:
        agent = parse_name(agent, "agent name")
        client = self._clients.get(agent)
        if client is None:
            client = self._clients[agent] = self._open(agent)
        return client

    def _open(self, agent: str) -> Client:
        settings = self.settings
        if settings.uses_hub:
            return hub_client(settings, agent, self.env)
        if self._local is None:
            self._local = LocalClient.open(settings, agent=agent, env=self.env)
            return self._local
        return self._local.as_agent(agent)

    def close(self) -> None:
        if self.settings.uses_hub:
            for client in self._clients.values():
                client.close()
        elif self._local is not None:
            self._local.close()  # the others share its store
        self._clients.clear()
        self._local = None

    def __enter__(self) -> AgentClients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
