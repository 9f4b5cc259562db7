"""Request bodies of the REST API that are the hub's own shape of an operation (the ones the
service takes as they come are the core's ``callboard.requests``, written as those are: unknown
fields refused, bounds from ``callboard.limits`` checked, names and addresses only described).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, JsonValue

from callboard import address, limits
from callboard.model import Part
from callboard.requests import (
    Description,
    MessageId,
    Name,
    Request,
    described,
    text_field,
)
from callboard.tasks import TaskState

MessageIds = Annotated[list[MessageId], Field(min_length=1, max_length=limits.MESSAGE_IDS_MAX)]


class AckRequest(Request):
    message_ids: MessageIds


class MarkReadRequest(Request):
    message_ids: MessageIds


class ConfirmSurfacedRequest(Request):
    message_ids: MessageIds
    evidence: Literal["transcript", "hook", "turn"] = Field(
        default="transcript", description="how the model's context is known to hold them"
    )


class ReceiptRequest(Request):
    message_ids: MessageIds
    status: Literal["held", "delivered", "expired", "refused", "denied", "dropped"] = Field(
        description="what the session's client reported about the frame that carried them"
    )
    reason: str | None = Field(default=None, max_length=limits.DELIVERY_ERROR_CHARS)


class HeartbeatRequest(Request):
    delivery_error: Annotated[str, text_field(limits.DELIVERY_ERROR_CHARS)] | None = Field(
        default=None, description="what the session's delivery path reports broken"
    )


Skills = Annotated[
    list[Annotated[str, text_field(limits.SKILL_CHARS, blank=False)]], Field(max_length=limits.SKILLS_MAX)
]


class AgentRequest(Request):
    name: Name
    description: Description | None = None
    skills: Skills = Field(default_factory=list)


class RemoteRequest(Request):
    name: Name
    url: Annotated[str, Field(max_length=limits.URL_CHARS, description="where the outside agent's card is")]
    token: Annotated[str, Field(max_length=4096, description="a bearer token to send it")] | None = None


class AgentUpdate(Request):
    description: Description | None = None
    skills: Skills | None = None


class ChannelRequest(Request):
    name: Annotated[str, Field(json_schema_extra=described(address.CHANNEL_PATTERN, limits.NAME_CHARS + 1))]
    description: Description | None = None
    invite_only: bool = Field(default=False, description="members are added by its creator or a person's token")


class InviteRequest(Request):
    agents: list[Name] = Field(
        min_length=1, max_length=limits.RECIPIENTS_MAX, description="existing agents to add to the channel"
    )


class TokenRequest(Request):
    kind: Literal["admin", "user", "agent"] | None = Field(
        default=None, description="default: agent if agent is given, else user"
    )
    agent: Name | None = None
    workspace: Name | None = None
    label: Annotated[str, text_field(limits.TOKEN_LABEL_CHARS, blank=False)] | None = None


# --- tasks -------------------------------------------------------------------------------------


class ArtifactBody(Request):
    artifact_id: Annotated[str, text_field(limits.SUBJECT_CHARS, blank=False)] | None = Field(
        default=None, description="default: a new id; give an earlier one's to replace it"
    )
    name: Annotated[str, text_field(limits.SUBJECT_CHARS, blank=False)] | None = None
    description: Description | None = None
    parts: list[Part] = Field(min_length=1, max_length=limits.PARTS_MAX)
    metadata: dict[str, Any] | None = None


TASK_STATES: list[JsonValue] = [state.value for state in TaskState]  # a JSON schema's enum


class TaskUpdateRequest(Request):
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
