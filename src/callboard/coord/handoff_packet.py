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
import re
import subprocess
from datetime import datetime
from pathlib import Path

from callboard.handoff import (
    CHANGED_FILES_MAX,
    DIFF_BYTES,
    NEXT_STEP_CHARS,
    NEXT_STEPS_MAX,
    SUMMARY_CHARS,
    TRANSCRIPT_BYTES,
    Bounded,
    Packet,
    Repository,
    bounded,
)

GIT_TIMEOUT_SECONDS = 10.0
_CREDENTIALS = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@]*@", re.IGNORECASE)


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


def repository_of(folder: Path) -> Repository | None:
    root = _git(folder, "rev-parse", "--show-toplevel")
    if root is None:
        return None
    status = _git(folder, "status", "--porcelain=v1", "--untracked-files=normal") or ""
    changed = [line for line in status.splitlines() if line.strip()]
    return Repository(
        root=root.strip(),
        remote=normalised_remote(_git(folder, "remote", "get-url", "origin")),
        branch=(_git(folder, "symbolic-ref", "--quiet", "--short", "HEAD") or "").strip() or None,
        head=(_git(folder, "rev-parse", "--verify", "--quiet", "HEAD") or "").strip() or None,
        changed=changed[:CHANGED_FILES_MAX],
        changed_total=len(changed),
    )


def diff_of(folder: Path) -> Bounded | None:
    """``git diff HEAD`` (or of the index, before a first commit), cut to its bound; None without
    a repository or changes."""
    diff = _git(folder, "diff", "HEAD", "--no-color", "--no-ext-diff")
    if diff is None:
        diff = _git(folder, "diff", "--cached", "--no-color", "--no-ext-diff")
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


def normalised_remote(url: str | None) -> str | None:
    """A remote's URL as a repository's name: no credentials, no trailing ``.git`` or slash."""
    if not url or not url.strip():
        return None
    text = _CREDENTIALS.sub(r"\g<scheme>", url.strip())
    return text.removesuffix("/").removesuffix(".git")


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
