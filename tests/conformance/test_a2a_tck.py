"""The A2A TCK (a2aproject/a2a-tck, branch 1.0-dev; ``/work/shared/tools/a2a-tck``) against the hub,
its routing and authentication included, over JSON-RPC and HTTP+JSON at ``--level must``.

The system under test is a Callboard agent, ``tck``, answered by a conformance agent
(``tests/support/a2a_conformance_agent.py``) that follows its mailbox and acts on the TCK's
message-id prefixes with the tools every agent has (``update_task``). The TCK sends no
credentials, so it talks to the hub through ``HeaderProxy``, which adds an agent token; the hub
itself stays closed. Push notifications go to the TCK's own webhook receiver on loopback (the
hub allows private webhooks for this run).

The one known failure is on the TCK's side: HTTP_JSON-SVC-001 (it wants ``application/json``;
A2A 1.0.1 and the SDK answer ``application/a2a+json``). JSONRPC-SSE-002, where the SDK alone
answers -32700, passes: the door answers a JSON-RPC body not declared JSON with -32005.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import venv
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from callboard.model import Message
from tests.support.a2a_conformance_agent import ConformanceAgent
from tests.support.a2a_hub import InProcessHub
from tests.support.header_proxy import HeaderProxy
from tests.support.postgres import fresh_database

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

TCK_SOURCE = Path("/work/shared/tools/a2a-tck")
MUST_AIM = 97.0  # percent of MUST requirements passed
KNOWN_FAILURES = {"HTTP_JSON-SVC-001"}
AGENT, CLIENT = "tck", "tck-client"
RUN_TIMEOUT = 800.0


@pytest.fixture(scope="module")
def tck(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The TCK copied (it writes reports/ beside itself) and installed into a venv of its own."""
    if not TCK_SOURCE.is_dir():
        pytest.skip(f"the A2A TCK is not at {TCK_SOURCE}")
    root = tmp_path_factory.mktemp("a2a-tck")
    source = root / "a2a-tck"
    shutil.copytree(TCK_SOURCE, source)
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)], check=True, timeout=600)
    return source, python


def a2a_message_ids(store: str) -> Any:
    """``a2a_id_of(message)``: the A2A client's message id the store keeps beside a mail (read
    straight from the store: a worker is not shown it)."""
    if store.startswith("postgresql"):
        import psycopg

        connection: Any = psycopg.connect(store, autocommit=True)
        query = "SELECT a2a_message_id FROM messages WHERE id = %s"
    else:
        connection = sqlite3.connect(f"file:{store}?mode=ro", uri=True, check_same_thread=False)
        query = "SELECT a2a_message_id FROM messages WHERE id = ?"

    def a2a_id_of(message: Message) -> str | None:
        row = connection.execute(query, (message.id,)).fetchone()
        return row[0] if row else None

    return a2a_id_of


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def sut(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, InProcessHub, ConformanceAgent]]:
    """The hub on the embedded store, then on PostgreSQL, with the conformance agent and the proxy."""
    root = tmp_path_factory.mktemp("tck-hub")
    with ExitStack() as stack:
        pg = stack.enter_context(fresh_database()) if request.param == "postgresql" else None
        hub = stack.enter_context(InProcessHub(root, allow_private_webhooks=True, store=pg))
        hub.describe(AGENT, "The A2A TCK's system under test: answers by message-id prefix.", ["tck"])
        token = hub.token(CLIENT)
        port = int(hub.url.rsplit(":", 1)[1])
        ids = a2a_message_ids(pg or str(root / "callboard.db"))
        agent = stack.enter_context(ConformanceAgent(hub.service, hub.caller(AGENT), ids))
        proxy = stack.enter_context(HeaderProxy("127.0.0.1", port, {"Authorization": f"Bearer {token}"}))
        yield f"http://127.0.0.1:{proxy.port}/a2a/{hub.workspace}/{AGENT}", hub, agent


def test_the_tck_passes_at_least_97_percent_of_must(
    tck: tuple[Path, Path], sut: tuple[str, InProcessHub, ConformanceAgent]
) -> None:
    source, python = tck
    url, hub, agent = sut
    shutil.rmtree(source / "reports", ignore_errors=True)  # this store's run alone
    argv = [str(python), "run_tck.py", "--sut-host", url, "--transport", "jsonrpc,http_json", "--level", "must"]
    argv += ["--", "--webhook-host=127.0.0.1"]
    run = subprocess.run(argv, cwd=source, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    report_path = source / "reports" / "compatibility.json"
    assert report_path.exists(), f"the TCK wrote no report:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    report = json.loads(report_path.read_text())
    failures = failed_requirements(report)
    print(json.dumps({"summary": report.get("summary"), "failed": failures}, indent=2))
    print(run.stdout[-6000:], file=sys.stderr)
    assert agent.failures == [], agent.failures
    assert hub.errors == [], "the hub logged errors:\n" + "\n".join(hub.errors)
    must = must_percent(report)
    assert must >= MUST_AIM, f"MUST {must:.1f}% < {MUST_AIM}%; failed: {failures}"
    assert set(failures) <= KNOWN_FAILURES, f"failures beyond the known ones: {sorted(set(failures) - KNOWN_FAILURES)}"


def failed_requirements(report: dict[str, Any]) -> dict[str, list[str]]:
    """Each failed requirement with the TCK's reasons."""
    return {
        req_id: entry.get("errors", [])
        for req_id, entry in (report.get("per_requirement") or {}).items()
        if entry.get("status") == "FAIL"
    }


def must_percent(report: dict[str, Any]) -> float:
    """The share of MUST requirements passed (the report writes it as "97.3%")."""
    return float(str(report["summary"]["must_compatibility"]).rstrip("%"))
