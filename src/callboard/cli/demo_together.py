"""demo --scenario handoff | delegate | coordinate: agents working together, scripted, nothing to start.

Everything runs in this process on a throwaway embedded store. The scripted agents are threads,
each a Client of its own that waits for its mail as a runner would and answers with the same
calls the CLI and the MCP tools make. Each line says when it happened (ms since the scene began),
who did what, and for a round its epoch and phase.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager

from callboard.cli import render
from callboard.client.base import Client
from callboard.coord.delegation import follow_task
from callboard.coord.rounds import follow_round
from callboard.model import Part
from callboard.requests import ReadQuery, RoundProposal, RoundRequest, RoundVote, TaskRequest
from callboard.rounds import ROUND_METADATA, Event, describe_decision
from callboard.tasks import Task

MAIL_WAIT_SECONDS = 10.0
SCENE_SECONDS = 60.0


class Clock:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def say(self, who: str, what: str) -> None:
        elapsed = int((time.monotonic() - self.started) * 1000)
        render.console.print(f"[dim]{elapsed:>6} ms[/]  [bold]{render.peer(who)}[/]  {render.peer(what)}")


@contextmanager
def scripted(name: str, act: Callable[[], None]) -> Iterator[None]:
    """``act`` on a thread of its own while the scene goes on; joined (and its failure raised) after."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            act()
        except BaseException as error:  # shown by the scene, not lost on a thread
            failure.append(error)

    thread = threading.Thread(target=run, name=f"demo-{name}", daemon=True)
    thread.start()
    yield
    thread.join(SCENE_SECONDS)
    if failure:
        raise failure[0]


def delegate_scene(lead: Client, writer: Client, step: Callable[[str], None]) -> None:
    clock = Clock()

    def write() -> None:  # writer waits for its task, works on it, hands over a file
        [item] = writer.read(ReadQuery(wait=MAIL_WAIT_SECONDS)).items
        assert item.task_id is not None
        clock.say("writer", f"got task {item.task_id[-8:]}: {item.message.text}")
        writer.update_task(item.task_id, state="working", parts=[{"text": "drafting"}])
        notes = {"name": "release-notes.md", "parts": [{"text": "# 1.4\n\nOrders carry a currency.\n"}]}
        writer.update_task(item.task_id, state="completed", parts=[{"text": "done"}], artifacts=[notes])

    step("lead delegates the release notes to writer and waits for the file (callboard delegate --wait)")
    with scripted("writer", write):
        sent = lead.open_task(TaskRequest(to="writer", text="Write the 1.4 release notes."))
        clock.say("lead", f"asked writer: task {sent.task.id[-8:]} ({sent.task.state})")
        done = follow_task(lead, sent.task, SCENE_SECONDS, lambda task: clock.say("writer", _moved(task)))
    step("the result, as `--out DIR` would write it")
    for artifact in done.artifacts:
        render.console.print(f"[bold]{render.peer(artifact.name or artifact.artifact_id)}[/]")
        for part in artifact.parts:
            render.print_part(part)


