"""What a face asks of the service: one model per operation that takes several options.

A face builds the model (the CLI from its options, an MCP tool from its arguments, the hub from
a request's JSON body), and the model travels unchanged through the client to the collaborator
that does the work: a new field is one field here plus the code that uses it. The hub's
request schemas are these same classes, so /openapi.json states the bounds ``limits`` names.

Numbers and lengths are checked when a model is built (a request past them fails before it
reaches the service, as ``TooLarge`` or ``BadRequest``, whichever face built it); names and
addresses are only described here — the service parses them, and also takes upper case and
surrounding blanks, which it folds. Unknown fields are refused, so a typo is an error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.config import JsonDict

from callboard import address, leases, limits, rounds
from callboard.errors import BadRequest, CallboardError, TooLarge
from callboard.model import Part
from callboard.tasks import TaskState

# A pydantic error of these types is a value past its bound: too large, as the service says of it.
_TOO_LARGE = frozenset({"string_too_long", "too_long"})


def refusal(error: ValidationError) -> CallboardError:
    """A model's validation error as the service's refusal: too_large past a bound, else bad_request."""
    first = error.errors(include_url=False)[0]
    if first.get("type") == "json_invalid":
        return BadRequest(f"the request body is not JSON ({first.get('msg')}).")
    where = ".".join(str(x) for x in first.get("loc", ())) or "body"
    refused = TooLarge if first.get("type") in _TOO_LARGE else BadRequest
    return refused(f"{where}: {first.get('msg')}.")


class Request(BaseModel):
    # Built by a face in this process, a bad value is refused as the hub refuses it (``refusal``),
    # never as a pydantic error the face does not know. Frozen: a request travels unchanged.
    model_config = ConfigDict(extra="forbid", frozen=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise refusal(error) from None

    # Only a face's own construction needs the refusal above: validating a request's JSON (the
    # hub's every request, which maps pydantic's error itself) must not go through this __init__,
    # which pydantic would otherwise call with the parsed fields, validating them a second time.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # pydantic's own marker, as BaseModel sets it


def described(pattern: str, most: int, description: str | None = None) -> dict[str, object]:
    """A string field's pattern and length as the schema states them (the service checks them)."""
    stated: dict[str, object] = {"pattern": pattern, "maxLength": most}
    return stated if description is None else {**stated, "description": description}


def text_field(most: int, *, blank: bool = True) -> Any:
    """Free text of at most ``most`` characters (checked here), with no NUL and — unless ``blank``
    — not blank (stated here; the service checks it, as for every face)."""
    pattern = address.TEXT_PATTERN if blank else address.NON_BLANK_TEXT_PATTERN
    return Field(max_length=most, json_schema_extra={"pattern": pattern})


Subject = Annotated[str, text_field(limits.SUBJECT_CHARS)]
Description = Annotated[str, text_field(limits.DESCRIPTION_CHARS)]
Name = Annotated[str, Field(json_schema_extra=described(address.NAME_PATTERN, limits.NAME_CHARS))]
MachineName = Annotated[str, Field(json_schema_extra=described(address.MACHINE_PATTERN, limits.MACHINE_CHARS))]
MessageId = Annotated[
    str, Field(json_schema_extra=described(address.UUID_PATTERN, limits.MESSAGE_ID_CHARS, "a message id"))
]
Address = Annotated[
    str,
    Field(
        json_schema_extra=described(
            address.ADDRESS_PATTERN, limits.ADDRESS_CHARS, "name, name@machine, name@machine#pid or #channel"
        )
    ),
]
# No maxLength: the bound is the number of recipients, which the service counts (a schema
# length of tens of thousands would also be more than property-based fuzzers can generate past).
AddressList = Annotated[
    str,
    Field(
        json_schema_extra={
            "pattern": address.ADDRESS_LIST_PATTERN,
            "description": f"one address, or up to {limits.RECIPIENTS_MAX} separated by commas",
        }
    ),
]
IdempotencyKey = Annotated[str, text_field(limits.IDEMPOTENCY_KEY_CHARS, blank=False)]


