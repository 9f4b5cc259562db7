"""Writing a test's files: one under a root folder, its parent folders made, from bytes, text,
or anything else as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write(root: Path, file: str, content: Any) -> Path:
    path = root / file
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path
