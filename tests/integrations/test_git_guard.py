"""``callboard install git-guard``: a pre-commit hook that refuses a commit of files another agent
holds an exclusive lease on, run after the hook that was there (kept, and put back exactly by
``uninstall``); ``--warn`` only warns; CALLBOARD_GIT_GUARD=0 skips it once; core.hooksPath is
where it goes when set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_runner import CLI, describe

pytestmark = pytest.mark.e2e
ORIGINAL = "#!/bin/sh\necho original >> ran.log\n"


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    return CLI(tmp_path)


def _git(cli: CLI, *args: str, agent: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**cli.env(agent), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid", **env}  # fmt: skip
    full["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full.get('PATH', '')}"  # the hook's `callboard`
    return subprocess.run(["git", "-C", str(cli.workdir), *args], env=full, capture_output=True, text=True)


def _repository(cli: CLI, hooks: Path | None = None) -> Path:
    _git(cli, "init", "-q")
    folder = hooks or cli.workdir / ".git" / "hooks"
    if hooks is not None:
        _git(cli, "config", "core.hooksPath", str(hooks))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pre-commit").write_text(ORIGINAL)
    (folder / "pre-commit").chmod(0o750)
    (cli.workdir / "src").mkdir()
    (cli.workdir / "src" / "a.py").write_text("x = 1\n")
    return folder


def test_the_guard_refuses_another_agents_leased_files_after_the_hook_that_was_there(cli: CLI) -> None:
    hooks = _repository(cli)
    installed = cli.run_json("install", "git-guard")
    assert installed["action"] == "installed" and installed["chained"].endswith("pre-commit.callboard-chained")
    cli.run_json("lease", "src/", agent="ana")
    _git(cli, "add", "src/a.py")
    refused = _git(cli, "commit", "-qm", "by ben", agent="ben")
    assert refused.returncode == 1 and "another agent holds" in refused.stderr, refused.stderr
    assert (cli.workdir / "ran.log").read_text() == "original\n"  # the kept hook ran first
    skipped = _git(cli, "commit", "-qm", "skipped once", agent="ben", CALLBOARD_GIT_GUARD="0")
    assert skipped.returncode == 0, skipped.stderr
    (cli.workdir / "src" / "a.py").write_text("x = 2\n")
    _git(cli, "add", "src/a.py")
    assert _git(cli, "commit", "-qm", "by ana", agent="ana").returncode == 0  # her own lease
    removed = cli.run_json("uninstall", "git-guard")
    assert removed["action"] == "removed"
    hook = hooks / "pre-commit"
    assert hook.read_text() == ORIGINAL and (hook.stat().st_mode & 0o777) == 0o750
    assert not (hooks / "pre-commit.callboard-chained").exists()
    assert cli.run_json("uninstall", "git-guard")["action"] == "absent"


def test_warn_mode_and_core_hooks_path(cli: CLI, tmp_path: Path) -> None:
    hooks = _repository(cli, tmp_path / "shared-hooks")
    proc = cli.run("install", "git-guard", "--warn")
    assert proc.returncode == 0 and "shared-hooks" in proc.stdout, describe(proc)
    assert "callboard git-guard" in (hooks / "pre-commit").read_text()
    cli.run_json("lease", "src/", agent="ana")
    _git(cli, "add", "src/a.py")
    warned = _git(cli, "commit", "-qm", "by ben", agent="ben")
    assert warned.returncode == 0 and "warning: this commit touches files another agent holds" in warned.stderr
    cli.run_json("uninstall", "git-guard")
    assert (hooks / "pre-commit").read_text() == ORIGINAL


def test_outside_a_repository_nothing_is_installed(cli: CLI) -> None:
    proc = cli.run("install", "git-guard")
    assert proc.returncode == 2 and "error: bad_request: " in proc.stderr, describe(proc)
