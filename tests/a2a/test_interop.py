"""Clients nobody here wrote send a streaming task to a Callboard agent and get its artifact.

- ``@a2a-js/sdk`` (the A2A project's JavaScript SDK, 1.3.0, from npm into the tests' CLI cache):
  ``tests/a2a/js_stream_client.mjs`` streams a task over each binding and prints the events;
- the ``a2a-sdk`` client speaking A2A 0.3 (its compatibility transport), against a hub started
  with ``--a2a-compat-0-3``;
- ``@a2a-js/sdk`` 0.3 (``tests/a2a/js_old_client.mjs``), against a hub without the flag: it finds
  the endpoints on the card and is told which version the hub speaks and which flag lets it in.

The worker is a Callboard agent answering through the Service, as its tools do: it takes the
task up and completes it with an artifact once the task's mail is in its mailbox.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from callboard.hub.app import A2AOptions
from callboard.model import Part as OurPart
from callboard.requests import ReadQuery
from callboard.tasks import TaskArtifact
from callboard.tasks import TaskState as OurState
from tests.a2a.conftest import a2a_client, fetch_card, unique
from tests.agent_clis_e2e.conftest import NpmCli, install
from tests.support.a2a_cards import only_0_3
from tests.support.a2a_hub import InProcessHub

A2A_JS = NpmCli("a2a-js-sdk", "@a2a-js/sdk", "1.3.0", "a2a-db", answers_version=False)
# 0.3 ships no command of its own: the one its dependency installs marks the install done.
A2A_JS_0_3 = NpmCli("a2a-js-sdk", "@a2a-js/sdk", "0.3.14", "uuid", answers_version=False)
JS_CLIENT = Path(__file__).with_name("js_stream_client.mjs")
JS_OLD_CLIENT = Path(__file__).with_name("js_old_client.mjs")
RUN_TIMEOUT = 60.0
ANSWER_TIMEOUT = 30.0


def answer_tasks(hub: InProcessHub, agent: str, how_many: int, stop: threading.Event) -> threading.Thread:
    """A worker that answers ``how_many`` tasks of ``agent``: working, then completed with an
    artifact naming what was asked."""

    def work() -> None:
        caller = hub.caller(agent)
        answered: set[str] = set()
        while len(answered) < how_many and not stop.is_set():
            for item in hub.service.mailbox.read(caller, ReadQuery(wait=0.5)).items:
                task_id = item.message.task_id
                if task_id is None or task_id in answered:
                    continue
                hub.service.tasking.update_task(caller, task_id, state=OurState.WORKING)
                artifact = TaskArtifact(
                    artifact_id="review", name="review.txt", parts=[OurPart(text=f"reviewed: {item.message.text}")]
                )
                hub.service.tasking.update_task(caller, task_id, state=OurState.COMPLETED, artifacts=[artifact])
                answered.add(task_id)

    thread = threading.Thread(target=work, name=f"worker-{agent}", daemon=True)
    thread.start()
    return thread


@pytest.mark.e2e
@pytest.mark.timeout(600 + 4 * RUN_TIMEOUT)  # a first npm install, then the runs
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_javascript_sdk_streams_a_task_to_a_callboard_agent_and_gets_its_artifact(
    binding: str, tmp_path: Path
) -> None:
    node = shutil.which("node")
    assert node is not None, "the interop test needs Node (20 or newer)"
    folder = install(A2A_JS).parents[2]  # node_modules/.bin/a2a-db → the install folder
    client = folder / JS_CLIENT.name
    shutil.copyfile(JS_CLIENT, client)  # beside its node_modules, so its imports resolve
    stop = threading.Event()
    with InProcessHub(tmp_path) as hub:
        bob = unique("bob")
        hub.describe(bob, "reviews pull requests", ["review"])
        worker = answer_tasks(hub, bob, 1, stop)
        try:
            card_url = f"{hub.agent_url(bob)}/.well-known/agent-card.json"
            proc = subprocess.run(
                [node, str(client), card_url, hub.token("js-caller"), binding, "please review PR 9", unique("js")],
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
                cwd=folder,
                stdin=subprocess.DEVNULL,
            )
        finally:
            stop.set()
            worker.join(10)
        assert proc.returncode == 0, proc.stderr
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        states = [e["state"] for e in events if "state" in e]
        assert states[0] == "TASK_STATE_SUBMITTED" and states[-1] == "TASK_STATE_COMPLETED", events
        assert "TASK_STATE_WORKING" in states, events
        assert any("reviewed: please review PR 9" in e.get("text", "") for e in events), events
        assert hub.errors == []


@pytest.mark.e2e
@pytest.mark.timeout(600 + 4 * RUN_TIMEOUT)
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_javascript_sdks_0_3_client_is_told_the_version_and_the_flag(binding: str, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None, "the interop test needs Node (20 or newer)"
    folder = install(A2A_JS_0_3).parents[2]
    client = folder / JS_OLD_CLIENT.name
    shutil.copyfile(JS_OLD_CLIENT, client)
    with InProcessHub(tmp_path) as hub:
        bob = unique("bob")
        hub.describe(bob, "reviews pull requests", ["review"])
        card_url = f"{hub.agent_url(bob)}/.well-known/agent-card.json"
        proc = subprocess.run(
            [node, str(client), card_url, hub.token("js-old"), binding, "please review PR 9", unique("js")],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            cwd=folder,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr
        [said] = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        error = said.get("error", "")
        assert "VERSION_NOT_SUPPORTED" in error or "-32009" in error, said
        assert "this hub speaks A2A 1.0" in error and "callboard up --a2a-compat-0-3" in error, said
        assert hub.service.mailbox.inbox(hub.caller(bob)) == []
        assert hub.errors == []


@pytest.mark.anyio
async def test_the_python_sdks_0_3_client_streams_a_task_and_gets_its_artifact(tmp_path: Path) -> None:
    stop = threading.Event()
    with InProcessHub(tmp_path, a2a=A2AOptions(compat_0_3=True)) as hub:
        bob = unique("bob")
        hub.describe(bob, "reviews", ["review"])
        card = only_0_3(await fetch_card(hub, bob))
        worker = answer_tasks(hub, bob, 1, stop)
        try:
            async with a2a_client(card, hub.token(unique("old")), "JSONRPC", streaming=True) as client:
                request = SendMessageRequest(
                    message=Message(role=Role.ROLE_USER, message_id=unique("m"), parts=[Part(text="old PR")])
                )
                events = [e async for e in client.send_message(request)]
        finally:
            stop.set()
            worker.join(10)
        kinds = [e.WhichOneof("payload") for e in events]
        states = [
            e.task.status.state if e.HasField("task") else e.status_update.status.state
            for e in events
            if e.HasField("task") or e.HasField("status_update")
        ]
        assert states[-1] == TaskState.TASK_STATE_COMPLETED, events
        assert TaskState.TASK_STATE_WORKING in states, events
        texts = [p.text for e in events if e.HasField("artifact_update") for p in e.artifact_update.artifact.parts]
        texts += [p.text for e in events if e.HasField("task") for a in e.task.artifacts for p in a.parts]
        assert "reviewed: old PR" in texts, kinds
        assert hub.errors == []
