"""A stand-in for a Claude Code session's messaging socket: a Unix socket that records the bytes
of each connection it accepts, once the writer has ended it. It never answers, as Claude Code's
receiver does not."""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any


class FrameListener:
    def __init__(self, path: str) -> None:
        self.path = path
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(path)
        os.chmod(path, 0o600)
        self._server.listen(16)
        self._lock = threading.Lock()
        self._received: list[bytes] = []
        self._thread = threading.Thread(target=self._accept, name="frame listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return  # closed
            with connection:
                chunks = []
                while chunk := connection.recv(65536):
                    chunks.append(chunk)
            with self._lock:
                self._received.append(b"".join(chunks))

    def received(self) -> list[bytes]:
        """The bytes of every ended connection, in order."""
        with self._lock:
            return list(self._received)

    def frames(self) -> list[list[dict[str, Any]]]:
        """Each ended connection's lines, parsed."""
        return [[json.loads(line) for line in data.splitlines()] for data in self.received()]

    def close(self) -> None:
        """Stop listening and remove the socket file (as a session that ends does)."""
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (Linux)
        except OSError:
            pass
        self._server.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self._thread.join(timeout=5)

    def __enter__(self) -> FrameListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
