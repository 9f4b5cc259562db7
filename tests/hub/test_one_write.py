"""A response's head and body leave the hub in one write (``http_limits.OneWriteResponse``): one
system call and one TCP segment per JSON answer. A head whose body does not follow at once (a
stream waiting for its first event) still goes out by itself, and nothing is reordered or lost."""

from __future__ import annotations

import asyncio

from callboard.hub.http_limits import OneWriteResponse


class RecordingTransport:
    """The writes a real transport would put on the wire, in order (the edge under test)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "a write after close"
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def test_a_head_and_its_body_leave_in_one_write() -> None:
    async def answer() -> list[bytes]:
        wire = RecordingTransport()
        response = OneWriteResponse(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        response.write(b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n")
        response.write(b"{}")
        await asyncio.sleep(0)  # the loop turns: nothing more is written
        await asyncio.sleep(0)
        return wire.writes

    assert asyncio.run(answer()) == [b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}"]


def test_a_head_without_a_body_yet_goes_out_when_the_loop_turns() -> None:
    async def stream() -> tuple[list[bytes], list[bytes]]:
        wire = RecordingTransport()
        response = OneWriteResponse(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        response.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        held = list(wire.writes)
        await asyncio.sleep(0)  # the stream waits for its first event: its head must not
        response.write(b"5\r\nhello\r\n")
        response.write(b"5\r\nworld\r\n")
        return held, wire.writes

    held, writes = asyncio.run(stream())
    assert held == []
    assert writes == [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
        b"5\r\nhello\r\n",
        b"5\r\nworld\r\n",
    ]


def test_closing_sends_a_held_head_first() -> None:
    async def close_at_once() -> RecordingTransport:
        wire = RecordingTransport()
        response = OneWriteResponse(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        response.write(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
        response.close()
        await asyncio.sleep(0)  # the scheduled flush finds the transport closed: no second write
        return wire

    wire = asyncio.run(close_at_once())
    assert wire.writes == [b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n"]
    assert wire.closed and wire.is_closing()
