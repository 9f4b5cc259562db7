"""The checkpointer (``sqlite_checkpointer``): while a store group-commits on a loop (as the
hub's does), a thread of its own copies the log into the database file, so that no commit has
to; it ends when the store detaches or closes."""

from __future__ import annotations

import threading
from pathlib import Path

from callboard.store.sqlite.loop_commit import SERVER_AUTOCHECKPOINT_PAGES
from callboard.store.sqlite.store import SQLiteStore
from tests.store.conftest import attach_here, db
from tests.support.loop_thread import LOOP_DEADLINE, LoopThread
from tests.support.waiting import DEADLINE, wait_until

ROWS = 40
ROW_BYTES = 8192  # ~80 pages in all: far below the limit at which a commit would checkpoint


def checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "callboard-checkpoint"]


def fill(store: SQLiteStore) -> None:
    db(store).submit(lambda conn: conn.execute("CREATE TABLE filler (data BLOB)")).result(DEADLINE)
    for _ in range(ROWS):
        db(store).submit(lambda conn: conn.execute("INSERT INTO filler VALUES (zeroblob(?))", (ROW_BYTES,))).result(
            DEADLINE
        )


def test_what_an_attached_store_commits_reaches_the_database_file_without_a_commit_checkpointing(
    attached: SQLiteStore, path: Path
):
    assert ROWS * ROW_BYTES // 4096 < SERVER_AUTOCHECKPOINT_PAGES
    before = path.stat().st_size
    fill(attached)
    wait_until(lambda: path.stat().st_size >= before + ROWS * ROW_BYTES, DEADLINE, "the log copied into the file")


def test_the_checkpointer_ends_when_the_store_detaches(attached: SQLiteStore, loop_thread: LoopThread):
    fill(attached)
    assert len(checkpointers()) == 1
    loop_thread.run(db(attached).detach(), LOOP_DEADLINE)
    assert checkpointers() == []


def test_the_checkpointer_ends_when_the_store_closes_without_detaching(path: Path, loop_thread: LoopThread):
    store = SQLiteStore(path)
    loop_thread.run(attach_here(store), LOOP_DEADLINE)
    assert len(checkpointers()) == 1
    store.close()
    assert checkpointers() == []