class SendRequest(Request):
    # A message to agents or a channel (Sending.submit). Some text, or a part that is not blank
    # text: the service refuses an empty message (the schema says so too).
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": ["text"], "properties": {"text": {"type": "string", "pattern": r"\S"}}},
                {
                    "required": ["parts"],
                    "properties": {
                        "parts": {
                            "contains": {"not": {"required": ["text"], "properties": {"text": {"pattern": r"^\s*$"}}}}
                        }
                    },
                },
            ]
        },
    )

    # The service counts the recipients (too_large past the bound); the schema states the bound.
    to: (
        AddressList
        | Annotated[list[Address], Field(json_schema_extra={"minItems": 1, "maxItems": limits.RECIPIENTS_MAX})]
    ) = Field(description="name, name@machine, name@machine#pid or #channel; several as a list")
    text: str | None = Field(
        default=None,
        description=f"the message's text; with its parts at most {limits.MESSAGE_BYTES} bytes as JSON (else too_large)",
    )
    subject: Subject | None = None
    parts: list[Part] = Field(default_factory=list, max_length=limits.PARTS_MAX)
    thread_id: MessageId | None = None
    reply_to: MessageId | None = None
    require_live: bool = False
    idempotency_key: IdempotencyKey | None = None
    urgent: bool = Field(default=False, description="may reach a busy agent between tool calls")


TaskId = Annotated[str, Field(json_schema_extra=described(address.UUID_PATTERN, limits.ID_CHARS, "a task id"))]
ContextId = Annotated[
    str, Field(json_schema_extra=described(address.UUID_PATTERN, limits.ID_CHARS, "a task's context (mail thread)"))
]
WorkerAddress = Annotated[
    str,
    Field(
        json_schema_extra=described(
            address.AGENT_ADDRESS_PATTERN, limits.ADDRESS_CHARS, "the agent that works on it: name, name@machine#pid"
        )
    ),
]
_ANY_CONTENT: JsonDict = {
    "anyOf": [
        {"required": ["text"], "properties": {"text": {"type": "string", "pattern": r"\S"}}},
        {"required": ["parts"], "properties": {"parts": {"minItems": 1}}},
    ]
}


class TaskRequest(Request):
    """Open a task to an agent, or (with task_id) answer a task of yours that waits on you."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_ANY_CONTENT)

    to: WorkerAddress
    text: str | None = Field(default=None, description="what you ask, as text (first, before any parts)")
    parts: list[Part] = Field(default_factory=list, max_length=limits.PARTS_MAX)
    task_id: TaskId | None = Field(default=None, description="a task of yours waiting on you: this answers it")
    context_id: ContextId | None = Field(default=None, description="the thread to open it in (default: a new one)")
    subject: Subject | None = None
    metadata: dict[str, Any] | None = None
    message_id: Annotated[str, text_field(limits.IDEMPOTENCY_KEY_CHARS - 4, blank=False)] | None = Field(
        default=None, description="your id for this message: a repeat with it returns the first task, never a second"
    )


class SessionRequest(Request):
    # A process registered as a session of the caller's agent (Directory.register_session).
    pid: int = Field(ge=1, le=limits.PID_MAX, description="the session's process id")
    runtime: Name = "script"
    machine: MachineName | None = Field(default=None, description="default: the hub's machine")
    proc_start: int | None = Field(
        default=None,
        ge=0,
        le=limits.PROC_START_MAX,
        description="the process's start time (clock ticks since boot), to tell a recycled pid apart",
    )
    terminal: Annotated[str, text_field(limits.TERMINAL_CHARS, blank=False)] | None = Field(
        default=None, description="the terminal window or pane, e.g. tmux:%3"
    )


# --- queries: what a read or a list asks for --------------------------------------------------
#
# Their bounds are the deployment's ``Limits`` (a hub may set its own), so the mailbox and the
# tasking check them, with the same words for every face; the hub states them in its route table.


class ReadQuery(Request):
    """A read of the caller's mailbox (Mailbox.read): drain, or ``peek`` without marking; from
    the cursor ``after``; at most ``limit`` messages; waiting up to ``wait`` seconds for some."""

    peek: bool = False
    after: int | None = None
    limit: int = limits.READ_LIMIT_DEFAULT
    wait: float = 0.0


class SurfaceQuery(Request):
    """Mail taken to be put before the agent, marked surfaced by ``via`` (a SurfacePath:
    Mailbox.surface); ``urgent_only``: only mail sent urgent; ``peek``: mark nothing."""

    via: str
    urgent_only: bool = False
    limit: int = limits.READ_LIMIT_DEFAULT
    wait: float = 0.0
    peek: bool = False


class InboxQuery(Request):
    """The newest messages of the caller's mailbox, without marking (Mailbox.inbox)."""

    include_acked: bool = False
    limit: int = limits.INBOX_LIMIT_DEFAULT


