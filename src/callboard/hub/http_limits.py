"""What a client may make the hub hold before anyone knows who it is: a request's head is at most
MAX_HEAD_BYTES (431 past that), and must arrive within HEAD_TIMEOUT_SECONDS of the connection or
of its first byte; a request's body must arrive within BODY_TIMEOUT_SECONDS of its head.

uvicorn's httptools protocol, which the hub runs on, sets none of these: 20 MB of headers were
read and answered, and a connection that sent half a request head (or nothing) was held
forever. These limits live at the protocol, below the application: the bytes never reach it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from callboard.errors import CallboardError, HeadersTooLarge, RequestTimeout
from callboard.hub.errors import error_document, http_status

MAX_HEAD_BYTES = 64 * 1024  # the request line and every header: ample for any token or header the hub reads
HEAD_TIMEOUT_SECONDS = 10.0
BODY_TIMEOUT_SECONDS = 30.0  # a body is at most 1 MiB (hub.context.MAX_BODY_BYTES)
LINGER_SECONDS = 2.0  # after refusing a request, what the client still sends is read and dropped this long


class _HeadTooLarge(Exception):
    """Raised in the parser's callback to stop it: the head is over MAX_HEAD_BYTES."""


_IDLE, _HEAD, _BODY = 0, 1, 2  # no request begun; a request's head begun; its head read, its body not yet


class LimitedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits above; everything else as uvicorn does it.

    A request that arrives in one read (nearly all) costs no timer: one is set only when a read
    ends in the middle of a head or a body."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase = _IDLE
        self._phase_began = 0.0  # loop time
        self._head_bytes = 0  # bytes received since the last request ended, until a head ends
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._refused = False  # answered and closing: what still arrives is dropped

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # a server's protocol is only ever made with a stream transport
        super().connection_made(transport)
        # A connection must begin a request soon (afterwards uvicorn's keep-alive timeout
        # closes a connection idle between requests).
        self._head_timer = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """As uvicorn's, but counting the bytes of a head as they come (a single header of
        megabytes would otherwise be gathered whole before the parser says anything)."""
        if self._refused:
            return
        self._unset_keepalive_if_required()
        if self._phase != _BODY:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as error:
            if not isinstance(error.__context__, _HeadTooLarge):
                self._invalid_request()
                return
            self._refuse_head()
            return
        except httptools.HttpParserError:
            self._invalid_request()
            return
        except httptools.HttpParserUpgrade:
            self._cancel_timers()  # another protocol takes the connection over, or nobody does
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if self._phase == _HEAD:
            if self._head_bytes > MAX_HEAD_BYTES:  # a head still arriving, already too large
                self._refuse_head()
            elif self._head_timer is None:
                self._head_timer = self.loop.call_at(self._phase_began + HEAD_TIMEOUT_SECONDS, self._head_too_slow)
        elif self._phase == _BODY and self._body_timer is None:
            self._body_timer = self.loop.call_at(self._phase_began + BODY_TIMEOUT_SECONDS, self._body_too_slow)

    def _invalid_request(self) -> None:
        msg = "Invalid HTTP request received."
        self.logger.warning(msg)
        self.send_400_response(msg)

    # --- the parser's callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._phase, self._phase_began = _HEAD, self.loop.time()

    def on_headers_complete(self) -> None:
        if len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers) > MAX_HEAD_BYTES:
            raise _HeadTooLarge  # the head came in one piece: measured exactly here
        self._phase, self._phase_began = _BODY, self.loop.time()
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before:  # a new request's cycle (an upgrade makes none)
            self.cycle.transport = OneWriteResponse(self.transport, self.loop)  # type: ignore[assignment]  # the cycle uses only write, close and is_closing

    def on_message_complete(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        self._phase, self._head_bytes = _IDLE, 0
        super().on_message_complete()

    # --- refusing ------------------------------------------------------------------------------

    def _refuse_head(self) -> None:
        self._answer_and_close(
            HeadersTooLarge(f"the request's line and headers are over {MAX_HEAD_BYTES // 1024} KiB; send less.")
        )

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self._head_bytes == 0:  # not a byte of a request: nobody to answer
            self.transport.close()
            return
        self._answer_and_close(
            RequestTimeout(f"the request's headers did not arrive within {HEAD_TIMEOUT_SECONDS:g} s.")
        )

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        self._answer_and_close(RequestTimeout(f"the request's body did not arrive within {BODY_TIMEOUT_SECONDS:g} s."))

    def _answer_and_close(self, error: CallboardError) -> None:
        """Answer ``error`` in the hub's JSON error shape, unless an answer has begun, and close."""
        self._cancel_timers()
        cycle = self.cycle
        if cycle is None or not cycle.response_started or cycle.response_complete:
            body = json.dumps(error_document(error.code, error.message)).encode()
            head = [STATUS_LINE[http_status(error)]]
            head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
            head += [
                b"content-type: application/json\r\n",
                b"content-length: %d\r\n" % len(body),
                b"connection: close\r\n\r\n",
            ]
            self.transport.write(b"".join(head) + body)
        if cycle is not None and not cycle.response_complete:
            # The application may still be at work on this request: it now reads a disconnect,
            # and whatever it answers goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
        self._refused = True
        if self.transport.can_write_eof():
            # Closing with unread bytes would reset the connection, and a client still sending
            # (megabytes of headers) would lose the answer: end our side, drop what comes, then close.
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:  # TLS cannot half-close
            self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None


class OneWriteResponse:
    """The transport as one response's cycle sees it: the response's head is held back until its
    body's first write, and goes out with it. uvicorn writes a head and its body separately: two
    system calls and two TCP segments for each JSON answer, where one does. A head whose body does
    not follow at once (a stream waiting for its first event) goes out by itself when the loop
    has run what is ready."""

    __slots__ = ("_transport", "_loop", "_head", "_began")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None
        self._began = False

    def write(self, data: bytes) -> None:
        if not self._began:  # the cycle's first write is the response's head
            self._began = True
            self._head = data
            self._loop.call_soon(self.flush)
            return
        head, self._head = self._head, None
        self._transport.write(data if head is None else head + data)

    def flush(self) -> None:
        head, self._head = self._head, None
        if head is not None and not self._transport.is_closing():
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()
