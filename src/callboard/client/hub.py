"""The Client interface over HTTP: a hub's REST API, as one agent (``HubClient``).

It sends its credential as a bearer token, the agent the identity rule names in
``X-Callboard-Agent`` and the session it acts in (by id or by its process's lineage); the hub
decides what the credential allows. httpx loads with the first request, so the embedded store's
callers (hooks) never pay for it.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, TypeAdapter

from callboard.client.backoff import Backoff
from callboard.client.base import NOTHING_AFTER_SEND, AfterSend, task_sent
from callboard.client.hub_errors import answer_error, transport_error, unverified_certificate
from callboard.config import hub_urls
from callboard.errors import BadRequest, HubUnavailable
from callboard.headers import (
    AGENT_HEADER,
    PROCESS_HEADER,
    SESSION_HEADER,
    UNREAD_HEADER,
    WORKSPACE_HEADER,
    process_header,
)
from callboard.identity import SessionHint, acting_pid, machine_name
from callboard.leases import Lease, LeaseTaken
from callboard.model import (
    AckResult,
    Agent,
    AuditEntry,
    Channel,
    ChannelMember,
    DeletedAgent,
    MailItem,
    MarkResult,
    MessageStatus,
    Part,
    Reach,
    ReadResult,
    SendResult,
    Session,
    WhoAmI,
    WhoReport,
    Workspace,
)
from callboard.procs import process_start_time
from callboard.remotes import RemoteAgent
from callboard.requests import (
    InboxQuery,
    LeaseCheck,
    LeaseRelease,
    LeaseRenewal,
    LeaseRequest,
    ReadQuery,
    RoundProposal,
    RoundRequest,
    RoundVote,
    SendRequest,
    SurfaceQuery,
    TaskListQuery,
    TaskRequest,
)
from callboard.rounds import RoundActed, RoundInfo
from callboard.runners import RunnerReport
from callboard.tasks import Task, TaskArtifact, TaskPage, TaskSent, TaskState
from callboard.tokens import IssuedToken, TokenInfo

if TYPE_CHECKING:
    import ssl

    import httpx


M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 5.0  # a hub that does not answer a connection in 5 s is not there now
SEND_RETRY_SECONDS = 10.0  # how long a send keeps trying a hub it cannot reach before it says so
_TASK_LIST_PARAMS = ("context_id", "state", "page_size", "page_token")  # what GET /v1/tasks takes
SLOW_CONNECT_SECONDS = 1.0  # a connection to the hub not made after this long says so (to on_wait)


@functools.cache
def _list_of(model: type[BaseModel]) -> TypeAdapter:
    """A validator of a list of ``model``: built once per model (building one compiles a schema)."""
    return TypeAdapter(list[model])  # type: ignore[valid-type]  # a list type made at run time, per model


class HubClient:
    """Mailbox operations as one agent, through a hub."""

    def __init__(
        self,
        url: str,
        token: str | None,
        agent: str | None = None,
        workspace: str | None = None,
        identity_source: str = "given",
        transport: httpx.BaseTransport | None = None,
        *,
        ca_cert: str | None = None,
        session: SessionHint | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        """``url``: the hub, or several replicas of one hub, comma-separated: a request that cannot
        connect to one is tried on the next at once (a replica gone, another still there).
        ``ca_cert``: a CA file (PEM) that verifies the hub's certificate instead of the system's
        CAs. ``session``: the session its calls act in (sent with each request). ``on_wait``: told
        in a sentence, once per call, when a call is about to wait for the hub (a send retrying)."""
        import httpx

        from callboard import __version__

        self.after_send: AfterSend = NOTHING_AFTER_SEND
        self._urls = hub_urls(url)
        self.url = self._urls[0]
        self.identity_source = identity_source
        self._token, self._workspace, self._ca_cert = token, workspace, ca_cert
        self._unread: int | None = None  # what the hub's last answer said of the agent's unread mail
        self._on_wait = on_wait
        self._slow_told = False
        headers = {"User-Agent": f"callboard/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if agent:
            headers[AGENT_HEADER] = agent
        if workspace:
            headers[WORKSPACE_HEADER] = workspace
        if session is not None and session.session_id:
            headers[SESSION_HEADER] = session.session_id
        elif session is not None and session.lineage:
            headers[PROCESS_HEADER] = process_header(machine_name(os.environ), session.lineage)
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
            transport=transport,
            verify=_verification(ca_cert),
        )

    def as_agent(self, agent: str, session_id: str | None = None) -> HubClient:
        """The same hub and credential acting as another agent of this workspace (in its session
        ``session_id`` when given): a connection of its own, to close. A user or admin token may
        act so; an agent token is refused (forbidden) at the first request."""
        return HubClient(
            ",".join(self._urls),
            self._token,
            agent,
            self._workspace,
            ca_cert=self._ca_cert,
            session=SessionHint(session_id=session_id) if session_id else None,
            on_wait=self._on_wait,
        )

    # --- plumbing -------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        import httpx

        self._unread = None
        tried = 0
        while True:
            try:
                response = self._http.request(
                    method,
                    path,
                    json=json,
                    params=params,
                    timeout=httpx.Timeout(timeout or TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS),
                    extensions=self._connect_watch(),
                )
            except httpx.HTTPError as error:
                tried += 1
                never_left = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
                if never_left and tried < len(self._urls) and unverified_certificate(error) is None:
                    self._next_replica()  # this replica is not there and the request never left: the next
                    continue
                raise transport_error(self.url, error) from None
            if response.status_code >= 400:
                raise answer_error(response)
            counted = response.headers.get(UNREAD_HEADER)
            self._unread = int(counted) if counted is not None and counted.isascii() and counted.isdigit() else None
            return response.json()

    def _connect_watch(self) -> dict[str, Any]:
        """A request's extensions that tell ``on_wait`` (once in this client's life) when opening
        a connection to the hub takes more than a second: a hub away behind a network that
        swallows the connection until its timeout (a refused one fails at once)."""
        if self._on_wait is None or self._slow_told:
            return {}
        timers: list[threading.Timer] = []

        def trace(event: str, info: dict[str, Any]) -> None:
            if event == "connection.connect_tcp.started":
                timer = threading.Timer(SLOW_CONNECT_SECONDS, self._tell_slow)
                timer.daemon = True
                timers.append(timer)
                timer.start()
            elif event.startswith("connection.connect_tcp."):  # complete, or failed
                for timer in timers:
                    timer.cancel()

        return {"trace": trace}

    def _tell_slow(self) -> None:
        if self._on_wait is not None and not self._slow_told:
            self._slow_told = True
            self._on_wait(
                f"the hub at {self.url} does not answer yet; waiting up to {CONNECT_TIMEOUT_SECONDS:g} s (Ctrl-C stops)"
            )

    def _next_replica(self) -> None:
        self.url = self._urls[(self._urls.index(self.url) + 1) % len(self._urls)]
        self._http.base_url = self.url

    def _model(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        return model.model_validate(self._call(method, path, **kwargs))

    def _models(self, model: type[M], method: str, path: str, **kwargs: Any) -> list[M]:
        return _list_of(model).validate_python(self._call(method, path, **kwargs))

    # --- the Client interface -----------------------------------------------------------

    def whoami(self) -> WhoAmI:
        me = self._model(WhoAmI, "GET", "/v1/whoami")
        return me.model_copy(update={"source": f"{self.identity_source} via {me.source}", "store": self.url})

    def send(self, request: SendRequest) -> SendResult:
        # A key of our own when the caller gave none: a send tried again after the hub was cut
        # off mid-request (a restart, a link flapping, a stale pooled connection) then returns
        # the first send instead of storing a second copy.
        key = request.idempotency_key or f"retry-{uuid.uuid4().hex}"
        body = request.model_copy(update={"idempotency_key": key}).model_dump(mode="json")
        result = self._retried(
            lambda: self._model(SendResult, "POST", "/v1/messages", json=body), key, "--idempotency-key"
        )
        # A repeat of our own first try is not the caller's "earlier send with this key".
        sent = result if request.idempotency_key else result.model_copy(update={"duplicate": False})
        return self.after_send.sent(self, sent)

    def _retried(self, attempt: Callable[[], T], key: str, option: str) -> T:
        """``attempt()`` (a request carrying ``key``, so that a repeat stores nothing twice), tried
        again with backoff while the hub cannot be reached, for CALLBOARD_SEND_RETRY_SECONDS;
        then a HubUnavailable that says whether it may have been stored, and how to retry safely."""
        patience = _send_retry_seconds()
        started, backoff, reached, told = time.monotonic(), Backoff(), False, False
        while True:
            try:
                return attempt()
            except HubUnavailable as error:
                if error.details.get("lasting"):
                    raise
                reached = reached or bool(error.details.get("reached"))
                delay = backoff.delay()
                if time.monotonic() + delay > started + patience:
                    raise HubUnavailable(
                        f"{error.message} Tried for {time.monotonic() - started:.0f} s; "
                        + (
                            f"it may have been stored: sending again with {option} {key} is safe "
                            "(it never stores a second copy)."
                            if reached
                            else "nothing was sent."
                        ),
                        reached=reached,
                        idempotency_key=key,
                    ) from None
                if self._on_wait is not None and not told and patience > 1:  # a wait of a second or less goes unsaid
                    told = True
                    self._on_wait(
                        f"the hub at {self.url} does not answer; trying again for {patience:g} s (Ctrl-C stops)"
                    )
                time.sleep(delay)

    def read(self, query: ReadQuery = ReadQuery()) -> ReadResult:
        params: dict[str, Any] = {"peek": str(query.peek).lower(), "limit": query.limit, "wait": query.wait}
        if query.after is not None:
            params["after"] = query.after
        return self._model(ReadResult, "POST", "/v1/read", params=params, timeout=query.wait + TIMEOUT_SECONDS)

    def inbox(self, query: InboxQuery = InboxQuery()) -> list[MailItem]:
        params = {"all": str(query.include_acked).lower(), "limit": query.limit}
        return self._models(MailItem, "GET", "/v1/inbox", params=params)

    def unread_count(self) -> int:
        # A read answers with the count; no call of its own.
        return self.read(ReadQuery(peek=True, limit=1)).unread

    def last_unread(self) -> int:
        return self._unread if self._unread is not None else self.unread_count()

    def ack(self, message_ids: Sequence[str]) -> AckResult:
        return self._model(AckResult, "POST", "/v1/ack", json={"message_ids": list(message_ids)})

    def mark_read(self, message_ids: Sequence[str]) -> MarkResult:
        return self._model(MarkResult, "POST", "/v1/mark-read", json={"message_ids": list(message_ids)})

    def confirm_surfaced(self, message_ids: Sequence[str], evidence: str = "transcript") -> MarkResult:
        return self._model(
            MarkResult, "POST", "/v1/surfaced", json={"message_ids": list(message_ids), "evidence": evidence}
        )

    def record_receipt(self, message_ids: Sequence[str], status: str, reason: str | None = None) -> MarkResult:
        body = {"message_ids": list(message_ids), "status": status, "reason": reason}
        return self._model(MarkResult, "POST", "/v1/receipts", json=body)

    def surface(self, query: SurfaceQuery) -> ReadResult:
        params: dict[str, Any] = {
            "via": query.via,
            "urgent": str(query.urgent_only).lower(),
            "limit": query.limit,
            "wait": query.wait,
        }
        if query.peek:
            params["peek"] = "true"
        return self._model(ReadResult, "POST", "/v1/surface", params=params, timeout=query.wait + TIMEOUT_SECONDS)

    def message_status(self, message_id: str) -> MessageStatus:
        self.after_send.before_status(self)
        return self._model(MessageStatus, "GET", f"/v1/messages/{_segment(message_id)}/status")

    def who(self) -> WhoReport:
        return self._model(WhoReport, "GET", "/v1/who")

    def reach(self, address: str) -> Reach:
        return self._model(Reach, "GET", "/v1/reach", params={"address": address})

    def register_session(
        self, *, runtime: str, pid: int | None = None, machine: str | None = None, terminal: str | None = None
    ) -> Session:
        pid = pid if pid is not None else acting_pid()
        here = machine_name(os.environ)
        machine = machine or here
        body = {
            "runtime": runtime,
            "pid": pid,
            "machine": machine,
            # Only a process on this machine can be checked for its start time.
            "proc_start": process_start_time(pid) if machine == here else None,
            "terminal": terminal,
        }
        return self._model(Session, "POST", "/v1/sessions", json=body)

    def heartbeat(self, session_id: str, delivery_error: str | None = None) -> Session:
        return self._model(
            Session,
            "POST",
            f"/v1/sessions/{_segment(session_id)}/heartbeat",
            json={"delivery_error": delivery_error} if delivery_error else None,
        )

    def end_session(self, session_id: str) -> Session:
        return self._model(Session, "DELETE", f"/v1/sessions/{_segment(session_id)}")

    def create_agent(self, name: str, description: str | None = None, skills: Sequence[str] = ()) -> Agent:
        return self._model(
            Agent, "POST", "/v1/agents", json={"name": name, "description": description, "skills": list(skills)}
        )

    def describe_agent(self, name: str) -> Agent:
        return self._model(Agent, "GET", f"/v1/agents/{_segment(name)}")

    def agent_card(self, name: str) -> dict[str, Any]:
        """The agent's A2A card as the hub serves it (its JSON: A2A's camelCase field names)."""
        return self._call("GET", f"/v1/agents/{_segment(name)}/card")

    def update_agent(self, name: str, description: str | None = None, skills: Sequence[str] | None = None) -> Agent:
        body = {"description": description, "skills": None if skills is None else list(skills)}
        return self._model(Agent, "PATCH", f"/v1/agents/{_segment(name)}", json=body)

    def list_agents(self, skill: str | None = None) -> list[Agent]:
        return self._models(Agent, "GET", "/v1/agents", params=None if skill is None else {"skill": skill})

    def delete_agent(self, name: str, *, force: bool = False) -> DeletedAgent:
        params = {"force": "true"} if force else None
        return self._model(DeletedAgent, "DELETE", f"/v1/agents/{_segment(name)}", params=params)

    def add_remote(self, name: str, url: str, *, token: str | None = None) -> RemoteAgent:
        return self._model(RemoteAgent, "POST", "/v1/remotes", json={"name": name, "url": url, "token": token})

    def remove_remote(self, name: str) -> RemoteAgent:
        return self._model(RemoteAgent, "DELETE", f"/v1/remotes/{_segment(name)}")

    def list_remotes(self) -> list[RemoteAgent]:
        return self._models(RemoteAgent, "GET", "/v1/remotes")

    def create_channel(self, name: str, description: str | None = None, *, invite_only: bool = False) -> Channel:
        body = {"name": name, "description": description, "invite_only": invite_only}
        return self._model(Channel, "POST", "/v1/channels", json=body)

    def invite_to_channel(self, name: str, agents: Sequence[str]) -> Channel:
        path = f"/v1/channels/{_segment(name.lstrip('#'))}/members"
        return self._model(Channel, "POST", path, json={"agents": list(agents)})

    def remove_from_channel(self, name: str, agent: str) -> Channel:
        return self._model(Channel, "DELETE", f"/v1/channels/{_segment(name.lstrip('#'))}/members/{_segment(agent)}")

    def audit_trail(self, *, limit: int = 50) -> list[AuditEntry]:
        return self._models(AuditEntry, "GET", "/v1/audit", params={"limit": limit})

    def join_channel(self, name: str) -> Channel:
        return self._model(Channel, "POST", f"/v1/channels/{_segment(name.lstrip('#'))}/join")

    def leave_channel(self, name: str) -> Channel:
        return self._model(Channel, "POST", f"/v1/channels/{_segment(name.lstrip('#'))}/leave")

    def list_channels(self) -> list[Channel]:
        return self._models(Channel, "GET", "/v1/channels")

    def channel_members(self, name: str) -> list[ChannelMember]:
        return self._models(ChannelMember, "GET", f"/v1/channels/{_segment(name.lstrip('#'))}/members")

    def list_workspaces(self) -> list[Workspace]:
        return self._models(Workspace, "GET", "/v1/workspaces")

    def report_runner(self, report: RunnerReport) -> RunnerReport:
        path = f"/v1/runners/{_segment(report.agent)}"
        return self._model(RunnerReport, "PUT", path, json=report.model_dump(mode="json", exclude={"live"}))

    def list_runners(self, agent: str | None = None) -> list[RunnerReport]:
        return self._models(RunnerReport, "GET", "/v1/runners", params={"agent": agent} if agent is not None else None)

    # --- leases ---------------------------------------------------------------------------

    def take_lease(self, request: LeaseRequest) -> LeaseTaken:
        return self._model(LeaseTaken, "POST", "/v1/leases", json=request.model_dump(mode="json"))

    def list_leases(self, *, every: bool = False, scope: str | None = None) -> list[Lease]:
        given = {"all": "true" if every else None, "scope": scope}
        params = {name: value for name, value in given.items() if value is not None}
        return self._models(Lease, "GET", "/v1/leases", params=params or None)

    def renew_leases(self, request: LeaseRenewal) -> list[Lease]:
        return self._models(Lease, "POST", "/v1/leases/renew", json=request.model_dump(mode="json"))

    def release_leases(self, request: LeaseRelease) -> list[str]:
        return list(self._call("POST", "/v1/leases/release", json=request.model_dump(mode="json"))["released"])

    def check_leases(self, request: LeaseCheck) -> list[Lease]:
        return self._models(Lease, "POST", "/v1/leases/check", json=request.model_dump(mode="json"))

    # --- rounds ---------------------------------------------------------------------------

    def open_round(self, request: RoundRequest) -> RoundInfo:
        return self._model(RoundInfo, "POST", "/v1/rounds", json=request.model_dump(mode="json"))

    def get_round(self, round_id: str, *, after_events: int | None = None, wait: float = 0.0) -> RoundInfo:
        given = {"after_events": after_events, "wait": wait or None}
        params = {name: value for name, value in given.items() if value is not None}
        path = f"/v1/rounds/{_segment(round_id)}"
        return self._model(RoundInfo, "GET", path, params=params or None, timeout=wait + TIMEOUT_SECONDS)

    def list_rounds(self, *, every: bool = False) -> list[RoundInfo]:
        return self._models(RoundInfo, "GET", "/v1/rounds", params={"all": "true"} if every else None)

    def propose(self, round_id: str, request: RoundProposal) -> RoundActed:
        body = request.model_dump(mode="json", exclude_none=True)
        return self._model(RoundActed, "POST", f"/v1/rounds/{_segment(round_id)}/proposals", json=body)

    def vote(self, round_id: str, request: RoundVote) -> RoundActed:
        body = request.model_dump(mode="json", exclude_none=True)
        return self._model(RoundActed, "POST", f"/v1/rounds/{_segment(round_id)}/votes", json=body)

    def cancel_round(self, round_id: str) -> RoundInfo:
        return self._model(RoundInfo, "POST", f"/v1/rounds/{_segment(round_id)}/cancel")

    # --- tasks ----------------------------------------------------------------------------

    def open_task(self, request: TaskRequest) -> TaskSent:
        # As a send: an id of our own when none is given, so a request tried again after the hub
        # was cut off returns the task the first one opened instead of opening a second.
        key = request.message_id or f"retry-{uuid.uuid4().hex}"
        body = request.model_copy(update={"message_id": key}).model_dump(mode="json")
        sent = self._retried(lambda: self._model(TaskSent, "POST", "/v1/tasks", json=body), key, "--message-id")
        if request.message_id is None and sent.send.duplicate:  # our own retry, not the caller's repeat
            sent = sent.model_copy(update={"send": sent.send.model_copy(update={"duplicate": False})})
        return task_sent(self.after_send, self, sent)

    def update_task(
        self,
        task_id: str,
        *,
        state: TaskState | str | None = None,
        parts: Sequence[Part | dict] = (),
        artifacts: Sequence[TaskArtifact | dict[str, Any]] = (),
    ) -> Task:
        body = {
            "state": None if state is None else str(state),
            "parts": _parts(parts),
            "artifacts": [a.model_dump() if isinstance(a, TaskArtifact) else a for a in artifacts],
        }
        return self._model(Task, "POST", f"/v1/tasks/{_segment(task_id)}/update", json=body)

    def cancel_task(self, task_id: str) -> Task:
        return self._model(Task, "POST", f"/v1/tasks/{_segment(task_id)}/cancel")

    def get_task(
        self, task_id: str, *, history_length: int | None = None, after_generation: int | None = None, wait: float = 0.0
    ) -> Task:
        given = {"history_length": history_length, "after_generation": after_generation, "wait": wait or None}
        params = {name: value for name, value in given.items() if value is not None}
        path = f"/v1/tasks/{_segment(task_id)}"
        return self._model(Task, "GET", path, params=params or None, timeout=wait + TIMEOUT_SECONDS)

    def list_tasks(self, query: TaskListQuery = TaskListQuery()) -> TaskPage:
        beyond = sorted(query.model_fields_set - set(_TASK_LIST_PARAMS))
        if beyond:  # the REST API lists by these four only: a filter left out would be a silent lie
            raise BadRequest(f"a hub lists tasks by {', '.join(_TASK_LIST_PARAMS)} only, not by {', '.join(beyond)}.")
        params: dict[str, Any] = {"page_size": query.page_size}
        for name in ("context_id", "state", "page_token"):
            value = getattr(query, name)
            if value is not None:
                params[name] = str(value)
        return self._model(TaskPage, "GET", "/v1/tasks", params=params)

    # --- credentials (hub only) -----------------------------------------------------------

    def create_token(
        self,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        kind: str | None = None,
        label: str | None = None,
    ) -> IssuedToken:
        body = {"agent": agent, "workspace": workspace, "kind": kind, "label": label}
        return self._model(IssuedToken, "POST", "/v1/tokens", json=body)

    def list_tokens(self) -> list[TokenInfo]:
        return self._models(TokenInfo, "GET", "/v1/tokens")

    def revoke_token(self, token_id: str) -> TokenInfo:
        return self._model(TokenInfo, "DELETE", f"/v1/tokens/{_segment(token_id)}")

    def run_background(self) -> Callable[[], None]:
        return lambda: None  # the hub does its store's background work

    def send_to_outside_agents(self, message_id: str, seconds: float) -> None:
        pass  # the hub sends mail to outside agents

    def close(self) -> None:
        self._http.close()


def _send_retry_seconds() -> float:
    """How long a send keeps trying an unreachable hub: CALLBOARD_SEND_RETRY_SECONDS (0: fail
    at once), else SEND_RETRY_SECONDS."""
    raw = os.environ.get("CALLBOARD_SEND_RETRY_SECONDS", "").strip()
    try:
        return max(0.0, float(raw)) if raw else SEND_RETRY_SECONDS
    except ValueError:
        raise BadRequest(f"CALLBOARD_SEND_RETRY_SECONDS={raw!r} is not a number of seconds.") from None


def _parts(parts: Sequence[Part | dict]) -> list[Any]:
    return [p.model_dump() if isinstance(p, Part) else p for p in parts]


def _segment(value: str) -> str:
    """A path segment, escaped so an id or name can never change the path."""
    return quote(value, safe="")


def _verification(ca_cert: str | None) -> ssl.SSLContext | bool:
    """What verifies the hub's certificate: ``ca_cert``'s CAs, else the default ones (never nothing)."""
    if ca_cert is None:
        return True
    import ssl

    try:
        return ssl.create_default_context(cafile=ca_cert)
    except OSError as error:  # ssl.SSLError too: a file that holds no certificate
        raise BadRequest(
            f"the CA certificate {ca_cert} cannot be read ({error.strerror or error}); "
            "give a PEM file with --ca-cert or CALLBOARD_CA_CERT."
        ) from None
