"""alice's sessions on a test machine, as the MCP server's session tests look at them: every one
her store holds (ended ones too), and the live ones ``callboard who`` shows."""

from __future__ import annotations

from callboard.model import Session
from callboard.store.sqlite.store import SQLiteStore
from tests.support.cli_runner import CLI


def sessions(machine: CLI) -> list[Session]:
    """Every session alice ever had on this machine's store, ended ones too."""
    store = SQLiteStore(machine.default_db)
    try:
        return store.sessions.list_sessions("default", "alice", include_ended=True)
    finally:
        store.close()


def live_sessions(machine: CLI) -> list[dict]:
    (alice,) = [a for a in machine.run_json("who", agent="observer")["agents"] if a["name"] == "alice"] or [{}]
    return [s for s in alice.get("sessions", []) if s["live"]]
