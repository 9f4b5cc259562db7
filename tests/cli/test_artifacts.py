"""A finished task's artifacts written to a folder (coord/artifacts.py): the other agent names
the files, so every name stays a plain file inside the folder, two parts never share a file, and
each kind of part is written as it is meant."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

from callboard.coord.artifacts import write_artifacts
from callboard.model import Part
from callboard.tasks import Task, TaskArtifact, TaskState

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def _task(*artifacts: TaskArtifact) -> Task:
    return Task(
        id="t1", workspace="w", context_id="c1", requester="a", worker="b", state=TaskState.COMPLETED,
        status_at=NOW, artifacts=list(artifacts), generation=3, created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def test_hostile_names_stay_plain_files_inside_the_folder(tmp_path: Path) -> None:
    names = ["../../etc/passwd", ".bashrc", "a/b\\c", "\u202eexe.txt", "\x1b[31mred", "", "..", "same.txt", "same.txt"]
    parts = [Part(text=f"part {i}", filename=name or None) for i, name in enumerate(names)]
    written, urls = write_artifacts(_task(TaskArtifact(artifact_id="x/../y", parts=parts)), tmp_path / "out")
    assert urls == []
    assert all(path.parent == tmp_path / "out" for path in written)
    assert [p.name for p in written] == [
        "_.._etc_passwd", "bashrc", "a_b_c", "_exe.txt", "_[31mred", "x_.._y-5.txt", "x_.._y-6.txt", "same.txt",
        "same-2.txt",
    ]  # fmt: skip
    assert [p.read_text() for p in written] == [f"part {i}" for i in range(len(names))]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(p.name for p in written)  # no temp left


def test_each_kind_of_part_is_written_as_it_is_meant(tmp_path: Path) -> None:
    raw = base64.b64encode(b"\x00\xffbytes").decode()
    artifact = TaskArtifact(
        artifact_id="a1",
        name="result",
        parts=[
            Part(raw=raw, filename="blob.bin"),
            Part(data={"score": 9}),
            Part(url="https://example.invalid/report"),
        ],
    )
    written, urls = write_artifacts(_task(artifact), tmp_path)
    assert [p.name for p in written] == ["blob.bin", "result"]
    assert written[0].read_bytes() == b"\x00\xffbytes"
    assert written[1].read_text() == '{\n  "score": 9\n}\n'
    assert urls == ["https://example.invalid/report"]  # named, never fetched
