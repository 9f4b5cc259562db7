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

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from callboard import address, limits
from callboard.errors import BadRequest, CallboardError, TooLarge
from callboard.model import Part

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
    # never as a pydantic error the face does not know.
    model_config = ConfigDict(extra="forbid")

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise refusal(error) from None


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
