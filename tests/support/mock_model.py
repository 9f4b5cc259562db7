"""A scripted model server on 127.0.0.1 for driving real coding CLIs offline.

It speaks just enough of two wire protocols, streaming (server-sent events) or not:

- the Anthropic Messages API (``POST /v1/messages``), which Claude Code calls;
- the OpenAI Responses API (``POST /v1/responses``), which Codex calls;
- the Gemini API (``POST /v1beta/models/<m>:streamGenerateContent`` and ``:generateContent``),
  which Gemini CLI calls (a request asking for JSON — its next-speaker check — gets
  ``{"next_speaker": "user"}``).

The script is one exchange, decided per request from what the request holds, so retries and
side requests (titles, summaries) cannot derail it:

1. a request that offers a tool named ``send_message`` (in full, or ending in ``__send_message``
   as the CLIs prefix MCP tools) and carries no result for our call → answer with a call of
   that tool with ``tool_input`` (unless ``tool_input`` is None: never call it). The call's id
   is made from its input, so a script whose input changes with the conversation (a second
   task in front of the model) makes a second call later on, and never repeats one;
2. a request that carries the result of that call → answer with ``final_text`` and stop;
3. (Anthropic) a request that offers ``Bash`` and whose latest message saying
   ``RUN_BASH: <command>`` has no tool result after it → answer with a ``Bash`` call of that
   command (the rest of the line);
4. anything else (a request without our tool) → a short text answer.

Every request is recorded (path, headers, parsed JSON body, when it came), so a test can check
that the tool was offered and that its result came back, or what a turn's last user message
said and when it reached the model. ``hold(text)`` keeps back the answer to the requests that
mention ``text`` (each is recorded at once) until ``release()``: a turn stays open mid-request for
as long as a test needs (to kill the CLI there, say).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL = "send_message"
CALL_PREFIX = "call_callboard_"  # our tool calls' ids, in every protocol: this and a digest of the input
TOOL_SEARCH = "ToolSearch"  # Claude Code's loader of deferred tools
SEARCH_CALL_ID = "call_toolsearch_1"
SIDE_TEXT = "ok"
RUN_BASH = "RUN_BASH:"  # a user message asking for a Bash call: RUN_BASH: <command>
BASH = "Bash"


@dataclass(frozen=True)
class Call:
    """A tool call the mock answers with."""

    name: str
    input: dict[str, Any]
    id: str


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or None
    at: float = field(default_factory=time.monotonic)  # when it was read (time.monotonic)

    @property
    def proxied(self) -> bool:
        """A request meant for another host, sent to us as the CLI's proxy."""
        return self.method == "CONNECT" or not self.path.startswith("/")

    @property
    def api(self) -> str | None:
        """'anthropic', 'openai' or None (not a model request)."""
        path = self.path.split("?", 1)[0]
        if self.proxied:
            return None
        if self.method == "POST" and path.endswith("/messages"):
            return "anthropic"
        if self.method == "POST" and path.endswith("/responses"):
            return "openai"
        if self.method == "POST" and (path.endswith(":streamGenerateContent") or path.endswith(":generateContent")):
            return "gemini"
        return None

    def tool_names(self) -> list[str]:
        """The names of the tools this model request offers (both protocols)."""
        if not isinstance(self.body, dict):
            return []
        names: list[str] = []
        for tool in self.body.get("tools") or []:
            names.extend(_tool_names(tool))
            names.extend(d.get("name", "") for d in tool.get("functionDeclarations") or [])  # Gemini
        return names

    def our_tool(self, tool: str = TOOL) -> str | None:
        """The full name under which our ``tool`` (``send_message`` unless told) is offered, if it is."""
        for name in self.tool_names():
            if name == tool or name.endswith(f"__{tool}") or name.endswith((f"_callboard_{tool}", f"-{tool}")):
                return name
        return None

    def deferred_tool(self, tool: str = TOOL) -> str | None:
        """The full name of our ``tool`` when the request names it among the deferred tools
        (ToolSearch offered, our tool not loaded, and no search of ours answered yet)."""
        if TOOL_SEARCH not in self.tool_names() or SEARCH_CALL_ID in json.dumps(self.body):
            return None
        found = re.search(rf"mcp__[A-Za-z0-9_-]+?__{re.escape(tool)}\b", json.dumps(self.body))
        return found.group(0) if found else None

    def tool_result(self, call_id: str | None = None) -> str | None:
        """The text of the result of our tool call ``call_id`` this request carries back (without
        one: of our latest call), if any."""
        results = self._our_results()
        if call_id is None:
            return results[-1][1] if results else None
        return next((text for found, text in results if found in (call_id, None)), None)

    def _our_results(self) -> list[tuple[str | None, str]]:
        """The results of our tool calls this request carries, oldest first: (call id, text);
        the id None where the protocol carries none (any call of ours)."""
        if not isinstance(self.body, dict):
            return []
        found: list[tuple[str | None, str]] = []
        if self.api == "anthropic":
            for message in self.body.get("messages") or []:
                for block in _tool_results(message):
                    call_id = str(block.get("tool_use_id", ""))
                    if call_id.startswith(CALL_PREFIX):
                        found.append((call_id, _text_of(block.get("content"))))
        if self.api == "openai":
            items = self.body.get("input")
            for item in items if isinstance(items, list) else []:
                call_id = str(item.get("call_id", ""))
                if item.get("type") in ("function_call_output", "custom_tool_call_output") and call_id.startswith(
                    CALL_PREFIX
                ):
                    found.append((call_id, _text_of(item.get("output"))))
        if self.api == "gemini":  # no ids of ours: a result is our tool's by its name
            for content in self.body.get("contents") or []:
                for part in content.get("parts") or []:
                    response = part.get("functionResponse")
                    if isinstance(response, dict) and response.get("name", "").endswith(TOOL):
                        found.append((None, json.dumps(response.get("response"))))
        return found

    def messages(self) -> list[dict[str, Any]]:
        """The request's conversation (Anthropic ``messages``; Gemini ``contents`` as role and
        content), or []."""
        if not isinstance(self.body, dict):
            return []
        if self.api == "gemini":
            return [{"role": c.get("role"), "content": c.get("parts") or []} for c in self.body.get("contents") or []]
        if self.api != "anthropic":
            return []
        return [m for m in self.body.get("messages") or [] if isinstance(m, dict)]

    @property
    def wants_json(self) -> bool:
        """A Gemini request for a JSON answer (Gemini CLI's next-speaker and loop checks)."""
        config = self.body.get("generationConfig") if isinstance(self.body, dict) else None
        return isinstance(config, dict) and config.get("responseMimeType") == "application/json"

    def conversation_text(self) -> str:
        """The text of every message of the request's conversation (any role, any block)."""
        return "\n".join(_text_of(m.get("content")) for m in self.messages())

    def mentions(self, text: str) -> bool:
        """Whether ``text`` is anywhere in the request's conversation."""
        return text in self.conversation_text()

    def bash_command(self) -> str | None:
        """The command of the ``RUN_BASH:`` line this request still waits on a Bash call for."""
        if BASH not in self.tool_names():
            return None
        messages = self.messages()
        for index in range(len(messages) - 1, -1, -1):
            text = _text_of(messages[index].get("content"))
            if RUN_BASH in text:
                if any(_tool_results(m) for m in messages[index + 1 :]):
                    return None  # asked and answered
                return text.split(RUN_BASH, 1)[1].split("\n", 1)[0].strip() or None
        return None

    def bash_results(self) -> list[str]:
        """The texts of the Bash results (of the mock's calls) this request carries."""
        return [
            _text_of(block.get("content"))
            for m in self.messages()
            for block in _tool_results(m)
            if str(block.get("tool_use_id", "")).startswith(BASH_CALL_PREFIX)
        ]

    def last_user_text(self) -> str:
        """The text of the request's last user-role message (Anthropic), or ''."""
        if self.api != "anthropic" or not isinstance(self.body, dict):
            return ""
        users = [m for m in self.body.get("messages") or [] if m.get("role") == "user"]
        return _text_of(users[-1].get("content")) if users else ""

    @property
    def streaming(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


BASH_CALL_PREFIX = "call_bash_"


def call_id_of(arguments: dict[str, Any]) -> str:
    """The id of our tool's call with ``arguments``: the same input, the same call."""
    digest = hashlib.sha256(json.dumps(arguments, sort_keys=True).encode()).hexdigest()[:16]
    return f"{CALL_PREFIX}{digest}"


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def _tool_names(tool: dict[str, Any]) -> list[str]:
    # Anthropic {"name"}, Responses {"type":"function","name"}, Chat {"function":{"name"}};
    # a namespace of tools ({"type":"namespace","name","tools":[...]}) lists its members as ns__tool.
    if isinstance(tool.get("tools"), list):
        prefix = tool.get("name") or ""
        return [f"{prefix}__{n}" if prefix else n for inner in tool["tools"] for n in _tool_names(inner)]
    name = tool.get("name") or (tool.get("function") or {}).get("name")
    return [name] if isinstance(name, str) else []


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("output") or json.dumps(content))
    return "" if content is None else json.dumps(content)


