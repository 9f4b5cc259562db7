"""Live delivery into the Claude Code session that started this ``callboard mcp``.

Claude Code gives each stdio MCP server it starts its session's messaging socket
(``CLAUDE_CODE_MESSAGING_SOCKET``, with a per-session child token and the session id). A frame
from the session's own child is taken as the session's own: an idle session starts a turn
with it, a busy one gets it after its current tool call. So while the server runs, a injector
thread waits on the agent's mailbox and writes each new message there, fenced as another
agent's words, and marks it handed to the session by "socket" — once: the hooks and the waiter
then leave it. The session took the frame, its model has not seen it yet (a busy session keeps
it until its tool call ends): ``transcript_watch`` marks it surfaced when the session's
transcript records the turn that carried it, and mail the session never got to its model goes
back to the mailbox when the session ends (``handing``).

The socket is connected before any mail is taken, so mail is never marked handed to a
session that is gone: when the socket cannot be reached the injector logs one line and stops,
and the hooks carry the mail. When the session's ``crossSessionInbound`` setting holds or
refuses peer messages, it leaves the mail to them too. Without a socket (an older Claude Code,
``CLAUDE_CODE_HARBOR_KITE=0``, any other client) there is no injector.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from callboard.client.base import Client
from callboard.config import Settings
from callboard.errors import CallboardError
from callboard.fence import PREAMBLE, fenced, fenced_mail
from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.integrations.claude_code.sessions import MessagingSocketUnavailable
from callboard.integrations.claude_code.socket_receipts import ReceiptListener
from callboard.integrations.hooks.state import DeliveryClaim, take_injector_lock
from callboard.limits import DELIVERY_ERROR_CHARS
from callboard.model import DeliveryState, MailItem
from callboard.procs import process_alive, process_start_time
from callboard.requests import ReadQuery, SurfaceQuery

# Receipts after which the session will not take our frames: leave its mail to the hooks.
REFUSING_RECEIPTS = frozenset({"refused", "denied"})

log = logging.getLogger("callboard.socket")

WAIT_SECONDS = 2.0  # one wait on the mailbox; also bounds how long stop() takes
RETRY_SECONDS = 5.0  # after the mailbox failed (a hub away for a moment)
BATCH = 20  # messages taken, and written as one frame, at a time
# What the text may take of a frame's line, leaving room for the rest of the frame.
FRAME_BUDGET = claude_sessions.MAX_LINE_CHARS - 16 * 1024


@dataclass(frozen=True, slots=True)
class SessionSocket:
    """The messaging socket of the Claude Code session that is this process's parent."""

    path: str
    parent: int
    token: str | None
    session_id: str | None  # from the environment; the registry's, when it has one, wins
    project_dir: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, parent: int | None = None) -> SessionSocket | None:
        """The parent session's socket, or None: no socket in the environment, or one that is
        not the parent's (inherited through another program, such as a Codex run from Claude
        Code's shell: its mail is not that session's)."""
        env = os.environ if env is None else env
        path = env.get(claude_sessions.SOCKET_ENV, "").strip()
        if not path:
            return None
        parent = os.getppid() if parent is None else parent
        registered = claude_sessions.session_of(parent, env)
        if registered is not None:
            owned = registered.socket_path == path
        else:  # not registered yet (or elsewhere): Claude Code names its socket by its pid
            owned = Path(path).name == f"{parent}.sock"
        if not owned:
            log.info("the messaging socket %s is not this process's parent's: not injecting mail there", path)
            return None
        project = env.get("CLAUDE_PROJECT_DIR") or (registered.cwd if registered else "") or os.getcwd()
        return cls(
            path=path,
            parent=parent,
            token=env.get(claude_sessions.TOKEN_ENV) or None,
            session_id=env.get(claude_sessions.SESSION_ID_ENV) or None,
            project_dir=Path(project),
        )

    def current_session_id(self) -> str | None:
        """The session id to pin a frame to: the registry's (it follows /clear and resume)."""
        registered = claude_sessions.session_of(self.parent)
        return registered.session_id if registered is not None else self.session_id

    def takes_peer_messages(self) -> bool:
        return claude_sessions.inbound_policy(self.project_dir) not in ("hold", "refuse")


