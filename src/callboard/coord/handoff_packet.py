"""Building a hand-off packet from where the handing agent works (``handoff.py`` is the packet).

The repository is what git says of the working folder: its root, the origin's URL with any
credentials taken out, the branch, HEAD, ``git status`` and ``git diff HEAD`` (tracked changes,
staged or not; untracked files are listed, not diffed), each cut to its bound. The transcript is
the end of the conversation the session's own transcript file records, where its CLI keeps one
(the command line finds a Claude Code session's, or a runner's). Outside a repository there is
no repository part; nothing here fails a hand-off for want of git.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from callboard.client.base import Client
from callboard.coord.delegation import follow_task
from callboard.coord.repository import git, repository_of
from callboard.coord.transcript_text import conversation_of
from callboard.errors import BadRequest
from callboard.fence import one_line
from callboard.handoff import (
    DIFF_BYTES,
    NEXT_STEP_CHARS,
    NEXT_STEPS_MAX,
    SUMMARY_CHARS,
    TRANSCRIPT_BYTES,
    Bounded,
    Packet,
    bounded,
)
from callboard.requests import TaskRequest
from callboard.tasks import TaskState


def build_packet(
    from_agent: str,
    to_agent: str,
    summary: str,
    next_steps: list[str],
    folder: Path,
    now: datetime,
    *,
    transcript: Path | None = None,
    cli: str | None = None,
) -> Packet:
    """The packet of the work in ``folder``: bounded, and with no secret of the remote's URL."""
    return Packet(
        from_agent=from_agent,
        to_agent=to_agent,
        created_at=now,
        summary=bounded(summary, SUMMARY_CHARS).text,
        next_steps=[step[:NEXT_STEP_CHARS] for step in next_steps[:NEXT_STEPS_MAX]],
        repository=repository_of(folder),
        diff=diff_of(folder),
        transcript=transcript_excerpt(transcript) if transcript is not None else None,
        cli=cli,
    )


def diff_of(folder: Path) -> Bounded | None:
    """``git diff HEAD`` (or of the index, before a first commit), cut to its bound; None without
    a repository or changes."""
    diff = git(folder, "diff", "HEAD", "--no-color", "--no-ext-diff")
    if diff is None:
        diff = git(folder, "diff", "--cached", "--no-color", "--no-ext-diff")
    return bounded(diff, DIFF_BYTES) if diff else None


def transcript_excerpt(path: Path) -> Bounded | None:
    """The end of a transcript, cut to its bound: the conversation it records where its shape is
    known (``transcript_text``), else the file's own last bytes (a transcript grows: read from
    its end). ``whole_bytes`` is what was cut from: the conversation read, or the whole file."""
    conversation = conversation_of(path)
    if conversation is not None:
        return bounded(conversation, TRANSCRIPT_BYTES, keep_end=True)
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TRANSCRIPT_BYTES))
            tail = file.read().decode("utf-8", "ignore")
    except OSError:
        return None
    kept = bounded(tail, TRANSCRIPT_BYTES, keep_end=True)
    return kept.model_copy(update={"whole_bytes": size})


def runner_transcript(client: Client, agent: str, machine: str) -> Path | None:
    """The transcript of ``agent``'s runner on ``machine`` (where this runs), as its report names
    it, if its CLI keeps one and it can be read here (a runner elsewhere keeps its transcript there)."""
    for report in client.list_runners(agent):
        if report.machine == machine and report.live and report.transcript:
            path = Path(report.transcript)
            return path if path.is_file() else None
    return None


SUMMARY_ASK = (
    "Summarize your session for a hand-off to {to}: what you were asked, what you did, where things "
    "stand, what is open. Complete this task with the summary as its message."
)


def asked_summary(
    client: Client, giver: str, to: str, timeout: float, told: Callable[[str], object] | None = None
) -> str:
    """Ask ``giver`` (a runner, or any agent) for its summary, as a task, and wait for it;
    ``told``: a sentence on the asking, for the person waiting."""
    asked = client.open_task(TaskRequest(to=giver, text=SUMMARY_ASK.format(to=to), subject="hand-off summary"))
    if told is not None:
        told(f"asked {one_line(giver)} for its summary (task {asked.task.id}); waiting up to {timeout:g} s")
    done = follow_task(client, asked.task, timeout)
    if done.state is not TaskState.COMPLETED:
        raise BadRequest(f"{giver} did not give a summary (its task ended {done.state}); give --summary instead.")
    words = [p.text for p in done.status_parts if p.text] + [p.text for a in done.artifacts for p in a.parts if p.text]
    if not words:
        raise BadRequest(f"{giver} completed the task with no words; give --summary instead.")
    return "\n\n".join(words)
