"""Install and uninstall: read the files a plan names, work out every change in memory, then
(unless it is a dry run) keep backups, save the manifest and write the files.

Uninstall puts a file back **byte for byte** from its backup when the file is still exactly what
Callboard last wrote (its sha256 matches the manifest's). When the user changed it since, only
Callboard's entries are taken out and their changes stay. A file Callboard created is
deleted once nothing but an empty document is left, and so is a folder it created, once empty.

Nothing is written before every file has been read and merged: a file that cannot be read
(invalid JSON or TOML) stops the whole command with nothing changed.
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from callboard.errors import BadRequest
from callboard.integrations.install.entries import describe, rendered
from callboard.integrations.install.install_plans import FilePlan, InstallPlan, install_id
from callboard.integrations.install.manifest import (
    FileRecord,
    InstallRecord,
    Manifest,
    keep_backup,
    locked,
    sha256,
    write_atomic,
)
from callboard.integrations.install.settings_files import FORMATS, SettingsError, merge, unmerge


@dataclass
class FileChange:
    """What happens (or would happen) to one file."""

    path: Path
    action: str  # created, updated, unchanged, restored, deleted, cleaned, missing
    before: bytes | None
    after: bytes | None
    mode: int | None = None  # the permission bits to write it with (None: a new file's default)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self, label: str) -> str:
        """A unified diff of the change, as ``diff -u`` prints it."""
        old = _lines(self.before)
        new = _lines(self.after)
        lines = difflib.unified_diff(
            old, new, "/dev/null" if self.before is None else label, "/dev/null" if self.after is None else label
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@dataclass
class Report:
    client: str
    scope: str
    project: Path | None
    dry_run: bool
    installed: bool  # whether this install is in the manifest afterwards
    changes: list[FileChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Current:
    data: bytes | None
    text: str | None
    mode: int | None


def _read(path: Path) -> _Current:
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return _Current(None, None, None)
    except IsADirectoryError:
        raise BadRequest(f"{path} is a folder, not a settings file: move it away and run the command again.") from None
    except OSError as error:
        raise BadRequest(
            f"{path} cannot be read ({error.strerror}): fix its permissions and run the command again."
        ) from None
    try:
        return _Current(data, data.decode("utf-8"), mode)
    except UnicodeDecodeError:
        raise BadRequest(f"{path} is not UTF-8 text: fix it or move it away, then run the command again.") from None


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _unreadable(path: Path, error: SettingsError) -> BadRequest:
    where = f" (line {error.line}, column {error.column})" if error.line else ""
    return BadRequest(
        f"{path}: {error.problem}{where}. Fix it (or move it away) and run the command again; nothing was written.",
        path=str(path),
        line=error.line,
    )


def _missing_dirs(folder: Path) -> list[str]:
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(str(folder))
        folder = folder.parent
    return missing


# --- install ------------------------------------------------------------------------------------


@dataclass
class _Work:
    """What a command will do once everything has been worked out."""

    writes: list[FileChange] = field(default_factory=list)
    backups: list[tuple[Path, bytes]] = field(default_factory=list)
    released: list[FileRecord] = field(default_factory=list)  # files no install holds any more

    def commit(self, manifest: Manifest) -> None:
        """Backups first, then the manifest, then the files: a crash midway leaves the
        originals recoverable and the manifest naming everything that may have changed."""
        for backup, data in self.backups:
            keep_backup(backup, data)
        manifest.save()
        for change in self.writes:
            if not change.changed:
                continue
            if change.after is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(change.path)
                continue
            change.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(change.path, change.after, change.mode)
        for record in self.released:
            if record.backup:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(record.backup)
        _remove_empty_dirs(folder for record in self.released for folder in record.created_dirs)


def install(plan: InstallPlan, home: Path, *, dry_run: bool = False, secrets: Iterable[str] = ()) -> Report:
    """Write what ``plan`` names (``home``: CALLBOARD_HOME, where the manifest and backups go)."""
    _refuse_secrets(plan, [secret for secret in secrets if secret])
    ident = plan.install_id
    with locked(home) if not dry_run else contextlib.nullcontext():
        manifest = Manifest.load(home)
        report = Report(plan.client, plan.scope, plan.project, dry_run, installed=True, notes=list(plan.notes))
        work = _Work()
        planned = {str(file.path) for file in plan.files}
        old = manifest.installs.get(ident)
        for name in old.files if old else []:
            if name not in planned:  # the plan moved on from this file: take our entries out
                _record_release(manifest, ident, name, report, work)
        held = [str(file.path) for file in plan.files if _install_file(manifest, ident, file, report, work)]
        if held:
            project = str(plan.project) if plan.project else None
            manifest.installs[ident] = InstallRecord(plan.client, plan.scope, project, held)
        else:
            manifest.installs.pop(ident, None)
            report.installed = False
            report.notes.append("everything was already in place (your own entries): nothing of Callboard's to record.")
        if not dry_run:
            work.commit(manifest)
    return report


def _install_file(manifest: Manifest, ident: str, file: FilePlan, report: Report, work: _Work) -> bool:
    """Merge one file of the plan (in memory); whether this install now holds entries in it."""
    name = str(file.path)
    current = _read(file.path)
    record = manifest.files.get(name)
    try:
        merged = merge(
            FORMATS[file.format],
            current.text,
            list(file.entries),
            record.owners.get(ident, []) if record else [],
            record.others(ident) if record else [],
            record.created if record else [],
        )
    except SettingsError as error:
        raise _unreadable(file.path, error) from None
    report.notes += [f"{file.path}: {note}" for note in merged.notes]
    after = _encode(merged.text)
    action = "unchanged" if after == current.data else "created" if current.data is None else "updated"
    change = FileChange(file.path, action, current.data, after, current.mode)
    report.changes.append(change)
    work.writes.append(change)
    if record is None:
        if not merged.mine:
            return False
        backup = manifest.backup_path(name) if current.data is not None else None
        record = FileRecord(file.format, current.data is not None, current.mode, str(backup) if backup else None, None)
        record.created_dirs = _missing_dirs(file.path.parent)
        if backup is not None and current.data is not None:
            work.backups.append((backup, current.data))
        manifest.files[name] = record
    elif change.changed:  # an edit of the user's since our last write must never be rolled back
        record.restorable = record.restorable and sha256(current.data) == record.sha256
        record.created_dirs += [d for d in _missing_dirs(file.path.parent) if d not in record.created_dirs]
    if change.changed or record.sha256 is None:
        record.sha256 = sha256(after)
    record.created = merged.created
    if merged.mine:
        record.owners[ident] = merged.mine
        return True
    record.owners.pop(ident, None)
    if not record.owners:
        del manifest.files[name]
        work.released.append(record)
    return False


def _refuse_secrets(plan: InstallPlan, secrets: list[str]) -> None:
    for file in plan.files:
        for entry in file.entries:
            if any(secret in rendered(entry) for secret in secrets):
                raise BadRequest(
                    f"refusing to write a token into {file.path}: the stdio server needs none; report this as a bug."
                )


# --- uninstall ----------------------------------------------------------------------------------


def uninstall(client: str, scope: str, project: Path | None, home: Path, *, dry_run: bool = False) -> Report:
    """Undo ``callboard install <client> --scope <scope>`` (for ``project``, in project scope)."""
    ident = install_id(client, scope, project)
    with locked(home) if not dry_run else contextlib.nullcontext():
        manifest = Manifest.load(home)
        report = Report(client, scope, project, dry_run, installed=False)
        installed = manifest.installs.pop(ident, None)
        if installed is None:
            where = f"project {project}" if scope == "project" else "user scope"
            report.notes.append(f"Callboard is not installed for {client} ({where}): nothing to do.")
            return report
        work = _Work()
        for name in installed.files:
            _record_release(manifest, ident, name, report, work)
        if not dry_run:
            work.commit(manifest)
    return report


def _record_release(manifest: Manifest, ident: str, name: str, report: Report, work: _Work) -> None:
    change, notes, record = _release(manifest, ident, name)
    report.changes.append(change)
    report.notes += notes
    work.writes.append(change)
    work.released += [record] if record else []


def _release(manifest: Manifest, ident: str, name: str) -> tuple[FileChange, list[str], FileRecord | None]:
    """Take install ``ident``'s entries out of file ``name`` (in memory). Returns the change,
    notes, and the file's record when no install holds anything in it any more."""
    path = Path(name)
    record = manifest.files.get(name)
    current = _read(path)
    unchanged = FileChange(path, "unchanged", current.data, current.data, current.mode)
    if record is None or ident not in record.owners:
        return unchanged, [], None
    mine = record.owners.pop(ident)
    others = record.others(ident)
    last = not record.owners
    if last:
        del manifest.files[name]
    if current.data is None:
        return (
            FileChange(path, "missing", None, None),
            [f"{path} is gone already: nothing to take out."],
            (record if last else None),
        )
    untouched = sha256(current.data) == record.sha256
    if last and untouched and record.restorable:
        if not record.existed:
            return FileChange(path, "deleted", current.data, None), [], record
        original = _backup_data(record)
        if original is not None:
            return FileChange(path, "restored", current.data, original, record.mode), [], record
    try:
        result = unmerge(FORMATS[record.format], current.text or "", mine, others, record.created)
    except SettingsError as error:
        raise _unreadable(path, error) from None
    after = None if last and not record.existed and result.empty else _encode(result.text)
    notes = [f"{path}: left {describe(entry)} as you changed it since install." for entry in result.kept]
    if not untouched and after != current.data:
        notes.append(f"{path} changed since install: took out only Callboard's entries; your changes stay.")
    if any(entry in others for entry in mine):
        notes.append(f"{path}: kept what another install still uses ({', '.join(sorted(record.owners))}).")
    if not last and after != current.data:
        record.restorable = record.restorable and untouched
        record.sha256 = sha256(after)
    action = "unchanged" if after == current.data else "deleted" if after is None else "cleaned"
    return FileChange(path, action, current.data, after, current.mode), notes, (record if last else None)


def _backup_data(record: FileRecord) -> bytes | None:
    if record.backup is None:
        return None
    try:
        return Path(record.backup).read_bytes()
    except OSError:
        return None  # lost: fall back to taking our entries out


def _remove_empty_dirs(folders: Iterable[str]) -> None:
    for folder in sorted(set(folders), key=lambda d: d.count(os.sep), reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(folder)  # only when empty
