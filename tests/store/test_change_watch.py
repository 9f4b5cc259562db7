"""The SQLite store's watch: a waiter sleeps until another connection commits, and no longer."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from callboard.store.sqlite.change_watch import FolderWatch
from callboard.store.sqlite.store import SQLiteStore
from tests.support.waiting import scaled


def test_a_commit_by_another_connection_ends_the_wait_and_silence_times_out(tmp_path: Path) -> None:
    path = tmp_path / "mail.db"
    watcher, writer = SQLiteStore(path), SQLiteStore(path)
    try:
        before = watcher.change_counter()
        assert watcher.wait_for_change(0.2) is False  # nothing written: the whole timeout, then no
        threading.Timer(0.3, lambda: writer.directory.ensure_workspace("crew", datetime.now(UTC))).start()
        started = time.monotonic()
        assert watcher.wait_for_change(scaled(60.0)) is True
        assert time.monotonic() - started < scaled(30.0)  # woken by the commit's write, not by the timeout
        # The write is heard as it starts: the commit shows a moment later.
        deadline = time.monotonic() + scaled(5.0)
        while watcher.change_counter() == before and time.monotonic() < deadline:
            time.sleep(0.005)
        assert watcher.change_counter() != before
    finally:
        watcher.close()
        writer.close()


def test_writes_to_other_files_of_the_folder_do_not_wake_it(tmp_path: Path) -> None:
    watch = FolderWatch.of(tmp_path / "mail.db")
    assert watch is not None
    try:
        (tmp_path / "runner.log").write_text("a line")
        assert watch.wait(0.2) is False
        (tmp_path / "mail.db-wal").write_bytes(b"x")
        assert watch.wait(2.0) is True
    finally:
        watch.close()
