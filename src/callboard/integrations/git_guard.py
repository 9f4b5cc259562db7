"""The git guard: a pre-commit hook that asks ``callboard lease check --staged`` before a commit.

Installed into the repository's hooks folder as git finds it (``core.hooksPath`` honoured). A
pre-commit hook already there is kept: moved aside and run first, so both hold; ``uninstall``
puts it back as it was, byte for byte and with its mode. The hook refuses a commit only when
another agent holds one of the staged files exclusively (the check's exit 1); anything else
the check may say (no store, no hub) never blocks a commit. ``--warn`` installs it warning only;
``CALLBOARD_GIT_GUARD=0 git commit …`` skips it once.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from callboard.errors import BadRequest

MARKER = "# callboard git-guard"
CHAINED = "pre-commit.callboard-chained"
ESCAPE = "CALLBOARD_GIT_GUARD"


@dataclass(frozen=True)
class GuardReport:
    hook: Path
    action: str  # installed | updated | removed | absent
    chained: Path | None = None  # the hook that was there before, kept and run first


def hooks_folder(folder: Path) -> Path:
    """The hooks folder git uses for the repository at ``folder`` (``core.hooksPath`` honoured)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--git-path", "hooks"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        raise BadRequest(f"{folder} is not in a git repository: the guard is a repository's pre-commit hook.")
    hooks = Path(done.stdout.strip())
    return hooks if hooks.is_absolute() else (folder / hooks).resolve()


def script(callboard: list[str], warn: bool) -> str:
    command = " ".join(shlex.quote(part) for part in callboard)
    refuse = (
        'echo "callboard: warning: this commit touches files another agent holds (above)." >&2\n  exit 0'
        if warn
        else 'echo "callboard: this commit touches files another agent holds (above): coordinate first, or skip '
        f'once with {ESCAPE}=0 git commit ..." >&2\n  exit 1'
    )
    return f"""#!/bin/sh
{MARKER}{" (warn)" if warn else ""}: refuses a commit of files another agent holds an exclusive lease on.
# Skip once: {ESCAPE}=0 git commit ...   Take it out: callboard uninstall git-guard
hook_dir=$(dirname "$0")
if [ -x "$hook_dir/{CHAINED}" ]; then
  "$hook_dir/{CHAINED}" "$@" || exit $?
fi
[ "${{{ESCAPE}:-1}}" = "0" ] && exit 0
{command} lease check --staged >/dev/null
status=$?
if [ "$status" -eq 1 ]; then
  {refuse}
fi
exit 0
"""


def install(folder: Path, callboard: list[str], *, warn: bool = False) -> GuardReport:
    hooks = hooks_folder(folder)
    hooks.mkdir(parents=True, exist_ok=True)
    hook, chained = hooks / "pre-commit", hooks / CHAINED
    ours = hook.is_file() and MARKER in hook.read_text(errors="replace")
    if hook.exists() and not ours:
        if chained.exists():
            raise BadRequest(f"{chained} is in the way: move it, then install the guard again.")
        os.replace(hook, chained)  # kept with its mode, run first by ours
    hook.write_text(script(callboard, warn))
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return GuardReport(hook, "updated" if ours else "installed", chained if chained.exists() else None)


def uninstall(folder: Path) -> GuardReport:
    hooks = hooks_folder(folder)
    hook, chained = hooks / "pre-commit", hooks / CHAINED
    if not (hook.is_file() and MARKER in hook.read_text(errors="replace")):
        return GuardReport(hook, "absent")
    hook.unlink()
    if chained.exists():
        os.replace(chained, hook)
        return GuardReport(hook, "removed", hook)
    return GuardReport(hook, "removed")
