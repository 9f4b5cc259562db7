"""The OpenAPI 3.1 document, written from the route table and the pydantic models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from callboard import __version__, address, headers, limits
from callboard.hub.routes import ROUTES, Route

_ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}


def build_openapi() -> dict[str, Any]:
    # A request body is described as the hub validates it, an answer as the hub writes it
    # (computed fields such as a session's address included).
    wanted: set[tuple[type[BaseModel], JsonSchemaMode]] = {(r.body, "validation") for r in ROUTES if r.body}
    wanted |= {(r.answer, "serialization") for r in ROUTES if r.answer}
    keys, schema = models_json_schema(
        sorted(wanted, key=lambda pair: (pair[0].__name__, pair[1])), ref_template="#/components/schemas/{model}"
    )
    refs = {pair: keys[pair] for pair in wanted}
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, refs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Callboard hub", "version": __version__},
        "components": {
            "schemas": {**schema.get("$defs", {}), "Error": _ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }


Refs = dict[tuple[type[BaseModel], JsonSchemaMode], dict[str, Any]]


def _operation(route: Route, refs: Refs) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": route.summary, "operationId": route.endpoint.__name__}
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": _PATH_PARAMETERS[name]}
        for name in _path_names(route.path)
    ]
    for name, stated in route.query.items():
        schema = {k: v for k, v in stated.items() if k != "required"}
        parameters.append({"name": name, "in": "query", "required": bool(stated.get("required")), "schema": schema})
    if route.stream:
        parameters.append(
            {
                "name": "Last-Event-ID",
                "in": "header",
                "description": "resume after this delivery sequence number (the id of the last event received)",
                "schema": {"type": "string", "pattern": address.SEQ_PATTERN},
            }
        )
    if not route.public:
        parameters += _ACTING_HEADERS
    if parameters:
        operation["parameters"] = parameters
    if route.body is not None:
        body = refs[(route.body, "validation")]
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    ok: dict[str, Any] = {"description": "OK"}
    if route.stream:
        ok["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
    elif route.answer is not None:
        answer = refs[(route.answer, "serialization")]
        ok["content"] = {"application/json": {"schema": {"type": "array", "items": answer} if route.many else answer}}
    error = {
        "description": "An error with a stable code",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if route.agent and not route.public:
        ok["headers"] = {headers.UNREAD_HEADER: _UNREAD}
    links = _LINKS.get(operation["operationId"])
    if links:
        ok["links"] = {target: {"operationId": target, **link} for target, link in links.items()}
    operation["responses"] = {"2XX": ok, "4XX": error}
    if route.public:
        operation["security"] = []
    return operation


# OpenAPI links: what an answer names, and the operations that take it (a client, or a stateful
# fuzzer, follows a created thing to what can be done with it): operation -> {target: link}.
def _path(parameter: str, field: str) -> dict[str, Any]:
    return {"parameters": {parameter: f"$response.body#/{field}"}}


def _message_ids(field: str) -> dict[str, Any]:
    return {"requestBody": {"message_ids": [f"$response.body#/{field}"]}}


_FIRST_MAIL = "items/0/message/id"
_LINKS: dict[str, dict[str, dict[str, Any]]] = {
    "send_message": {"message_status": _path("message_id", "message_id")},
    "read": {
        "ack": _message_ids(_FIRST_MAIL),
        "mark_read": _message_ids(_FIRST_MAIL),
        "message_status": _path("message_id", _FIRST_MAIL),
    },
    "inbox": {"ack": _message_ids("0/message/id"), "mark_read": _message_ids("0/message/id")},
    "register_session": {"heartbeat": _path("session_id", "id"), "end_session": _path("session_id", "id")},
    "create_agent": {
        "describe_agent": _path("name", "name"),
        "update_agent": _path("name", "name"),
        "delete_agent": _path("name", "name"),
    },
    "create_channel": {
        "join_channel": _path("name", "name"),
        "leave_channel": _path("name", "name"),
        "channel_members": _path("name", "name"),
    },
    "create_token": {"revoke_token": _path("token_id", "id")},
    "open_task": {
        "get_task": _path("task_id", "task/id"),
        "update_task": _path("task_id", "task/id"),
        "cancel_task": _path("task_id", "task/id"),
    },
    "open_round": {
        "get_round": _path("round_id", "id"),
        "propose": _path("round_id", "id"),
        "vote": _path("round_id", "id"),
        "cancel_round": _path("round_id", "id"),
    },
}

# The answer header with the acting agent's unread count (hub/endpoint.py sets it).
_UNREAD: dict[str, Any] = {
    "description": "the unread messages of the agent this request acted as, after it (for a session: "
    "not counting those pushed to its agent's other live sessions)",
    "schema": {"type": "integer", "minimum": 0},
}

# What each path parameter looks like (its canonical form: names are also taken in upper case).
_ID = {"type": "string", "pattern": address.UUID_PATTERN, "maxLength": limits.ID_CHARS}
_PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "message_id": _ID,
    "session_id": _ID,
    "token_id": _ID,
    "task_id": _ID,
    "round_id": _ID,
    "name": {"type": "string", "pattern": address.NAME_PATTERN, "maxLength": limits.NAME_CHARS},
    "agent": {"type": "string", "pattern": address.NAME_PATTERN, "maxLength": limits.NAME_CHARS},
}
_PROCESS = rf"^{address.MACHINE_REGEX}(?: {address.PID_REGEX}:(?:[0-9]{{1,{limits.SEQ_DIGITS}}}|-)){{0,16}}$"
# The headers with which a request names who it acts as (headers.py); a user or admin token needs the agent's.
_ACTING_HEADERS: list[dict[str, Any]] = [
    {
        "name": headers.AGENT_HEADER,
        "in": "header",
        "description": "the agent this request acts as (a user or admin token names it; an agent token is its own)",
        "schema": {"type": "string", "pattern": address.NAME_PATTERN, "maxLength": limits.NAME_CHARS},
    },
    {
        "name": headers.WORKSPACE_HEADER,
        "in": "header",
        "description": "the workspace (default: the token's own)",
        "schema": {"type": "string", "pattern": address.NAME_PATTERN, "maxLength": limits.NAME_CHARS},
    },
    {
        "name": headers.SESSION_HEADER,
        "in": "header",
        "description": "the session this request acts in, by id",
        "schema": _ID,
    },
    {
        "name": headers.PROCESS_HEADER,
        "in": "header",
        "description": "the session this request acts in, by the calling process: machine pid:start pid:start …",
        "schema": {"type": "string", "pattern": _PROCESS},
    },
]


def _path_names(path: str) -> list[str]:
    return [piece[1:-1] for piece in path.split("/") if piece.startswith("{")]
