"""The install manifest and the backups: what Callboard changed in other programs' files, so
that uninstall can undo exactly that.

``$CALLBOARD_HOME/installs.json`` (0600, written whole and renamed into place) records, per
file: whether it existed, where its byte-for-byte backup is (``$CALLBOARD_HOME/backups/``),
the sha256 of the content Callboard last wrote, the containers and folders it created, and,
per install (``claude:user``, ``gemini:project:/src/app``…), the entries it added. A backup is
taken before the first change to a file and kept until no install holds anything in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from callboard.config import private_folder
from callboard.errors import BadRequest
from callboard.integrations.install.entries import Entry, KeyPath, from_dict, to_dict

MANIFEST_FILE = "installs.json"
BACKUP_FOLDER = "backups"
VERSION = 1


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass
class FileRecord:
    """One file Callboard changed."""

    format: str
    existed: bool  # before the first change
    mode: int | None  # its permission bits then
    backup: str | None  # the byte-for-byte copy of it then (None: it did not exist)
    sha256: str | None  # of the content Callboard last wrote
    restorable: bool = True  # False once the user changed it between two installs of ours
    created: list[KeyPath] = field(default_factory=list)  # JSON containers Callboard made
    created_dirs: list[str] = field(default_factory=list)  # folders Callboard made for it
    owners: dict[str, list[Entry]] = field(default_factory=dict)  # install id -> its entries

    def others(self, install_id: str) -> list[Entry]:
        return [entry for owner, held in self.owners.items() if owner != install_id for entry in held]

    def to_dict(self) -> dict[str, object]:
        return {
            "format": self.format,
            "existed": self.existed,
            "mode": self.mode,
            "backup": self.backup,
            "sha256": self.sha256,
            "restorable": self.restorable,
            "created": [list(path) for path in self.created],
            "created_dirs": self.created_dirs,
            "entries": {owner: [to_dict(entry) for entry in held] for owner, held in self.owners.items()},
        }

    @classmethod
    def from_dict(cls, body: dict) -> FileRecord:
        return cls(
            format=body["format"],
            existed=body["existed"],
            mode=body.get("mode"),
            backup=body.get("backup"),
            sha256=body.get("sha256"),
            restorable=body.get("restorable", True),
            created=[tuple(path) for path in body.get("created", [])],
            created_dirs=list(body.get("created_dirs", [])),
            owners={owner: [from_dict(e) for e in held] for owner, held in body.get("entries", {}).items()},
        )


@dataclass
class InstallRecord:
    client: str
    scope: str
    project: str | None
    files: list[str]
    installed_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, object]:
        return {
            "client": self.client,
            "scope": self.scope,
            "project": self.project,
            "files": self.files,
            "installed_at": self.installed_at,
        }


@dataclass
class Manifest:
    home: Path
    files: dict[str, FileRecord] = field(default_factory=dict)
    installs: dict[str, InstallRecord] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.home / MANIFEST_FILE

    @classmethod
    def load(cls, home: Path) -> Manifest:
        path = home / MANIFEST_FILE
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                home,
                files={name: FileRecord.from_dict(record) for name, record in body.get("files", {}).items()},
                installs={name: InstallRecord(**record) for name, record in body.get("installs", {}).items()},
            )
        except FileNotFoundError:
            return cls(home)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise BadRequest(
                f"the install manifest {path} is damaged ({error}): move it away; the backups of "
                f"the files it names are in {home / BACKUP_FOLDER}."
            ) from None

    def save(self) -> None:
        body = {
            "version": VERSION,
            "files": {name: record.to_dict() for name, record in self.files.items()},
            "installs": {name: record.to_dict() for name, record in self.installs.items()},
        }
        private_folder(self.home)
        write_atomic(self.path, (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode(), 0o600)

    def backup_path(self, path: str) -> Path:
        digest = hashlib.sha256(path.encode()).hexdigest()[:16]
        return self.home / BACKUP_FOLDER / f"{digest}-{Path(path).name}"


def keep_backup(backup: Path, data: bytes) -> None:
    """Save ``data`` as ``backup`` (0600), unless a backup is already there: the first one stays."""
    if backup.exists():
        return
    private_folder(backup.parent.parent, backup.parent.name)  # <home>/backups
    write_atomic(backup, data, 0o600)


@contextlib.contextmanager
def locked(home: Path) -> Iterator[None]:
    """Hold the manifest's lock: two installs at once must not lose each other's records."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks here; installs are rare and run by hand
        yield
        return
    private_folder(home)
    with open(home / (MANIFEST_FILE + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def default_mode() -> int:
    """The mode a new file gets from the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place, so a reader
    sees the old content or the new, never half. A symlink is written through, not replaced."""
    target = Path(os.path.realpath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".callboard-tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, default_mode() if mode is None else mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