def coordinate_scene(lead: Client, members: Mapping[str, Client], step: Callable[[str], None]) -> None:
    clock = Clock()
    favourite = "ana"

    def member(name: str, client: Client) -> Callable[[], None]:
        def take_part() -> None:  # as a runner would: each phase's task wakes it, it acts, until the end
            while True:
                items = client.read(ReadQuery(wait=MAIL_WAIT_SECONDS)).items
                asked = [item for item in items if item.task_id is not None and item.task_state == "submitted"]
                for item in asked:
                    task = client.get_task(item.task_id or "")
                    phase = (task.metadata or {}).get(ROUND_METADATA)
                    if phase is None:
                        continue
                    if phase["phase"] == "proposal":
                        solution = Part(text=f"{name}'s plan: ship it behind a flag", filename=f"{name}.md")
                        client.propose(phase["id"], RoundProposal(epoch=phase["epoch"], parts=[solution]))
                    else:
                        reason = "the smallest change" if name != favourite else "mine is smallest"
                        client.vote(phase["id"], RoundVote(epoch=phase["epoch"], endorse=favourite, reason=reason))
                if not items or lead.get_round(round_id[0]).phase not in ("proposal", "vote"):
                    return

        return take_part

    step("lead puts a goal to ana, ben and cai: propose, vote, decided at a quorum of 2 (callboard coordinate)")
    round_id: list[str] = []
    info = lead.open_round(RoundRequest(goal="How do we ship 1.4 safely?", agents=list(members), quorum=2))
    round_id.append(info.id)
    clock.say("lead", f"opened round {info.id[-8:]}: {len(members)} participants, quorum {info.quorum}")

    def told(event: Event) -> None:
        who = event.agent or "round"
        clock.say(who, f"epoch {event.epoch}  {_event_words(event)}")

    with ExitStack() as scripts:
        for name, client in members.items():
            scripts.enter_context(scripted(name, member(name, client)))
        decided = follow_round(lead, info, told)
    step("the decision, as `--out FILE` would write it")
    assert decided.decision is not None
    render.console.print(describe_decision(decided, decided.decision))


def _moved(task: Task) -> str:
    words = " ".join(p.text for p in task.status_parts if p.text)
    return f"task {task.id[-8:]}: {task.state}" + (f" — {words}" if words else "")


def _event_words(event: Event) -> str:
    if event.kind == "proposal":
        return "proposed"
    if event.kind == "vote":
        return f"voted for {event.choice}" + (f" ({event.reason})" if event.reason else "")
    if event.kind in ("opened", "phase"):
        return f"{event.phase} phase begins"
    if event.kind == "decided":
        return "decided" + (" (forced)" if event.forced else "")
    if event.kind == "refused":
        return f"{event.attempted} refused: {event.code}"
    return event.kind


def handoff_scene(claude_dev: Client, codex_dev: Client, step: Callable[[str], None]) -> None:
    """claude-dev hands its half-done change to codex-dev: the packet of a throwaway repository."""
    import subprocess
    import tempfile
    from datetime import UTC, datetime
    from pathlib import Path

    from callboard.coord.handoff_packet import build_packet
    from callboard.handoff import full, handoff_request, packet_in

    clock = Clock()
    with tempfile.TemporaryDirectory(prefix="callboard-demo-repo-") as folder:
        repo = Path(folder)
        for args in (
            ["init", "-q"],
            [
                "-c",
                "user.email=demo@example.invalid",
                "-c",
                "user.name=demo",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "start",
            ],
        ):
            subprocess.run(["git", "-C", folder, *args], check=True, capture_output=True)
        (repo / "retry.py").write_text("MAX_ATTEMPTS = 5\n# TODO: cap the backoff at 30 s\n")
        subprocess.run(["git", "-C", folder, "add", "retry.py"], check=True, capture_output=True)
        step("claude-dev hands its half-done change to codex-dev (callboard handoff --to codex-dev)")
        packet = build_packet(
            "claude-dev", "codex-dev", "Retries are in; the backoff cap is not.", ["cap the backoff at 30 s", "open the PR"],
            repo, datetime.now(UTC), cli="claude",
        )  # fmt: skip
    sent = claude_dev.open_task(handoff_request(packet))
    clock.say("claude-dev", f"handed over as task {sent.task.id[-8:]}: summary, 2 next steps, 1 changed file, a diff")
    [item] = codex_dev.read().items
    step("what codex-dev's live session reads: the summary, the large parts named")
    render.mail_item(item)
    received = packet_in(item.message.parts)
    assert received is not None
    step("what codex-dev's runner gives its CLI before the next turn: the packet whole")
    render.console.print(render.peer(full(received), lines=True))
    codex_dev.update_task(sent.task.id, state="working", parts=[{"text": "taking it from here"}])
    clock.say("codex-dev", "took it over (working)")
