"""What a Claude Code session reports back about frames we wrote into its messaging socket.

Claude Code answers nothing on the connection a frame came on, and nothing for a frame it
delivers. For one it holds (for the user's approval), refuses, or later drops or releases, it
sends a ``peer_message_status`` control frame, on a new connection, to the address the frame
gave as ``from`` ("uds:<path>") — when that socket is in the same folder as the session's own,
and the process listening there is the one that wrote the frame (seen in 2.1.332:
``{"type":"control","action":"peer_message_status","status":"held"|"expired"|…,
"status_detail":"refused","reason":…,"orig_msg_id":<our frame's msg_id>}``).

So the socket injector listens on ``<that folder>/<its pid>.sock`` while it runs, names it in each
frame with the frame's own id, and hands each receipt to ``on_receipt`` with the ids of the
messages that frame carried; the service records it and returns mail that will never reach the
model (``handing``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger("callboard.socket")

READ_LIMIT = 64 * 1024  # a receipt is one short line
KEPT_FRAMES = 1000  # frames remembered for their receipts (a receipt comes soon, if at all)

# (message ids, status, reason): status is Claude Code's, "refused" for an expired one it refused.
Receipt = Callable[[Sequence[str], str, str | None], None]


class ReceiptListener:
    """A Unix socket beside the session's, where its receipts for our frames arrive."""

    def __init__(self, session_socket: str, on_receipt: Receipt) -> None:
        self.path = str(Path(session_socket).parent / f"{os.getpid()}.sock")
        self._on_receipt = on_receipt
        self._frames: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._thread = threading.Thread(target=self._accept, name="callboard socket receipts", daemon=True)

    @property
    def address(self) -> str:
        return f"uds:{self.path}"

    def start(self) -> bool:
        """Listen; False (and no receipts) when the socket cannot be made."""
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(self.path)
            os.chmod(self.path, 0o600)
            server.listen(8)
        except OSError as error:
            server.close()
            log.info("no receipts from the Claude Code session (cannot listen on %s: %s)", self.path, error)
            return False
        self._server = server
        self._thread.start()
        return True

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        try:
            server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        server.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def new_frame(self, message_ids: Sequence[str]) -> str:
        """An id for a frame carrying these messages, to match its receipts."""
        frame_id = str(uuid.uuid4())
        with self._lock:
            if len(self._frames) >= KEPT_FRAMES:
                self._frames.pop(next(iter(self._frames)))
            self._frames[frame_id] = tuple(message_ids)
        return frame_id

    def _accept(self) -> None:
        while (server := self._server) is not None:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5.0)
                data = b""
                try:
                    while len(data) < READ_LIMIT and (chunk := connection.recv(READ_LIMIT)):
                        data += chunk
                except OSError:
                    pass
            for line in data.splitlines():
                self.handle(line)

    def handle(self, line: bytes) -> None:
        """One line that came in: a receipt for one of our frames is passed on."""
        try:
            frame = json.loads(line)
        except ValueError:
            return
        if not isinstance(frame, dict) or frame.get("action") != "peer_message_status":
            return
        with self._lock:
            ids = self._frames.get(str(frame.get("orig_msg_id")))
        status = frame.get("status")
        if not ids or not isinstance(status, str):
            return
        if status == "expired" and frame.get("status_detail") == "refused":
            status = "refused"
        reason = frame.get("reason") if isinstance(frame.get("reason"), str) else None
        try:
            self._on_receipt(ids, status, reason)
        except Exception as error:  # a receipt lost is a history line lost, not a reason to stop
            log.warning("could not record a receipt from the Claude Code session: %r", error)