def render(items: Sequence[MailItem]) -> str:
    """The frame's text: the messages fenced. When that is too long for one frame, a message
    too long for its share is named instead, with where to read it."""
    text = fenced_mail(items)
    if claude_sessions.content_chars(text) <= FRAME_BUDGET:
        return text
    share = FRAME_BUDGET // len(items)
    shown = [
        one
        if claude_sessions.content_chars(one := fenced(item.message, item.task_state)) < share
        else f"from: {item.message.sender}\nid: {item.message.id}\n(too long to show here: read it with read_messages)"
        for item in items
    ]
    return "\n\n".join([PREAMBLE, *shown])


class SocketInjector:
    """Writes the agent's new mail into its Claude Code session until stopped, or until the
    socket fails (then it logs one line on stderr and leaves the mail to the hooks)."""

    def __init__(
        self, client: Client, target: SessionSocket, *, wait: float = WAIT_SECONDS, home: Path | None = None
    ) -> None:
        self._client = client
        self.target = target
        self._wait = wait
        self._home = home  # where the session's hooks keep their state: the waiter leaves mail to us
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="callboard socket injector", daemon=True)
        self.injected = 0  # messages written
        self.left_to_hooks = 0  # new messages seen but not written: the session holds or refuses them
        self.problem: str | None = None  # why it stopped injecting, reported with the session's heartbeats
        self.refused: str | None = None  # the session refused (or denied) a frame: the hooks carry its mail
        self._receipts: ReceiptListener | None = None
        self._agent_cli: tuple[int, int | None] = (os.getppid(), None)  # (pid, start): the session's process

    @classmethod
    def for_this_process(cls, client: Client, env: Mapping[str, str] | None = None) -> SocketInjector | None:
        """A injector into the session that started this process, or None when there is none."""
        target = SessionSocket.from_env(env)
        if target is None:
            return None
        return cls(client, target, home=Settings.load(os.environ if env is None else env).home)

    def start(self) -> None:
        self._thread.start()

    def halt(self) -> None:
        """Take no more mail, at once (the wait ends within one wait): the first step of the
        server's ending, before the session's end gives back what it held (taken again here, it
        would go to a session that is gone)."""
        self._stopping.set()

    def stop(self) -> None:
        """Stop waiting (within one wait); a frame being written is finished first."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._wait + claude_sessions.CONNECT_TIMEOUT_SECONDS)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        # While this runs, the session's waiter (hooks.waiter) leaves its mail to the socket.
        parent = os.getppid()
        start = process_start_time(parent)
        self._agent_cli = (parent, start)
        lock = take_injector_lock(self._home, parent, start) if self._home else None
        # Held while every new message goes into the socket: the per-turn hooks then exit at once.
        claim = DeliveryClaim(self._home, parent, start) if lock is not None and self._home else None
        receipts = ReceiptListener(self.target.path, self._on_receipt)
        self._receipts = receipts if receipts.start() else None
        try:
            self._inject_until_stopped(claim)
        finally:
            if self._receipts is not None:
                self._receipts.stop()
            if claim is not None:
                claim.hold(False)
            if lock is not None:
                os.close(lock)

    def _on_receipt(self, message_ids: Sequence[str], status: str, reason: str | None) -> None:
        """The session reported on a frame: recorded; mail it refused goes back to the mailbox
        (the service's rule), and this injector leaves the session's mail to its hooks from then
        on, or the mail would come straight back into the socket."""
        if status in REFUSING_RECEIPTS:
            self.refused = f"the session {status} the mail written into its messaging socket"
        self._client.record_receipt(message_ids, status, reason[:DELIVERY_ERROR_CHARS] if reason else None)

    def _inject_until_stopped(self, claim: DeliveryClaim | None = None) -> None:
        position: int | None = None  # how far the look at new mail went while the session took none
        wait = 0.0  # first, at once: the mail that waited before we started
        while not self._stopping.is_set():
            try:
                takes = self._takes()
                if claim is not None:
                    claim.hold(takes)  # a session that holds or refuses peer messages needs its hooks
                if takes:
                    # The look every wake takes (the waiter's, a runner's): mail waiting to be put
                    # before the agent, by its state. So mail returned to the mailbox, which keeps
                    # its old place in the sequence, wakes the session as new mail does. A peek,
                    # so nothing is taken before the socket is known to be there.
                    waiting = self._client.surface(SurfaceQuery(via="socket", peek=True, limit=1, wait=wait)).items
                    if waiting and self._takes():  # still: a receipt may have refused meanwhile
                        self._inject_waiting()
                else:
                    # Left to the hooks: counted once each, as it comes (past the last look).
                    seen = self._client.read(ReadQuery(peek=True, after=position, limit=BATCH, wait=wait))
                    position = seen.cursor
                    self.left_to_hooks += sum(item.state.rank < DeliveryState.handed.rank for item in seen.items)
                wait = self._wait
            except MessagingSocketUnavailable as error:
                log.warning("stopped injecting mail into the Claude Code session: %s", error.message)
                self.problem = f"its messaging socket failed ({error.message}); mail reaches it only through its hooks"
                return
            except CallboardError as error:
                if self._stopping.is_set():
                    return
                log.warning("mailbox unavailable (%s: %s); trying again", error.code, error.message)
                self._stopping.wait(RETRY_SECONDS)
            except Exception as error:  # never take the MCP server down; say why, once
                if not self._stopping.is_set():
                    log.warning("stopped injecting mail into the Claude Code session: %r", error)
                    self.problem = f"injecting into its messaging socket failed ({error!r}); mail reaches it only through its hooks"
                return

    def _takes(self) -> bool:
        """Whether the session takes our frames now. One whose setting holds or refuses peer
        messages (Claude Code reloads it live, so it is read each time), or that refused a frame,
        gets its mail through its hooks. None is taken once this injector is stopping, or once
        the agent CLI it serves has died: the session's end gives back what it held, for the
        agent's next session (the keeper ends it as it sees the CLI gone, before our ending)."""
        if self._stopping.is_set() or self.refused is not None:
            return False
        return process_alive(*self._agent_cli) and self.target.takes_peer_messages()

    def _inject_waiting(self) -> None:
        """Write all mail neither read nor surfaced yet, a batch per frame."""
        while not self._stopping.is_set():
            taken = write_batch(
                self._client,
                self.target.path,
                token=self.target.token,
                session_id=self.target.current_session_id(),
                receipts=self._receipts,
            )
            self.injected += len(taken)
            if len(taken) < BATCH:
                return


def write_batch(
    client: Client,
    socket_path: str,
    *,
    token: str | None,
    session_id: str | None,
    timeout: float = claude_sessions.CONNECT_TIMEOUT_SECONDS,
    receipts: ReceiptListener | None = None,
) -> list[MailItem]:
    """Write up to BATCH of the agent's mail, neither read, handed nor surfaced yet, into the
    session listening on ``socket_path`` as one frame, marked handed by "socket"; the messages
    written (none: nothing was waiting). The socket is connected before the mail is taken: mail
    is marked handed only to a session that is there to get it."""
    connection = claude_sessions.connect(socket_path, timeout=timeout)
    try:
        taken = client.surface(SurfaceQuery(via="socket", limit=BATCH))
    except BaseException:
        connection.close()
        raise
    if not taken.items:
        connection.close()  # another path took it first
        return []
    frame_id = receipts.new_frame([item.message.id for item in taken.items]) if receipts else None
    data = claude_sessions.encode_frame(
        render(taken.items),
        token=token,
        session_id=session_id,
        frame_id=frame_id,
        reply_to=receipts.address if receipts else None,
    )
    claude_sessions.send_frame(connection, data, socket_path)
    return taken.items