class TaskListQuery(Request):
    """The caller's tasks, a page at a time (Tasking.list_tasks): in one context, in one state,
    updated after a time, only those between it and ``with_agent``; each with its newest
    ``history_length`` messages, and its artifacts unless ``include_artifacts`` is false."""

    context_id: str | None = None
    state: TaskState | str | None = None
    page_size: int = limits.PAGE_SIZE_DEFAULT
    page_token: str | None = None
    updated_after: datetime | None = None
    history_length: int = 0
    include_artifacts: bool = True
    with_agent: str | None = None


class RoundRequest(Request):
    """Open a round: a goal put to agents, who propose, vote and converge (rounds.py)."""

    goal: Annotated[str, text_field(limits.GOAL_CHARS, blank=False)]
    agents: list[Name] = Field(min_length=1, max_length=rounds.PARTICIPANTS_MAX, description="the participants")
    quorum: int | None = Field(default=None, ge=1, le=rounds.PARTICIPANTS_MAX, description="default: a majority")
    max_rounds: int = Field(default=3, ge=1, le=rounds.ROUNDS_MAX, description="epochs before a decision is forced")
    kind: rounds.RoundKind = Field(default="artifact", description="artifact: propose and vote; value: the median")
    phase_timeout: float = Field(
        default=rounds.PHASE_SECONDS_DEFAULT, ge=rounds.PHASE_SECONDS_MIN, le=rounds.PHASE_SECONDS_MAX
    )
    channel: Name | None = Field(default=None, description="a channel of yours the decision is posted to")


class RoundProposal(Request):
    """A participant's proposal: an artifact's parts, or a value round's number."""

    epoch: int | None = Field(default=None, ge=0, description="the epoch proposed in (default: the round's current)")
    value: float | None = None
    parts: list[Part] = Field(default_factory=list, max_length=limits.PARTS_MAX)


class RoundVote(Request):
    """A participant's vote: the proposer it endorses (its own allowed), and why."""

    epoch: int | None = Field(default=None, ge=0, description="the epoch voted in (default: the round's current)")
    endorse: Name = Field(description="the agent whose proposal this vote endorses")
    reason: Annotated[str, text_field(limits.SUBJECT_CHARS)] | None = None


class LeaseRequest(Request):
    """Take a lease on paths of a repository (leases.py); the face names the repository."""

    scope: Annotated[str, text_field(limits.SUBJECT_CHARS, blank=False)] = Field(
        description="the repository: its normalised remote, else machine:root"
    )
    patterns: list[str] = Field(
        min_length=1, max_length=leases.PATTERNS_MAX, description="repository-relative paths or globs"
    )
    ttl: float = Field(default=leases.TTL_DEFAULT_SECONDS, gt=0, le=leases.TTL_MAX_SECONDS)
    shared: bool = False
    reason: Annotated[str, text_field(leases.REASON_CHARS)] | None = None


class LeaseRelease(Request):
    """Release leases: by id, or the caller's own covering ``patterns`` in ``scope``; ``force``
    (a person, with a reason, audited) releases another agent's."""

    ids: list[str] = Field(default_factory=list, max_length=leases.PATTERNS_MAX)
    patterns: list[str] = Field(default_factory=list, max_length=leases.PATTERNS_MAX)
    scope: str | None = None
    force: bool = False
    reason: Annotated[str, text_field(leases.REASON_CHARS)] | None = None


class LeaseRenewal(Request):
    """Renew the caller's leases (all when ``ids`` is empty) for ``ttl`` seconds from now."""

    ids: list[str] = Field(default_factory=list, max_length=leases.PATTERNS_MAX)
    ttl: float = Field(default=leases.TTL_DEFAULT_SECONDS, gt=0, le=leases.TTL_MAX_SECONDS)


class LeaseCheck(Request):
    """Which of these paths of a repository other agents hold exclusively (read-only)."""

    scope: Annotated[str, text_field(limits.SUBJECT_CHARS, blank=False)]
    paths: list[str] = Field(min_length=1, max_length=1000)