@dataclass
class MockModel:
    """The server. ``with MockModel(tool_input={...}) as model:`` then point a CLI at ``model.url``."""

    # None: never call our tool. A function: the input for this request, worked out from what it
    # carries (a task id in the mail, say), or None to leave this request without the call.
    tool_input: dict[str, Any] | Callable[[Recorded], dict[str, Any] | None] | None
    final_text: str = "Done: the message is sent."
    tool: str = TOOL  # the tool the script calls
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._holding: list[str] = []  # requests mentioning one of these wait for the release
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> MockModel:
        model = self

        class Handler(_Handler):
            owner = model

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="mock-model", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self.release()  # no handler waits on past the server
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- what the test checks --------------------------------------------------------------------

    def model_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.api]

    def offered_tool(self) -> str | None:
        """The full name our tool was offered under, in the first request that offered it."""
        return next((name for r in self.model_requests() if (name := r.our_tool(self.tool))), None)

    def tool_results(self) -> list[str]:
        return [text for r in self.model_requests() if (text := r.tool_result()) is not None]

    def requests_saying(self, text: str) -> list[Recorded]:
        """The model requests whose last user message contains ``text``."""
        return [r for r in self.model_requests() if text in r.last_user_text()]

    def proxied(self) -> list[Recorded]:
        """Requests meant for other hosts that reached us as the CLI's proxy (refused)."""
        with self._lock:
            return [r for r in self.requests if r.proxied]

    def proxy_env(self) -> dict[str, str]:
        """Proxy variables that route every other host to this server, which refuses it and
        records it: whatever a CLI tries beyond 127.0.0.1 stays on the machine and shows."""
        loopback = "127.0.0.1,localhost,::1"
        variables = {"HTTP_PROXY": self.url, "HTTPS_PROXY": self.url, "ALL_PROXY": self.url, "NO_PROXY": loopback}
        return {**variables, **{key.lower(): value for key, value in variables.items()}}

    def summary(self) -> str:
        """What the server saw, for a failure message."""
        with self._lock:
            requests = list(self.requests)
        lines = [f"{r.method} {r.path} tools={r.tool_names()} result={r.tool_result()!r}" for r in requests]
        return "\n".join(lines) or "(no requests)"

    # --- holding a request back -----------------------------------------------------------------

    def hold(self, text: str) -> None:
        """Answer no request that mentions ``text`` until ``release()`` (recorded at once)."""
        with self._lock:
            self._holding.append(text)
            self._released.clear()

    def release(self) -> None:
        """Answer the held requests, and hold no more."""
        with self._lock:
            self._holding.clear()
            self._released.set()

    def wait_if_held(self, request: Recorded) -> None:
        with self._lock:
            held = any(request.mentions(text) or text in json.dumps(request.body) for text in self._holding)
        if held:
            self._released.wait()

    # --- the script ------------------------------------------------------------------------------

    def record(self, request: Recorded) -> int:
        """Keep ``request``; its number (1, 2, …) makes the ids of its answer unique."""
        with self._lock:
            self.requests.append(request)
            self._count += 1
            return self._count

    def requests_mentioning(self, text: str) -> list[Recorded]:
        """The model requests that carry ``text`` anywhere in their conversation."""
        return [r for r in self.model_requests() if r.mentions(text)]

    def call_for(self, request: Recorded, number: int) -> Call | None:
        """The tool call that answers ``request`` (the ``number``-th), if the answer is one."""
        tool = request.our_tool(self.tool)
        arguments = self._arguments(request)
        if tool and arguments is not None and request.tool_result(call_id_of(arguments)) is None:
            return Call(tool, arguments, call_id_of(arguments))
        deferred = request.deferred_tool(self.tool)
        if tool is None and deferred and arguments is not None:
            # Claude Code 2.1.332 defers MCP tools behind ToolSearch: load ours first, as a model does.
            return Call(TOOL_SEARCH, {"query": f"select:{deferred}", "max_results": 1}, SEARCH_CALL_ID)
        command = request.bash_command()
        if command is not None:
            return Call(
                BASH, {"command": command, "description": "Run the command asked for"}, f"{BASH_CALL_PREFIX}{number}"
            )
        return None

    def _arguments(self, request: Recorded) -> dict[str, Any] | None:
        """Our tool's input for this request, if the script calls it here."""
        if self.tool_input is None:
            return None
        return self.tool_input(request) if callable(self.tool_input) else self.tool_input

    def text_for(self, request: Recorded) -> str:
        """The text that answers ``request`` when it is not a call of our tool."""
        return self.final_text if request.tool_result() is not None else SIDE_TEXT


