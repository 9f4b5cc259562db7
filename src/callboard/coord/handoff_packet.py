"""Building a hand-off packet from where the handing agent works (``handoff.py`` is the packet).

The repository is what git says of the working folder: its root, the origin's URL with any
credentials taken out, the branch, HEAD, ``git status`` and ``git diff HEAD`` (tracked changes,
staged or not; untracked files are listed, not diffed), each cut to its bound. The transcript is
the end of the session's own transcript file, where its CLI keeps one (the command line finds a
Claude Code session's). Outside a
repository there is no repository part; nothing here fails a hand-off for want of git.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from callboard.coord.repository import git, repository_of
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
    """The end of a transcript file, cut to its bound (read from its end: a transcript grows)."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TRANSCRIPT_BYTES))
            tail = file.read().decode("utf-8", "ignore")
    except OSError:
        return None
    kept = bounded(tail, TRANSCRIPT_BYTES, keep_end=True)
    return kept.model_copy(update={"whole_bytes": size})
