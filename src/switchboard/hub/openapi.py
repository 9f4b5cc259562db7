"""The OpenAPI 3.1 document, written from the route table and the pydantic models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from switchboard import __version__
from switchboard.hub.routes import ROUTES, Route

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
    models: set[type[BaseModel]] = {m for r in ROUTES for m in (r.body, r.answer) if m is not None}
    keys, schema = models_json_schema(
        [(m, "validation") for m in sorted(models, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    refs = {model: keys[(model, "validation")] for model in models}
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, refs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "Switchboard hub", "version": __version__},
        "components": {
            "schemas": {**schema.get("$defs", {}), "Error": _ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }


def _operation(route: Route, refs: dict[type[BaseModel], dict[str, Any]]) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": route.summary, "operationId": route.endpoint.__name__}
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in _path_names(route.path)
    ]
    parameters += [{"name": n, "in": "query", "schema": {"type": t}} for n, t in route.query.items()]
    if route.stream:
        parameters.append({"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}})
    if parameters:
        operation["parameters"] = parameters
    if route.body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": refs[route.body]}}}
    ok: dict[str, Any] = {"description": "OK"}
    if route.stream:
        ok["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
    elif route.answer is not None:
        answer = refs[route.answer]
        ok["content"] = {"application/json": {"schema": {"type": "array", "items": answer} if route.many else answer}}
    error = {
        "description": "An error with a stable code",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    operation["responses"] = {"2XX": ok, "4XX": error}
    if route.public:
        operation["security"] = []
    return operation


def _path_names(path: str) -> list[str]:
    return [piece[1:-1] for piece in path.split("/") if piece.startswith("{")]
