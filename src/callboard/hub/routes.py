"""The hub's route table: one list that both serves requests and writes the OpenAPI document."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from callboard import address, limits
from callboard.hub import api, leases, rounds, runners, schemas, sending, streams, tasks
from callboard.hub.endpoint import Endpoint
from callboard.leases import Lease, LeaseTaken
from callboard.limits import HISTORY_MAX, PAGE_SIZE_MAX
from callboard.model import (
    SURFACE_PATHS,
    AckResult,
    Agent,
    AuditEntry,
    Channel,
    ChannelMember,
    DeletedAgent,
    MailItem,
    MarkResult,
    MessageStatus,
    Reach,
    ReadResult,
    SendResult,
    Session,
    WhoAmI,
    WhoReport,
    Workspace,
)
from callboard.remotes import RemoteAgent
from callboard.requests import (
    LeaseCheck,
    LeaseRelease,
    LeaseRenewal,
    LeaseRequest,
    RoundProposal,
    RoundRequest,
    RoundVote,
    SendRequest,
    SessionRequest,
    TaskRequest,
)
from callboard.rounds import RoundActed, RoundInfo
from callboard.runners import RunnerReport
from callboard.tasks import Task, TaskPage, TaskSent
from callboard.tokens import IssuedToken, TokenInfo


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    endpoint: Endpoint
    summary: str
    body: type[BaseModel] | None = None
    answer: type[BaseModel] | None = None
    many: bool = False  # the answer is a list of ``answer``
    query: dict[str, Param] = field(default_factory=dict)  # name -> its JSON schema, as /openapi.json states it
    public: bool = False
    stream: bool = False
    agent: bool = True  # the request acts as an agent: its answer carries the agent's unread count


# Query parameters, with the bounds the hub keeps (content.py): ``required`` marks one that must be given.
Param = dict[str, Any]
BOOLEAN: Param = {"type": "boolean"}
AFTER: Param = {"type": "integer", "minimum": 0, "maximum": limits.SEQ_MAX}
LIMIT: Param = {"type": "integer", "minimum": 1, "maximum": limits.READ_LIMIT_MAX}
WAIT: Param = {"type": "number", "minimum": 0, "maximum": limits.WAIT_SECONDS_MAX}
VIA: Param = {"type": "string", "enum": list(SURFACE_PATHS), "required": True}
ADDRESS: Param = {
    "type": "string",
    "pattern": address.AGENT_ADDRESS_PATTERN,
    "maxLength": limits.ADDRESS_CHARS,
    "required": True,
}
SKILL: Param = {"type": "string", "maxLength": limits.SKILL_CHARS, "pattern": address.NON_BLANK_TEXT_PATTERN}
TASK_STATE: Param = {"type": "string", "enum": schemas.TASK_STATES}
TASK_QUERY = {
    "context_id": {"type": "string", "pattern": address.UUID_PATTERN, "maxLength": limits.ID_CHARS},
    "state": TASK_STATE,
    "page_size": {"type": "integer", "minimum": 1, "maximum": PAGE_SIZE_MAX},
    "page_token": {"type": "string", "maxLength": 200},
}
READ_QUERY = {"wait": WAIT, "peek": BOOLEAN, "after": AFTER, "limit": LIMIT}

ROUTES: list[Route] = [
    Route("GET", "/health", api.health, "Liveness of the hub itself.", public=True, agent=False),
    Route("GET", "/v1/whoami", api.whoami, "The agent and workspace this request acts as.", answer=WhoAmI),
    Route(
        "POST",
        "/v1/messages",
        sending.send_message,
        "Send a message; answers per recipient.",
        SendRequest,
        SendResult,
    ),
    Route(
        "GET",
        "/v1/messages/{message_id}/status",
        api.message_status,
        "Delivery states and times per recipient.",
        answer=MessageStatus,
    ),
    Route(
        "POST",
        "/v1/read",
        streams.read,
        "Drain (or peek) your mail; wait= seconds long-polls.",
        answer=ReadResult,
        query=READ_QUERY,
    ),
    Route(
        "GET",
        "/v1/events",
        streams.events,
        "Your deliveries as Server-Sent Events; resumes from Last-Event-ID.",
        query={"after": AFTER},
        stream=True,
    ),
    Route(
        "GET",
        "/v1/inbox",
        api.inbox,
        "Your mailbox without marking anything.",
        answer=MailItem,
        many=True,
        query={"all": BOOLEAN, "limit": LIMIT},
    ),
    Route("POST", "/v1/ack", api.ack, "Acknowledge handled messages.", schemas.AckRequest, AckResult),
    Route(
        "POST",
        "/v1/mark-read",
        api.mark_read,
        "Mark messages of your mailbox read.",
        schemas.MarkReadRequest,
        MarkResult,
    ),
    Route(
        "POST",
        "/v1/surfaced",
        api.confirm_surfaced,
        "Mail handed to your session is in its model's context now (its transcript shows the turn).",
        schemas.ConfirmSurfacedRequest,
        MarkResult,
    ),
    Route(
        "POST",
        "/v1/receipts",
        api.record_receipt,
        "What your session's client reported about a frame of mail (held, expired, refused, ...).",
        schemas.ReceiptRequest,
        MarkResult,
    ),
    Route(
        "POST",
        "/v1/surface",
        streams.surface,
        "Take mail not yet read nor put before your agent, marked surfaced by via= (socket, hook, waiter, runner).",
        answer=ReadResult,
        query={"via": VIA, "urgent": BOOLEAN, "wait": WAIT, "limit": LIMIT, "peek": BOOLEAN},
    ),
    Route("GET", "/v1/who", api.who, "Agents, sessions and machines of your workspace.", answer=WhoReport),
    Route(
        "GET",
        "/v1/reach",
        api.reach,
        "Whether an agent address can be reached now, and if not, why (unknown agent, no live "
        "session, machine down, delivery path broken).",
        answer=Reach,
        query={"address": ADDRESS},
    ),
    Route(
        "POST",
        "/v1/sessions",
        api.register_session,
        "Register a live session of your agent.",
        SessionRequest,
        Session,
    ),
    Route(
        "POST",
        "/v1/sessions/{session_id}/heartbeat",
        api.heartbeat,
        "Report a session is still there, and whether its delivery path works.",
        schemas.HeartbeatRequest,
        Session,
    ),
    Route("DELETE", "/v1/sessions/{session_id}", api.end_session, "End a session.", answer=Session),
    Route(
        "GET",
        "/v1/agents",
        api.list_agents,
        "Agents of your workspace; skill= only those offering that skill (case aside).",
        answer=Agent,
        many=True,
        query={"skill": SKILL},
    ),
    Route("POST", "/v1/agents", api.create_agent, "Create an agent.", schemas.AgentRequest, Agent),
    Route("GET", "/v1/agents/{name}", api.describe_agent, "One agent's card.", answer=Agent),
    Route(
        "GET",
        "/v1/agents/{name}/card",
        api.agent_card,
        "One agent's A2A agent card (JSON), as served at /a2a/WORKSPACE/NAME/.well-known/agent-card.json.",
    ),
    Route(
        "PATCH",
        "/v1/agents/{name}",
        api.update_agent,
        "Change an agent's description or skills.",
        schemas.AgentUpdate,
        Agent,
    ),
    Route(
        "DELETE",
        "/v1/agents/{name}",
        api.delete_agent,
        "Delete an agent and its mailbox (recorded); refused while it has unread mail unless force=true.",
        answer=DeletedAgent,
        query={"force": BOOLEAN},
    ),
    Route(
        "GET", "/v1/remotes", api.list_remotes, "Outside A2A agents of your workspace.", answer=RemoteAgent, many=True
    ),
    Route(
        "POST",
        "/v1/remotes",
        api.add_remote,
        "Register an outside A2A agent by its card (again: its card fetched anew); mail to it becomes an A2A task.",
        schemas.RemoteRequest,
        RemoteAgent,
    ),
    Route(
        "DELETE",
        "/v1/remotes/{name}",
        api.remove_remote,
        "Forget an outside A2A agent and its mailbox; what was not yet sent to it fails.",
        answer=RemoteAgent,
    ),
    Route("GET", "/v1/channels", api.list_channels, "Channels of your workspace.", answer=Channel, many=True),
    Route(
        "POST",
        "/v1/channels",
        api.create_channel,
        "Create a channel (you join it), open or invite-only.",
        schemas.ChannelRequest,
        Channel,
    ),
    Route("POST", "/v1/channels/{name}/join", api.join_channel, "Join a channel.", answer=Channel),
    Route("POST", "/v1/channels/{name}/leave", api.leave_channel, "Leave a channel.", answer=Channel),
    Route(
        "GET",
        "/v1/channels/{name}/members",
        api.channel_members,
        "Members of a channel (of an invite-only one: for its members and persons).",
        answer=ChannelMember,
        many=True,
    ),
    Route(
        "POST",
        "/v1/channels/{name}/members",
        api.invite_to_channel,
        "Add agents to a channel (its creator or a person's token; recorded).",
        schemas.InviteRequest,
        Channel,
    ),
    Route(
        "DELETE",
        "/v1/channels/{name}/members/{agent}",
        api.remove_from_channel,
        "Remove a member from a channel (its creator or a person's token; recorded).",
        answer=Channel,
    ),
    Route(
        "GET",
        "/v1/tasks",
        tasks.list_tasks,
        "Tasks you asked or were asked, newest updated first; page with next_page_token.",
        answer=TaskPage,
        query=TASK_QUERY,
    ),
    Route(
        "POST",
        "/v1/tasks",
        tasks.open_task,
        "Ask an agent to do something (a task, mailed to it); with task_id, answer your task that waits on you.",
        TaskRequest,
        TaskSent,
    ),
    Route(
        "GET",
        "/v1/tasks/{task_id}",
        tasks.get_task,
        "One task of yours: its state, latest status message and artifacts (history_length: its newest mail); "
        "with after_generation, wait= seconds long-polls until it moves past that generation or ends.",
        answer=Task,
        query={
            "history_length": {"type": "integer", "minimum": 0, "maximum": HISTORY_MAX},
            "after_generation": {"type": "integer", "minimum": 0, "maximum": limits.SEQ_MAX},
            "wait": WAIT,
        },
    ),
    Route(
        "POST",
        "/v1/tasks/{task_id}/update",
        tasks.update_task,
        "The worker's move: a new state, a status message, artifacts; mailed to the requester.",
        schemas.TaskUpdateRequest,
        Task,
    ),
    Route(
        "POST",
        "/v1/tasks/{task_id}/cancel",
        tasks.cancel_task,
        "Cancel a task you asked for; its worker is told by mail.",
        answer=Task,
    ),
    Route(
        "PUT",
        "/v1/runners/{agent}",
        runners.report_runner,
        "Your agent's runner (callboard run) reports itself: kept per agent and machine, replacing its last.",
        RunnerReport,
        RunnerReport,
    ),
    Route(
        "GET",
        "/v1/runners",
        runners.list_runners,
        "Runners of your workspace as they last reported themselves, newest first; live=false: gone quiet.",
        answer=RunnerReport,
        many=True,
        query={"agent": {"type": "string", "pattern": address.NAME_PATTERN, "maxLength": limits.NAME_CHARS}},
    ),
    Route(
        "POST",
        "/v1/rounds",
        rounds.open_round,
        "Open a round: a goal put to agents, who propose, vote and converge at a quorum; each is asked by a task.",
        RoundRequest,
        RoundInfo,
    ),
    Route(
        "GET",
        "/v1/rounds",
        rounds.list_rounds,
        "Rounds you take part in or opened, newest first, each with what is yours to do (all=true: ended ones too).",
        answer=RoundInfo,
        many=True,
        query={"all": BOOLEAN},
    ),
    Route(
        "GET",
        "/v1/rounds/{round_id}",
        rounds.get_round,
        "One round whole: every proposal, vote, refusal, absence and the decision; with after_events, wait= "
        "seconds long-polls until it has more events or ends.",
        answer=RoundInfo,
        query={"after_events": AFTER, "wait": WAIT},
    ),
    Route(
        "POST",
        "/v1/rounds/{round_id}/proposals",
        rounds.propose,
        "Your proposal (parts, or a value round's number); a refusal is answered (accepted=false) and recorded.",
        RoundProposal,
        RoundActed,
    ),
    Route(
        "POST",
        "/v1/rounds/{round_id}/votes",
        rounds.vote,
        "Your vote: the proposer you endorse (your own allowed) and why; a refusal is answered and recorded.",
        RoundVote,
        RoundActed,
    ),
    Route(
        "POST",
        "/v1/rounds/{round_id}/cancel",
        rounds.cancel_round,
        "Cancel a round you opened (or, with a person's token, any): it ends undecided, its tasks canceled.",
        answer=RoundInfo,
    ),
    Route(
        "POST",
        "/v1/leases",
        leases.take_lease,
        "Take an advisory lease on paths of a repository: granted, with the other agents' leases it conflicts with.",
        LeaseRequest,
        LeaseTaken,
    ),
    Route(
        "GET",
        "/v1/leases",
        leases.list_leases,
        "Your active leases (all=true: the workspace's), of one repository with scope=.",
        answer=Lease,
        many=True,
        query={"all": BOOLEAN, "scope": {"type": "string", "maxLength": limits.SUBJECT_CHARS}},
    ),
    Route(
        "POST",
        "/v1/leases/renew",
        leases.renew_leases,
        "Renew your leases (all, or those named) for ttl seconds from now.",
        LeaseRenewal,
        Lease,
        many=True,
    ),
    Route(
        "POST",
        "/v1/leases/release",
        leases.release_leases,
        "Release your leases by id or by path; force (a person, with a reason, audited) releases another's.",
        LeaseRelease,
    ),
    Route(
        "POST",
        "/v1/leases/check",
        leases.check_leases,
        "Which of these paths other agents hold exclusively (read-only; a pre-commit hook asks it).",
        LeaseCheck,
        Lease,
        many=True,
    ),
    Route(
        "GET",
        "/v1/audit",
        api.audit_trail,
        "The workspace's audit trail, newest first (user and admin tokens).",
        answer=AuditEntry,
        many=True,
        query={"limit": LIMIT},
    ),
    Route(
        "GET",
        "/v1/workspaces",
        api.list_workspaces,
        "Workspaces this credential may see.",
        answer=Workspace,
        many=True,
        agent=False,
    ),
    Route(
        "POST",
        "/v1/tokens",
        api.create_token,
        "Create a user or agent token (shown once).",
        schemas.TokenRequest,
        IssuedToken,
        agent=False,
    ),
    Route(
        "GET",
        "/v1/tokens",
        api.list_tokens,
        "Tokens this credential may see.",
        answer=TokenInfo,
        many=True,
        agent=False,
    ),
    Route("DELETE", "/v1/tokens/{token_id}", api.revoke_token, "Revoke a token.", answer=TokenInfo, agent=False),
]
