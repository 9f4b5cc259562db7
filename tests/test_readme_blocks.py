"""The documented path works as written: every shell block of README.md and docs/ marked runnable
runs, as a reader would paste it, on a fresh machine.

The marker is the block's info string: ```` ```bash runnable ```` (GitHub highlights by the first
word). ```` ```bash runnable hub ```` runs with ``callboard up`` serving the fresh store on a
loopback port first (stopped after the block). A block that needs what a fresh machine does not
have (a remote hub, TLS files, a coding CLI, PostgreSQL, a network) stays unmarked.

Each block runs alone in ``bash`` with ``set -eo pipefail``: its own HOME, CALLBOARD_HOME and XDG_*
folders, a working folder outside any git repository, this virtualenv's ``bin`` first on PATH (the
``callboard`` a reader installed), no CALLBOARD_* of the environment running pytest. What a reader
brings along, the test provides:

- placeholders: ``<message-id>`` is the id the block's last ``callboard`` command printed (the
  test wraps ``callboard`` in a shell function that keeps its output), as a reader copies it;
- files a block names as the reader's own: ``review.md`` and ``screenshot.png`` in the working
  folder (the Tasks block hands them over as artifacts).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.outside_agent import free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```(?P<info>[^`\n]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
BLOCK_TIMEOUT = 300.0
INSTALL_BIN = Path(sys.executable).parent  # where this virtualenv's `callboard` is

# What a reader pastes in for a placeholder, as shell text run when its line runs.
PLACEHOLDERS = {"<message-id>": '"$(__cb_last_id)"'}
# The reader's own files a block names.
READER_FILES = {
    "review.md": b"# Review of PR 42\n\nLooks good; one nit on error codes.\n",
    "screenshot.png": bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    ),
}
# Keeps every callboard command's output, to find the id a placeholder stands for.
PRELUDE = r"""
set -eo pipefail
__cb_out=$(mktemp)
callboard() { command callboard "$@" | tee -a "$__cb_out"; return "${PIPESTATUS[0]}"; }
__cb_last_id() {
    grep -oE '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' "$__cb_out" | tail -n 1
}
"""


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # of the opening fence
    words: tuple[str, ...]  # the info string
    body: str

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def shell(self) -> bool:
        return bool(self.words) and self.words[0] in SHELLS

    @property
    def runnable(self) -> bool:
        return self.shell and "runnable" in self.words[1:]


def blocks() -> list[Block]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(document, line, tuple(match["info"].split()), match["body"]))
    return found


RUNNABLE = [block for block in blocks() if block.runnable]


def test_the_documents_have_runnable_blocks():
    """The first steps are marked: using it on one machine, tasks, a hub's tokens, install."""
    assert len(RUNNABLE) >= 5, [b.name for b in RUNNABLE]
    assert all(set(b.words[1:]) <= {"runnable", "hub"} for b in RUNNABLE), [b.words for b in RUNNABLE]


def fresh_machine(root: Path) -> tuple[dict[str, str], Path]:
    home = root / "home"
    folders = {
        "HOME": home,
        "CALLBOARD_HOME": root / "callboard-home",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_CACHE_HOME": home / ".cache",
    }
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CALLBOARD_", "CLAUDE_", "XDG_"))}
    env.update({name: str(folder) for name, folder in folders.items()})
    env["PATH"] = f"{INSTALL_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["CALLBOARD_WARM_IDLE"] = "5"  # the warm server its first command starts ends soon after the block
    work = root / "work"
    work.mkdir()
    for name, data in READER_FILES.items():
        (work / name).write_bytes(data)
    return env, work


def script_of(block: Block) -> str:
    body = block.body
    for placeholder, shell_text in PLACEHOLDERS.items():
        body = body.replace(placeholder, shell_text)
    return PRELUDE + body


class ServedHub:
    """``callboard up`` on the fresh machine, on a free loopback port, until the block is done."""

    def __init__(self, env: dict[str, str], work: Path) -> None:
        port = free_port()
        self.log = work.parent / "up.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                ["callboard", "up", "--port", str(port)], env=env, cwd=work, stdout=log, stderr=log
            )
        health = f"http://127.0.0.1:{port}/health"

        def answering() -> bool:
            assert self.proc.poll() is None, f"callboard up exited {self.proc.returncode}:\n{self.log.read_text()}"
            try:
                with urllib.request.urlopen(health, timeout=2) as answer:
                    return answer.status == 200
            except OSError:
                return False

        wait_until(answering, timeout=120, what="the hub to answer /health", interval=0.2)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda block: block.name)
def test_a_runnable_block_runs_as_written(block: Block, tmp_path: Path):
    env, work = fresh_machine(tmp_path)
    hub = ServedHub(env, work) if "hub" in block.words else None
    try:
        proc = subprocess.run(
            ["bash", "-c", script_of(block)],
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
    finally:
        if hub is not None:
            hub.stop()
    assert proc.returncode == 0, (
        f"{block.name} failed (exit {proc.returncode}):\n{block.body}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )
    assert "Traceback" not in proc.stderr, proc.stderr
