"""Several processes on one store: a command waits for another writer's lock, it never fails on it."""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest


def test_a_command_on_a_fresh_store_waits_for_another_writer_instead_of_failing(cli):
    """Two agents' first commands often start together on a new store.

    Stand-in for the other process: this test opens the not-yet-created database first and
    holds a write transaction. A callboard command started meanwhile must wait its turn (the
    store's busy timeout), not exit with 'database is locked'.
    """
    cli.callboard_home.mkdir(parents=True)
    holder = sqlite3.connect(cli.default_db, isolation_level=None)
    proc = None
    try:
        holder.execute("BEGIN IMMEDIATE")
        proc = cli.spawn("whoami", "--json", agent="alice")
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            pass  # still waiting for the lock, as it should
        else:
            pytest.fail(
                f"'whoami' gave up while another process held the store's write lock (exit {proc.returncode}):\n{out}{err}"
            )
        holder.execute("COMMIT")
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, f"{out}\n{err}"
        assert json.loads(out)["agent"] == "alice"
    finally:
        holder.close()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()
