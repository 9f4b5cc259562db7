"""A finished task's artifacts written to a folder (``task send --wait --out DIR``, ``delegate``).

A text part goes to its file name as UTF-8, raw bytes as they are, a data part as JSON; a URL part
is named, not fetched. The names are the other agent's choice, so each is cut to a plain file
name inside the folder (no folders, no leading dots, no control characters), and two parts of one
task never land on the same file. Each file is written whole or not at all (a temporary file
renamed into place).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import tempfile
from pathlib import Path

from callboard.errors import BadRequest
from callboard.model import Part
from callboard.tasks import Task, TaskArtifact

NAME_CHARS = 120
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:]+|[\u200e\u200f\u202a-\u202e\u2066-\u2069]+")


def write_artifacts(task: Task, folder: Path) -> tuple[list[Path], list[str]]:
    """Write ``task``'s artifacts into ``folder`` (made if missing): the files written, and the
    URLs handed over (not fetched)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadRequest(
            f"cannot make the folder {folder}: {error.strerror or error}; give one you can write."
        ) from None
    written: list[Path] = []
    urls: list[str] = []
    taken: set[str] = set()
    for artifact in task.artifacts:
        for index, part in enumerate(artifact.parts):
            if part.url is not None:
                urls.append(part.url)
                continue
            content, extension = part_bytes(part)
            name = _unique(_file_name(part, artifact, index, extension), taken)
            written.append(_write(folder / name, content))
    return written, urls


def part_bytes(part: Part) -> tuple[bytes, str]:
    """A part as the bytes it stands for, and the file extension that says what they are."""
    if part.text is not None:
        return part.text.encode("utf-8"), ".txt"
    if part.raw is not None:
        try:
            return base64.b64decode(part.raw, validate=True), ".bin"
        except (binascii.Error, ValueError):
            return part.raw.encode("ascii", "replace"), ".b64"  # kept as it came rather than lost
    return json.dumps(part.data, indent=2, ensure_ascii=False).encode("utf-8") + b"\n", ".json"


def _file_name(part: Part, artifact: TaskArtifact, index: int, extension: str) -> str:
    chosen = part.filename or artifact.name or ""
    name = _UNSAFE.sub("_", chosen).strip().lstrip(".")[:NAME_CHARS]
    if not name:
        name = f"{_UNSAFE.sub('_', artifact.artifact_id)[:60] or 'artifact'}-{index}{extension}"
    return name


def _unique(name: str, taken: set[str]) -> str:
    stem, dot, suffix = name.rpartition(".") if "." in name else (name, "", "")
    candidate, number = name, 2
    while candidate in taken:
        candidate = f"{stem}-{number}{dot}{suffix}"
        number += 1
    taken.add(candidate)
    return candidate


def _write(path: Path, content: bytes) -> Path:
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".callboard-", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(content)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise BadRequest(f"cannot write {path}: {error.strerror or error}; give a folder you can write.") from None
    return path
