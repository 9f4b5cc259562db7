"""Folders under CALLBOARD_HOME that hold session or credential state are this user's alone
(0700), and the files in them that hold secrets 0600: made so, and tightened when found wider."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from callboard.config import private_folder, save_login
from callboard.integrations.hooks.state import SessionFiles, SessionState, take_injector_lock
from callboard.integrations.install.manifest import Manifest, keep_backup


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "sb"


@pytest.fixture
def wide_home(home: Path) -> Path:
    """A home an older version (or a mkdir under the usual umask) left readable by everyone."""
    for folder in (home, home / "hooks", home / "hooks" / "sess-1", home / "pushers", home / "backups"):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o755)
    return home


def test_private_folder_makes_each_level_under_the_home_0700(home: Path):
    made = private_folder(home, "hooks", "sess-1")
    assert made == home / "hooks" / "sess-1"
    assert [mode(f) for f in (home, home / "hooks", made)] == [0o700, 0o700, 0o700]


def test_private_folder_tightens_folders_found_wider_and_leaves_the_homes_parent_alone(wide_home: Path):
    wide_home.parent.chmod(0o755)
    private_folder(wide_home, "hooks", "sess-1")
    assert [mode(f) for f in (wide_home, wide_home / "hooks", wide_home / "hooks" / "sess-1")] == [0o700] * 3
    assert mode(wide_home.parent) == 0o755


def test_the_hooks_session_state_is_private(wide_home: Path):
    files = SessionFiles(wide_home, "sess-1")
    with files.updating() as state:
        state.session = "s-1"
    assert [mode(f) for f in (wide_home, wide_home / "hooks", files.folder)] == [0o700] * 3
    assert mode(files.path) == 0o600 and mode(files.folder / "state.lock") == 0o600
    assert files.load() == SessionState(session="s-1")


def test_the_pushers_locks_are_private(wide_home: Path):
    assert take_injector_lock(wide_home, 4242, 1) is not None
    assert mode(wide_home / "pushers") == 0o700 and mode(wide_home / "pushers" / "4242-1.lock") == 0o600


def test_the_login_and_the_install_backups_are_private(wide_home: Path):
    save_login(wide_home, "http://127.0.0.1:9", "cb_secret")
    assert mode(wide_home) == 0o700 and mode(wide_home / "config.toml") == 0o600
    manifest = Manifest.load(wide_home)
    keep_backup(manifest.backup_path("/x/settings.json"), b"{}")
    manifest.save()
    assert mode(wide_home / "backups") == 0o700
