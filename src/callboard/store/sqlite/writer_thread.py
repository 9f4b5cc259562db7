"""Group commit for threaded callers without an event loop (``SQLiteDatabase(group_commit=True)``):
one writer thread takes every request waiting (up to a cap), runs them as one transaction, and
repeats, so that one fsync serves all of them."""

from __future__ import annotations

import queue
import threading

from callboard.store.sqlite.writer import GROUP_COMMIT_MAX_BATCH, PendingWrite, Writer, claimed

_STOP = object()  # queued by stop(): the thread ends after everything queued before it


class WriterThread:
    """The writer thread. Its owner orders ``put`` against ``stop`` (nothing is put after)."""

    def __init__(self, writer: Writer, name: str) -> None:
        self._writer = writer
        self._queue: queue.SimpleQueue[PendingWrite | object] = queue.SimpleQueue()
        self._count_lock = threading.Lock()
        self.pending = 0  # requests put and not yet taken
        self._thread = threading.Thread(target=self._write_loop, name=name, daemon=True)
        self._thread.start()

    def is_current(self) -> bool:
        """Whether the caller is this thread (a body that would wait for itself)."""
        return threading.current_thread() is self._thread

    def put(self, request: PendingWrite) -> None:
        with self._count_lock:
            self.pending += 1
        self._queue.put(request)

    def stop(self) -> None:
        """The thread ends once every request put before has committed (``join`` waits)."""
        self._queue.put(_STOP)

    def join(self) -> None:
        if not self.is_current():
            self._thread.join()

    def _write_loop(self) -> None:
        """Take every waiting request (up to a cap), run them as one transaction, repeat; end
        at _STOP, which stop() queues after the last request."""
        stopping = False
        while not stopping:
            item = self._queue.get()
            batch: list[PendingWrite] = []
            while item is not _STOP:
                batch.append(item)  # type: ignore[arg-type]  # a request: the queue holds requests and _STOP
                if len(batch) == GROUP_COMMIT_MAX_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            stopping = item is _STOP
            with self._count_lock:
                self.pending -= len(batch)
            try:
                self._run_batch(batch)
            except BaseException as error:  # a bug here must not leave callers waiting forever
                for request in batch:
                    if not request.future.done():
                        self._writer.fail([request], error)

    def _run_batch(self, batch: list[PendingWrite]) -> None:
        batch = claimed(batch)
        if not batch:
            return
        try:
            outcomes = self._writer.begin_run_commit(batch)
        except BaseException as error:
            self._writer.fail(batch, error)
            return
        self._writer.settle(outcomes)