class _Handler(BaseHTTPRequestHandler):
    owner: MockModel
    number = 0  # of the request being answered
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — quiet
        pass

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _record(self) -> Recorded:
        request = Recorded(self.command, self.path, dict(self.headers.items()), self._read_body())
        self.number = self.owner.record(request)
        return request

    def do_GET(self) -> None:  # noqa: N802
        request = self._record()
        if request.path.split("?", 1)[0].endswith("/models"):
            self._json(200, {"data": [], "object": "list", "models": []})
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": "not here"}})

    def do_CONNECT(self) -> None:  # noqa: N802 — a CLI using us as its proxy: refuse, and record it
        self._record()
        self._json(403, {"error": {"type": "forbidden", "message": "no traffic leaves this machine"}})
        self.close_connection = True

    def do_HEAD(self) -> None:  # noqa: N802
        self._record()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        request = self._record()
        if request.api is not None:
            self.owner.wait_if_held(request)
        try:
            self._answer(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a held request's CLI was killed meanwhile: nobody to answer

    def _answer(self, request: Recorded) -> None:
        if request.api == "anthropic":
            self._anthropic(request)
        elif request.api == "openai":
            self._openai(request)
        elif request.api == "gemini":
            self._gemini(request)
        elif request.path.split("?", 1)[0].endswith("/count_tokens"):
            self._json(200, {"input_tokens": 100})
        else:
            self._json(404, {"error": {"type": "not_found_error", "message": "not here"}})

    # --- plumbing --------------------------------------------------------------------------------

    def _json(self, status: int, document: Any) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: Iterator[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    # --- Anthropic Messages API ------------------------------------------------------------------

    def _anthropic(self, request: Recorded) -> None:
        call = self.owner.call_for(request, self.number)
        body = request.body if isinstance(request.body, dict) else {}
        model = body.get("model") or "claude-mock"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        text = self.owner.text_for(request)
        if call is not None:
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
            stop_reason = "tool_use"
        else:
            block = {"type": "text", "text": text}
            stop_reason = "end_turn"
        message = {
            "id": f"msg_mock_{self.number}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        if not request.streaming:
            self._json(200, message)
            return

        def events() -> Iterator[tuple[str, dict[str, Any]]]:
            yield "message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}
            if call is not None:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": text}
            yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}
            yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": 0}
            yield (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
            yield "message_stop", {"type": "message_stop"}

        self._sse(events())

    # --- OpenAI Responses API --------------------------------------------------------------------

    def _openai(self, request: Recorded) -> None:
        call = self.owner.call_for(request, self.number)
        body = request.body if isinstance(request.body, dict) else {}
        number = self.number
        response_id = f"resp_mock_{number}"
        text = self.owner.text_for(request)
        if call is not None:
            tool, arguments = call.name, call.input
            # A tool inside a namespace (Codex: mcp__<server>) is called by its bare name plus
            # the namespace.
            namespace, _, name = tool.rpartition("__") if tool.endswith(f"__{self.owner.tool}") else ("", "", tool)
            item = {
                "type": "function_call",
                "id": f"fc_mock_{number}",
                "call_id": call.id,
                **({"namespace": namespace} if namespace else {}),
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": f"msg_mock_{number}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        response = {
            "id": response_id,
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model") or "mock",
            "output": [item],
            "usage": usage,
        }
        if not request.streaming:
            self._json(200, response)
            return

        def events() -> Iterator[tuple[str, dict[str, Any]]]:
            created = {**response, "status": "in_progress", "output": [], "usage": None}
            yield "response.created", {"type": "response.created", "response": created}
            yield "response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}
            if call is None:
                yield (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": text,
                    },
                )
            yield "response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}
            yield "response.completed", {"type": "response.completed", "response": response}

        self._sse(events())

    # --- Gemini API ------------------------------------------------------------------------------

    def _gemini(self, request: Recorded) -> None:
        call = None if request.wants_json else self.owner.call_for(request, self.number)
        if request.wants_json:
            part: dict[str, Any] = {"text": json.dumps({"reasoning": "the turn is done", "next_speaker": "user"})}
        elif call is not None:
            part = {"functionCall": {"name": call.name, "args": call.input}}
        else:
            part = {"text": self.owner.text_for(request)}
        answer = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-mock",
        }
        if ":streamGenerateContent" not in request.path:
            self._json(200, answer)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(f"data: {json.dumps(answer)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True
