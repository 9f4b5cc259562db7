"""The outside-agent pump loads the A2A SDK only once it has a row in hand (remote/sending.py):
a process with no mail for outside agents (`callboard mcp` at its start) never loads it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from callboard.a2a.remote.pump import start_thread
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore

PUMP_WITHOUT_MAIL = """
import asyncio, sys
from callboard.a2a.remote.pump import PumpSettings, RemotePump, start_thread
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore

service = Service(SQLiteStore(sys.argv[1]), machine="m1")
assert asyncio.run(RemotePump(service, PumpSettings()).run_once()) == 0  # claimed: nothing due
stop = start_thread(service)
stop(5.0)
loaded = sorted(m for m in sys.modules if m == "a2a" or m.startswith(("a2a.", "callboard.a2a.remote.sending")))
print(loaded)
"""


def test_a_pump_with_no_mail_for_outside_agents_never_loads_the_a2a_sdk(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PUMP_WITHOUT_MAIL, str(tmp_path / "db.sqlite")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_stopping_the_pump_thread_ends_it(tmp_path: Path) -> None:
    service = Service(SQLiteStore(tmp_path / "db.sqlite"), machine="m1")
    stop = start_thread(service)
    assert any(t.name == "callboard-remote-pump" for t in threading.enumerate())
    stop(10.0)
    assert not any(t.name == "callboard-remote-pump" and t.is_alive() for t in threading.enumerate())
    service.store.close()
