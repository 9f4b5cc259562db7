"""A working folder's repository as git says it: what a hand-off's packet and a lease's scope name.

Nothing here fails for want of git: outside a repository (or without git) there is none."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from callboard.handoff import CHANGED_FILES_MAX, Repository

GIT_TIMEOUT_SECONDS = 10.0
_CREDENTIALS = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@]*@", re.IGNORECASE)


def repository_of(folder: Path) -> Repository | None:
    root = git(folder, "rev-parse", "--show-toplevel")
    if root is None:
        return None
    status = git(folder, "status", "--porcelain=v1", "--untracked-files=normal") or ""
    changed = [line for line in status.splitlines() if line.strip()]
    return Repository(
        root=root.strip(),
        remote=normalised_remote(git(folder, "remote", "get-url", "origin")),
        branch=(git(folder, "symbolic-ref", "--quiet", "--short", "HEAD") or "").strip() or None,
        head=(git(folder, "rev-parse", "--verify", "--quiet", "HEAD") or "").strip() or None,
        changed=changed[:CHANGED_FILES_MAX],
        changed_total=len(changed),
    )


def scope_of(repository: Repository, machine: str) -> str:
    """A lease's scope: the normalised remote (two clones on two machines are one repository),
    else this machine and the repository's root."""
    return repository.remote or f"{machine}:{repository.root}"


def normalised_remote(url: str | None) -> str | None:
    """A remote's URL as a repository's name: no credentials, no trailing ``.git`` or slash."""
    if not url or not url.strip():
        return None
    text = _CREDENTIALS.sub(r"\g<scheme>", url.strip())
    return text.removesuffix("/").removesuffix(".git")


def git(folder: Path, *args: str) -> str | None:
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
