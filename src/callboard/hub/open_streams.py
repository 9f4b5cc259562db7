"""Each credential's open SSE streams and reads (waiting long-polls among them): how many it may
hold at once, and ending them all when its token is revoked.

A revocation through this hub ends them before it answers: a stream writes no event after it,
and a read that had not begun taking mail answers 401 instead (one that had is finished first,
so mail sent once the revocation has answered stays unread). A revocation through another
replica of a shared store is found within ``recheck_seconds`` by asking the store about the
tokens of the open streams.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from callboard.errors import TooManyStreams, Unauthorized
from callboard.hub.options import DEFAULT_MAX_STREAMS
from callboard.service.credentials import REVOKED, Credential, Credentials

log = logging.getLogger("callboard.hub")

_REMEMBERED_REVOCATIONS = 100_000


class OpenStream:
    """One open stream or read of a credential. ``wake`` makes it look at ``revoked``."""

    __slots__ = ("token_id", "counted", "revoked", "_wake", "_taking", "_settled")

    def __init__(self, token_id: str, counted: bool, wake: Callable[[], None]) -> None:
        self.token_id = token_id
        self.counted = counted
        self.revoked = False
        self._wake = wake
        self._taking = 0  # reads of mail in flight (they may mark it read)
        self._settled: asyncio.Event | None = None

    def check(self) -> None:
        """Unauthorized once the token is revoked: nothing more is served to this stream."""
        if self.revoked:
            raise Unauthorized(REVOKED)

    @asynccontextmanager
    async def taking(self) -> AsyncIterator[None]:
        """Around a read that may mark mail read: refused once revoked, waited for by a revocation."""
        self.check()
        self._taking += 1
        try:
            yield
        finally:
            self._taking -= 1
            if self._taking == 0 and self._settled is not None:
                self._settled.set()

    def close(self) -> None:
        self.revoked = True
        self._wake()

    async def settled(self) -> None:
        """Return once no read of this stream is in flight."""
        while self._taking:
            self._settled = asyncio.Event()
            await self._settled.wait()


class OpenStreams:
    """The registry: at most ``per_credential`` counted streams (SSE streams and waiting
    long-polls) per token; every registered one ends when its token is revoked. Used on the
    event loop only."""

    def __init__(self, per_credential: int = DEFAULT_MAX_STREAMS) -> None:
        self.per_credential = per_credential
        self._by_token: dict[str, set[OpenStream]] = {}
        self._secret_hashes: dict[str, str] = {}  # token id -> its secret's hash (to ask the store about it)
        self._counted: dict[str, int] = {}
        self._revoked: dict[str, None] = {}  # token ids revoked while this hub runs, oldest first

    @contextmanager
    def opened(
        self, credential: Credential, secret_hash: str, wake: Callable[[], None] = lambda: None, *, counted: bool = True
    ) -> Iterator[OpenStream]:
        """Register a stream (``counted``: against the cap) of ``credential`` while the block runs."""
        token_id = credential.token_id
        if token_id in self._revoked:  # authenticated just before the revocation, opened just after
            raise Unauthorized(REVOKED)
        if counted and self._counted.get(token_id, 0) >= self.per_credential:
            raise TooManyStreams(
                f"this credential has {self.per_credential} streams and waiting reads open, the most the hub "
                "allows ('callboard up --max-streams'); close one, or use a token per agent.",
                retry_after=5,
            )
        stream = OpenStream(token_id, counted, wake)
        self._by_token.setdefault(token_id, set()).add(stream)
        self._secret_hashes[token_id] = secret_hash
        if counted:
            self._counted[token_id] = self._counted.get(token_id, 0) + 1
        try:
            yield stream
        finally:
            self._forget(stream)

    def _forget(self, stream: OpenStream) -> None:
        streams = self._by_token.get(stream.token_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self._by_token[stream.token_id]
                del self._secret_hashes[stream.token_id]
        if stream.counted:
            left = self._counted[stream.token_id] - 1
            if left:
                self._counted[stream.token_id] = left
            else:
                del self._counted[stream.token_id]

    async def revoke(self, token_id: str) -> None:
        """The token is revoked: its streams end, and this returns once none of its reads is in flight."""
        self._revoked[token_id] = None
        if len(self._revoked) > _REMEMBERED_REVOCATIONS:
            del self._revoked[next(iter(self._revoked))]
        streams = list(self._by_token.get(token_id, ()))
        for stream in streams:
            stream.close()
        for stream in streams:
            await stream.settled()

    async def recheck(self, credentials: Credentials, every: float, blocking: Callable) -> None:
        """Forever: every ``every`` seconds, ask the store whether the tokens of the open streams
        still hold (another replica may have revoked one), and end the streams of those that do not."""
        while True:
            await asyncio.sleep(every)
            by_hash = {secret_hash: token_id for token_id, secret_hash in self._secret_hashes.items()}
            if not by_hash:
                continue
            try:
                gone = await blocking(credentials.revoked_among, list(by_hash))
            except Exception as error:  # the store is away: try again next time (its requests fail meanwhile)
                log.warning("could not check the tokens of the open streams: %s", error)
                continue
            for secret_hash in gone:
                await self.revoke(by_hash[secret_hash])
