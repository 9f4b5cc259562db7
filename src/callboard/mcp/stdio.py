"""Serving MCP over this process's stdin and stdout, read and written by the event loop.

The SDK's own stdio transport reads each line and writes each answer through a worker thread
(three thread hops per call); for a tool that takes a millisecond that is most of the time.
Here the pipes are the loop's, and the SDK's message handling is unchanged: its
``stdio_server`` is given the two streams. As the SDK does, the protocol's descriptors are
taken out of the standard ones first: fd 1 then points at stderr and fd 0 at /dev/null, so
nothing a library prints (or a child reads) can reach or corrupt the protocol stream.
When stdin or stdout is not a pipe (a file, a terminal), the SDK's transport serves as is.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator, Callable

from mcp.server import MCPServer
from mcp.server.stdio import stdio_server


class _LineReader:
    """The protocol's input: UTF-8 lines, as the SDK iterates an async text file."""

    def __init__(self, reader: asyncio.StreamReader, on_end: Callable[[], None] | None = None) -> None:
        self._reader = reader
        self._on_end = on_end

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await self._reader.readline():
            yield line.decode("utf-8", errors="replace")
        # The client closed our stdin: it is done with us, whatever calls are still running.
        if self._on_end is not None:
            self._on_end()


class _Writer:
    """The protocol's output, as the SDK writes to an async text file."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: asyncio.BaseProtocol) -> None:
        self._transport = transport
        self._drain = asyncio.StreamWriter(transport, protocol, None, asyncio.get_running_loop())

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._drain.drain()  # waits only while the reader is behind


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _take_standard_fds() -> tuple[int, int]:
    """Private copies of fd 0 and 1 for the protocol; fd 0 then reads /dev/null, fd 1 writes to stderr."""
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return protocol_in, protocol_out


async def serve_stdio(server: MCPServer, on_input_end: Callable[[], None] | None = None) -> None:
    """Serve ``server`` on stdin/stdout until stdin closes; ``on_input_end`` is called as soon
    as it does (calls still running may keep the serving going after it)."""
    if not (_is_pipe(0) and _is_pipe(1)):
        await server.run_stdio_async()
        return
    loop = asyncio.get_running_loop()
    protocol_in, protocol_out = _take_standard_fds()
    reader = asyncio.StreamReader(limit=2**24)  # one JSON-RPC message per line, however large
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(protocol_in, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(protocol_out, "wb", 0)
    )
    try:
        stdin, stdout = _LineReader(reader, on_input_end), _Writer(transport, protocol)
        # The SDK types both as anyio's AsyncFile (a class), and only iterates one, writes and flushes the other.
        streams = stdio_server(stdin=stdin, stdout=stdout)  # type: ignore[arg-type]  # ours: just those methods
        async with streams as (incoming, outgoing):
            lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on these streams
            await lowlevel.run(incoming, outgoing, lowlevel.create_initialization_options())
    finally:
        transport.close()
