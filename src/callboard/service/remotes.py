"""Outside A2A agents: registered by their card under a name, and mail to them made a task.

An outside agent is an agent of the workspace (it has a name and a mailbox, and shows in
``agent list`` and ``who``) whose mail is not read by a session but sent, as an A2A task, by a
pump (``a2a/remote/pump``): a send to it stores the mail, the task (requester: the sender,
worker: the outside agent) and the outbox row in one transaction, and says ``queued`` until
the remote took it. Its answers come back as the task's updates, mail from it in the sender's
thread. A reply in that thread while its task waits on the sender is a follow-up of the same
task. Its card is fetched by a ``CardSource`` the faces give (the service speaks no A2A itself).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from callboard.address import parse_name, parse_remote_address
from callboard.errors import (
    AlreadyExists,
    BadAddress,
    BadRequest,
    BadWebhook,
    RemoteUnreachable,
    UnknownAgent,
    UnknownRecipient,
)
from callboard.limits import REMOTE_TOKEN_CHARS, THREAD_TASKS
from callboard.model import Caller, Message, RecipientOutcome, built, new_id
from callboard.remotes import OutsideCard, RemoteAgent
from callboard.service.directory import Directory
from callboard.service.from_memory import memory_only, refresh_ahead, store_needed
from callboard.service.identity_gate import AgentCaller, as_agent
from callboard.service.push_targets import check_webhook
from callboard.service.task_changes import move_write, new_task_write
from callboard.store.base import Store
from callboard.store.records import NewRemoteSend, TaskQuery, TaskWrite
from callboard.tasks import WAITING_ON_REQUESTER, Task, requester_answers

# Fetches and checks the card at a URL, with a bearer token or none; raises a CallboardError
# (RemoteUnreachable, BadRemoteAnswer, ...) with one clear sentence. Given by the faces.
CardSource = Callable[[str, str | None], OutsideCard]
# How many tasks of a thread are looked through for one that waits on its sender.

# The outside agents' names of a workspace are kept in memory, so that a send to agents with
# no live session (most mail) need not ask the store whether one of them is an outside agent.
# They are read again when the directory learns of an agent another process made (an outside
# agent registered elsewhere is one), and at least this often (other processes' changes).
REMOTE_NAMES_FRESH_SECONDS = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class RemoteNames:
    """A workspace's outside agents' names as the store listed them."""

    learned: int  # ``Directory.agents_learned`` when they were read
    read_at: float  # time.monotonic()
    names: frozenset[str] | set[str]

    def stale(self, learned: int) -> bool:
        return learned != self.learned or time.monotonic() - self.read_at >= REMOTE_NAMES_FRESH_SECONDS

    @property
    def ageing(self) -> bool:
        """Past half its freshness: time to read them again (``from_memory.refresh_ahead``)."""
        return time.monotonic() - self.read_at >= REMOTE_NAMES_FRESH_SECONDS / 2


class Remotes:
    """The outside agents of every workspace of one store, and what mail to them writes."""

    def __init__(
        self,
        store: Store,
        directory: Directory,
        clock: Callable[[], datetime],
        *,
        card_source: CardSource | None = None,
        allow_private: bool = True,
    ) -> None:
        """``allow_private``: outside agents may live on loopback and private addresses (the
        embedded store, on one's own machine; a hub is told so by its operator)."""
        self.store = store
        self.directory = directory
        self.clock = clock
        self.card_source = card_source
        self.allow_private = allow_private
        self._names: dict[str, RemoteNames] = {}  # by workspace (see ``remote_among``)

    # --- the registry ----------------------------------------------------------------------

    def add(self, caller: Caller, name: str, url: str, token: str | None = None) -> RemoteAgent:
        """Register the agent whose card is at ``url`` as ``name`` (again: its card fetched anew)."""
        caller = as_agent(caller)
        name = parse_name(name, "agent name")
        url = self._checked_url(url)
        if token is not None and (not token.strip() or len(token) > REMOTE_TOKEN_CHARS or "\n" in token):
            raise BadRequest(f"the remote's token must be one line of 1-{REMOTE_TOKEN_CHARS} characters.")
        known = self.store.remotes.get_remote_agent(caller.workspace, name)
        if known is None and self.directory.agent_exists(caller.workspace, name):
            raise AlreadyExists(
                f"an agent named {name} exists and is not an outside agent; choose another name for the remote."
            )
        same_url = self.store.remotes.remote_agent_by_url(caller.workspace, url)
        if same_url is not None and same_url.name != name:
            raise AlreadyExists(f"{url} is registered already, as {same_url.name}; remove that first to rename it.")
        return self._register(caller, name, url, token, added_at=known[0].added_at if known else None)

    def remove(self, caller: Caller, name: str) -> RemoteAgent:
        """Forget the outside agent and its mailbox (what was not yet sent to it fails)."""
        caller = as_agent(caller)
        remote = self.get(caller, name)
        unsent = f"the outside agent {remote.name} was removed before this was sent."
        self.store.remotes.delete_remote_agent(caller.workspace, remote.name, unsent)
        self._names.pop(caller.workspace, None)
        self.directory.delete_agent(caller, remote.name, force=True)
        return remote

    def get(self, caller: Caller, name: str) -> RemoteAgent:
        name = parse_name(name, "agent name")
        found = self.store.remotes.get_remote_agent(caller.workspace, name)
        if found is None:
            raise UnknownAgent(
                f"no outside agent named {name}; 'callboard agent list' marks the remote ones, "
                "'callboard agent add-remote NAME URL' adds one."
            )
        return found[0]

    def credentials(self, workspace: str, name: str) -> tuple[RemoteAgent, str | None] | None:
        """The outside agent and its token, for the pump that sends to it (never for a face)."""
        return self.store.remotes.get_remote_agent(workspace, name)

    def list(self, caller: Caller) -> list[RemoteAgent]:
        return self.store.remotes.list_remote_agents(caller.workspace)

    def name_for_url(self, caller: Caller, url: str) -> str:
        """The name of the agent at ``url`` (an ``a2a:`` address): registered on first use, under
        its card's name (made unique in the workspace)."""
        url = self._checked_url(url)
        known = self.store.remotes.remote_agent_by_url(caller.workspace, url)
        if known is not None:
            return known.name
        if not caller.person:
            # As for a name: an agent token's send creates no agent (and makes no fetch).
            raise UnknownRecipient(
                f"no outside agent at {url} is registered (an agent token registers none by sending); "
                "a person adds it with 'callboard agent add-remote NAME URL'."
            )
        card = self._fetch(url, None)
        return self._register(caller, self._free_name(caller.workspace, card.name), url, None, card=card).name

    # --- mail to them ----------------------------------------------------------------------

    def remote_among(self, caller: Caller, agents: Sequence[str]) -> RemoteAgent | None:
        """The outside agent among a send's recipients (agents with no live session), if any. A
        send to one goes to it alone: its answer is a task of the sender's, in one thread.
        Asks the store only when one of them is an outside agent (or the names kept are stale)."""
        if not agents:
            return None
        names = self._names.get(caller.workspace)
        if names is None or names.stale(self.directory.agents_learned):
            store_needed()
            names = self._list_names(caller.workspace)
        elif names.ageing and memory_only():
            refresh_ahead((self, "remotes", caller.workspace), lambda: self._list_names(caller.workspace))
        among = [agent for agent in agents if agent in names.names]
        if not among:
            return None
        store_needed()
        found = self.store.remotes.list_remote_agents(caller.workspace, among)
        return found[0] if found else None

    def _list_names(self, workspace: str) -> RemoteNames:
        learned, began = self.directory.agents_learned, time.monotonic()
        names = RemoteNames(learned, began, {r.name for r in self.store.remotes.list_remote_agents(workspace)})
        self._names[workspace] = names
        return names

    def task_for(
        self, caller: AgentCaller, remote: RemoteAgent, thread_id: str | None
    ) -> tuple[str, Callable[[Message], TaskWrite]]:
        """The task a send to ``remote`` carries, and its write (with the outbox row): the
        follow-up of the sender's task in that thread that waits on it, else a new task."""
        waiting = self._waiting_task(caller, remote, thread_id) if thread_id else None
        if waiting is not None:
            state = requester_answers(waiting.id, waiting.state)

            def follow_up(message: Message) -> TaskWrite:
                write = move_write(waiting, message, state, status_parts=None)
                return dataclasses.replace(write, remote_send=_outbox(message, remote))

            return waiting.id, follow_up
        task_id = new_id()

        def new_task(message: Message) -> TaskWrite:
            write = new_task_write(message, task_id=task_id, worker=remote.name, metadata=None, a2a_message_id=None)
            return dataclasses.replace(write, remote_send=_outbox(message, remote))

        return task_id, new_task

    @staticmethod
    def sent_out(write: Callable[[Message], TaskWrite], remote: RemoteAgent) -> Callable[[Message], TaskWrite]:
        """A task's own mail to an outside agent (a task opened for it through A2A or MCP, a
        follow-up, a cancel), with the outbox row that makes the pump send it."""

        def with_outbox(message: Message) -> TaskWrite:
            return dataclasses.replace(write(message), remote_send=_outbox(message, remote))

        return with_outbox

    @staticmethod
    def outcome(outcome: RecipientOutcome, remote: RemoteAgent) -> RecipientOutcome:
        """What a send did for an outside agent: queued, never more, until the remote took it."""
        return outcome.model_copy(
            update={
                "state": "queued",
                "new_agent": False,
                "remote": remote.url,
                "reason": f"queued for the outside A2A agent {remote.name} ({remote.url}): it is sent as an A2A "
                "task, and its answers come back as mail in this thread ('callboard status' shows how it goes).",
            }
        )

    # --- helpers ---------------------------------------------------------------------------

    def _waiting_task(self, caller: AgentCaller, remote: RemoteAgent, thread_id: str) -> Task | None:
        query = TaskQuery(workspace=caller.workspace, agent=caller.agent, limit=THREAD_TASKS, context_id=thread_id)
        tasks, _ = self.store.tasks.list_tasks(query)
        return next(
            (
                t
                for t in tasks
                if t.worker == remote.name and t.requester == caller.agent and t.state in WAITING_ON_REQUESTER
            ),
            None,
        )

    def _register(
        self,
        caller: Caller,
        name: str,
        url: str,
        token: str | None,
        *,
        card: OutsideCard | None = None,
        added_at: datetime | None = None,
    ) -> RemoteAgent:
        card = card or self._fetch(url, token)
        now = self.clock()
        remote = built(
            RemoteAgent,
            workspace=caller.workspace,
            name=name,
            url=url,
            description=card.description or None,
            streaming=card.streaming,
            has_token=token is not None,
            card=card.card,
            added_at=added_at or now,
            card_fetched_at=now,
        )
        self.store.remotes.add_remote_agent(remote, token)
        self._names.pop(caller.workspace, None)
        self.directory.agents_changed(caller.workspace, [name], added=True)
        return remote

    def _fetch(self, url: str, token: str | None) -> OutsideCard:
        if self.card_source is None:
            raise RemoteUnreachable(
                f"this process cannot fetch the card at {url}: register the outside agent with "
                "'callboard agent add-remote NAME URL' first."
            )
        return self.card_source(url, token)

    def _checked_url(self, url: str) -> str:
        text = url.strip()
        checked = parse_remote_address(text if text.lower().startswith("a2a:") else "a2a:" + text).url
        try:
            check_webhook(checked, allow_private=self.allow_private)
        except BadWebhook as error:
            raise BadAddress(error.message.replace("webhook", "outside agent's"), address=checked) from None
        return checked

    def _free_name(self, workspace: str, card_name: str) -> str:
        """A name for an agent known by its card's name: that name made valid, and unique."""
        base = re.sub(r"[^a-z0-9._-]+", "-", card_name.lower()).strip("._-")[:56] or "remote"
        name, n = base, 1
        while self.directory.agent_exists(workspace, name):
            n += 1
            name = f"{base}-{n}"
        return name


def _outbox(message: Message, remote: RemoteAgent) -> NewRemoteSend:
    return NewRemoteSend(message_id=message.id, remote=remote.name, created_at=message.created_at)
