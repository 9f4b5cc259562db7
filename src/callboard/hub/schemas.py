"""Request bodies of the REST API. Unknown fields are refused, so a typo is an error, not ignored.

Every bound comes from ``callboard.address`` and ``callboard.service.content``, as the service's own checks do, so /openapi.json
states the limits the hub keeps. Numbers and lengths are checked here too (a request past them
fails before it reaches the service); names and addresses are only described here — the service
parses them, and also takes upper case and surrounding blanks, which it folds.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.config import JsonDict

from callboard import address, limits
from callboard.model import Part
from callboard.tasks import TaskState


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _described(pattern: str, most: int, description: str | None = None) -> dict[str, object]:
    """A string field's pattern and length as the schema states them (the service checks them)."""
    stated: dict[str, object] = {"pattern": pattern, "maxLength": most}
    return stated if description is None else {**stated, "description": description}


def _text(most: int, *, blank: bool = True) -> object:
    """Free text of at most ``most`` characters (checked here), with no NUL and — unless ``blank``
    — not blank (stated here; the service checks it, as for every face)."""
    pattern = address.TEXT_PATTERN if blank else address.NON_BLANK_TEXT_PATTERN
    return Field(max_length=most, json_schema_extra={"pattern": pattern})


Subject = Annotated[str, _text(limits.SUBJECT_CHARS)]
Description = Annotated[str, _text(limits.DESCRIPTION_CHARS)]
Name = Annotated[str, Field(json_schema_extra=_described(address.NAME_PATTERN, limits.NAME_CHARS))]
MachineName = Annotated[str, Field(json_schema_extra=_described(address.MACHINE_PATTERN, limits.MACHINE_CHARS))]
MessageId = Annotated[
    str, Field(json_schema_extra=_described(address.UUID_PATTERN, limits.MESSAGE_ID_CHARS, "a message id"))
]
Address = Annotated[
    str,
    Field(
        json_schema_extra=_described(
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


class SendRequest(Body):
    # Some text, or a part that is not blank text: the service refuses an empty message.
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
    idempotency_key: Annotated[str, _text(limits.IDEMPOTENCY_KEY_CHARS, blank=False)] | None = None
    urgent: bool = Field(default=False, description="may reach a busy agent between tool calls")


MessageIds = Annotated[list[MessageId], Field(min_length=1, max_length=limits.MESSAGE_IDS_MAX)]


class AckRequest(Body):
    message_ids: MessageIds


class MarkReadRequest(Body):
    message_ids: MessageIds


class ConfirmSurfacedRequest(Body):
    message_ids: MessageIds
    evidence: Literal["transcript", "hook", "turn"] = Field(
        default="transcript", description="how the model's context is known to hold them"
    )


class ReceiptRequest(Body):
    message_ids: MessageIds
    status: Literal["held", "delivered", "expired", "refused", "denied", "dropped"] = Field(
        description="what the session's client reported about the frame that carried them"
    )
    reason: str | None = Field(default=None, max_length=limits.DELIVERY_ERROR_CHARS)


class SessionRequest(Body):
    pid: int = Field(ge=1, le=limits.PID_MAX, description="the session's process id")
    runtime: Name = "script"
    machine: MachineName | None = Field(default=None, description="default: the hub's machine")
    proc_start: int | None = Field(
        default=None,
        ge=0,
        le=limits.PROC_START_MAX,
        description="the process's start time (clock ticks since boot), to tell a recycled pid apart",
    )
    terminal: Annotated[str, _text(limits.TERMINAL_CHARS, blank=False)] | None = Field(
        default=None, description="the terminal window or pane, e.g. tmux:%3"
    )


class HeartbeatRequest(Body):
    delivery_error: Annotated[str, _text(limits.DELIVERY_ERROR_CHARS)] | None = Field(
        default=None, description="what the session's delivery path reports broken"
    )


Skills = Annotated[list[Annotated[str, _text(limits.SKILL_CHARS, blank=False)]], Field(max_length=limits.SKILLS_MAX)]


class AgentRequest(Body):
    name: Name
    description: Description | None = None
    skills: Skills = Field(default_factory=list)


class RemoteRequest(Body):
    name: Name
    url: Annotated[str, Field(max_length=limits.URL_CHARS, description="where the outside agent's card is")]
    token: Annotated[str, Field(max_length=4096, description="a bearer token to send it")] | None = None


class AgentUpdate(Body):
    description: Description | None = None
    skills: Skills | None = None


class ChannelRequest(Body):
    name: Annotated[str, Field(json_schema_extra=_described(address.CHANNEL_PATTERN, limits.NAME_CHARS + 1))]
    description: Description | None = None
    invite_only: bool = Field(default=False, description="members are added by its creator or a person's token")


class InviteRequest(Body):
    agents: list[Name] = Field(
        min_length=1, max_length=limits.RECIPIENTS_MAX, description="existing agents to add to the channel"
    )


class TokenRequest(Body):
    kind: Literal["admin", "user", "agent"] | None = Field(
        default=None, description="default: agent if agent is given, else user"
    )
    agent: Name | None = None
    workspace: Name | None = None
    label: Annotated[str, _text(limits.TOKEN_LABEL_CHARS, blank=False)] | None = None


# --- tasks -------------------------------------------------------------------------------------

TaskId = Annotated[str, Field(json_schema_extra=_described(address.UUID_PATTERN, limits.ID_CHARS, "a task id"))]
ContextId = Annotated[
    str, Field(json_schema_extra=_described(address.UUID_PATTERN, limits.ID_CHARS, "a task's context (mail thread)"))
]
WorkerAddress = Annotated[
    str,
    Field(
        json_schema_extra=_described(
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


class TaskRequest(Body):
    """Open a task to an agent, or (with task_id) answer a task of yours that waits on you."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_ANY_CONTENT)

    to: WorkerAddress
    text: str | None = Field(default=None, description="what you ask, as text (first, before any parts)")
    parts: list[Part] = Field(default_factory=list, max_length=limits.PARTS_MAX)
    task_id: TaskId | None = Field(default=None, description="a task of yours waiting on you: this answers it")
    context_id: ContextId | None = Field(default=None, description="the thread to open it in (default: a new one)")
    subject: Subject | None = None
    metadata: dict[str, Any] | None = None
    message_id: Annotated[str, _text(limits.IDEMPOTENCY_KEY_CHARS - 4, blank=False)] | None = Field(
        default=None, description="your id for this message: a repeat with it returns the first task, never a second"
    )


class ArtifactBody(Body):
    artifact_id: Annotated[str, _text(limits.SUBJECT_CHARS, blank=False)] | None = Field(
        default=None, description="default: a new id; give an earlier one's to replace it"
    )
    name: Annotated[str, _text(limits.SUBJECT_CHARS, blank=False)] | None = None
    description: Description | None = None
    parts: list[Part] = Field(min_length=1, max_length=limits.PARTS_MAX)
    metadata: dict[str, Any] | None = None


TASK_STATES: list[JsonValue] = [state.value for state in TaskState]  # a JSON schema's enum


class TaskUpdateRequest(Body):
    """The worker's move: a new state, a status message, artifacts (at least one of them)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": ["state"]},
                {"required": ["message"]},
                {"required": ["parts"], "properties": {"parts": {"minItems": 1}}},
                {"required": ["artifacts"], "properties": {"artifacts": {"minItems": 1}}},
            ]
        },
    )

    state: str | None = Field(
        default=None,
        max_length=40,
        description="working, input-required, auth-required, completed, failed or rejected (default: unchanged)",
        json_schema_extra={"enum": TASK_STATES},
    )
    message: str | None = Field(default=None, description="a status message to the requester, as text")
    parts: list[Part] = Field(default_factory=list, max_length=limits.PARTS_MAX)
    artifacts: list[ArtifactBody] = Field(default_factory=list, max_length=limits.PARTS_MAX)
