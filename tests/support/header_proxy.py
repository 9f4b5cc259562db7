"""A loopback HTTP/1.1 proxy that adds fixed headers to every request it passes on.

The MCP conformance CLI has no way to send extra request headers (it takes only ``--url``), and
every request to the hub's ``/mcp`` needs a bearer token. So the CLI talks to this proxy, which
forwards each request to the hub byte for byte, adding the headers the request does not already
carry; responses (JSON or a Server-Sent Events stream) come back unchanged. The ``Host`` header is
passed on as the client sent it, so the DNS-rebinding checks still reach the hub's own guard.

One upstream connection per client connection; requests on a kept-alive connection are framed by
``Content-Length`` or chunked transfer encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping

MAX_HEAD = 64 * 1024


class HeaderProxy:
    """``with HeaderProxy(upstream_host, upstream_port, headers) as proxy:`` then use ``proxy.port``."""

    def __init__(self, upstream_host: str, upstream_port: int, headers: Mapping[str, str]) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.headers = dict(headers)
        self.port = 0
        self.requests = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="header-proxy", daemon=True)
        self._error: BaseException | None = None

    def __enter__(self) -> HeaderProxy:
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError(f"the header proxy did not start: {self._error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    # --- the proxy's own thread ---

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported by __enter__ if it happens before the start
            self._error = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        connections: set[asyncio.Task[None]] = set()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            connections.add(task)
            try:
                await self._connection(reader, writer)
            except asyncio.CancelledError:  # the proxy is stopping
                pass
            finally:
                connections.discard(task)

        server = await asyncio.start_server(connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            for task in list(connections):
                task.cancel()

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            upstream_r, upstream_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_w.close()
            return
        back = asyncio.create_task(self._pipe(upstream_r, client_w))
        try:
            while await self._forward_request(client_r, upstream_w):
                pass
            with contextlib.suppress(OSError):
                upstream_w.write_eof()
            await back
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            back.cancel()
            for writer in (upstream_w, client_w):
                writer.close()

    async def _forward_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Pass on one request with the added headers; False at the client's end of input."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as end:
            if end.partial:
                raise
            return False
        if len(head) > MAX_HEAD:
            raise ValueError("request head too large")
        lines = head[:-4].split(b"\r\n")
        fields: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip()
        added = [
            f"{name}: {value}".encode("latin-1")
            for name, value in self.headers.items()
            if name.lower().encode("latin-1") not in fields
        ]
        writer.write(b"\r\n".join([*lines, *added]) + b"\r\n\r\n")
        self.requests += 1
        if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            await self._copy_chunked(reader, writer)
        else:
            length = int(fields.get(b"content-length", b"0") or b"0")
            if length:
                writer.write(await reader.readexactly(length))
        await writer.drain()
        return True

    @staticmethod
    async def _copy_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            size_line = await reader.readuntil(b"\r\n")
            writer.write(size_line)
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    trailer = await reader.readuntil(b"\r\n")
                    writer.write(trailer)
                    if trailer == b"\r\n":
                        return
            writer.write(await reader.readexactly(size + 2))

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while chunk := await reader.read(64 * 1024):
                writer.write(chunk)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()
