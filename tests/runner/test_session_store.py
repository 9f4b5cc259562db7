"""What each CLI's own session store holds of a turn's mail (``Adapter.session_holds``), read
from files shaped as each CLI writes them (records as seen in real runs against the mock model,
trimmed): only a record that puts the fenced mail into the conversation as the user's input
counts; a queued line, the model's own words quoting it, another session's file, a half-written
last line do not."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from callboard.integrations.claude_code.transcript_watch import fenced_ids
from callboard.model import DeliveryState, MailItem, Message, Part
from callboard.runner import prompts
from callboard.runner.adapters.base import Launch
from callboard.runner.adapters.claude import ClaudeAdapter
from callboard.runner.adapters.codex import CodexAdapter
from callboard.runner.adapters.copilot import CopilotAdapter
from callboard.runner.adapters.cursor import CursorAdapter
from callboard.runner.adapters.gemini import GeminiAdapter
from callboard.runner.adapters.generic import GenericAdapter
from callboard.runner.adapters.session_store import held_in

TAKEN = "01a25000-0000-7000-8000-00000000aaaa"  # its turn's input is in the session
QUEUED = "01a25000-0000-7000-8000-00000000bbbb"  # only written where a resume does not read it
SESSION = "0c0ffee0-1111-4222-8333-444455556666"
BOTH = [TAKEN, QUEUED]


def mail(message_id: str) -> str:
    """A turn's input carrying one message, as the runner writes it."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    message = Message(
        id=message_id,
        workspace="default",
        sender="bob",
        recipients=["alice"],
        parts=[Part(text=f"Please answer {message_id[-4:]}.")],
        thread_id=message_id,
        created_at=now,
    )
    return prompts.mail_prompt("alice", [MailItem(seq=1, state=DeliveryState.handed, message=message)])


def write(path: Path, *records: dict[str, Any], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return path


def started(adapter: Any, env: dict[str, str], tmp_path: Path) -> Any:
    """A per-turn adapter on session SESSION (nothing runs until a turn)."""
    adapter.start(Launch(agent="alice", cwd=tmp_path, env=env, mcp_server={}, command=("true",)), resume=SESSION)
    return adapter


def test_claude_codes_transcript_holds_what_a_turn_carried_not_what_was_only_queued(tmp_path: Path) -> None:
    transcript = write(
        tmp_path / "SESSION.jsonl",
        {"type": "queue-operation", "operation": "enqueue", "content": mail(QUEUED)},
        {"type": "queue-operation", "operation": "enqueue", "content": mail(TAKEN)},
        {"type": "user", "message": {"role": "user", "content": mail(TAKEN)}},
        tail='{"type": "user", "message": {"role": "user", "content": "' + QUEUED,  # killed mid-write
    )
    assert held_in(transcript, BOTH, fenced_ids) == [TAKEN]
    assert held_in(None, BOTH, fenced_ids) == []  # no session yet: nothing a resume would carry


def test_claude_code_reads_its_sessions_transcript(tmp_path: Path) -> None:
    adapter = ClaudeAdapter()
    adapter._launch = Launch(agent="alice", cwd=tmp_path, env={"CLAUDE_CONFIG_DIR": str(tmp_path)}, mcp_server={})
    assert adapter.session_holds(BOTH) == []  # no session: nothing held
    adapter._session_id = SESSION
    folder = tmp_path / "projects" / adapter.snapshot().transcript.parent.name  # type: ignore[union-attr]
    write(folder / f"{SESSION}.jsonl", {"type": "user", "message": {"role": "user", "content": mail(TAKEN)}})
    assert adapter.session_holds(BOTH) == [TAKEN]


def test_codexs_rollout_holds_the_user_messages_a_resume_rebuilds(tmp_path: Path) -> None:
    adapter = started(CodexAdapter(), {"CODEX_HOME": str(tmp_path)}, tmp_path)
    assert adapter.session_holds(BOTH) == []
    write(
        tmp_path / "sessions/2026/01/01" / f"rollout-2026-01-01T00-00-00-{SESSION}.jsonl",
        {"type": "event_msg", "payload": {"type": "task_started"}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": mail(QUEUED)}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": mail(TAKEN)}]},
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": mail(QUEUED)}],
            },
        },
    )
    assert adapter.session_holds(BOTH) == [TAKEN]


def test_copilots_events_hold_its_user_messages(tmp_path: Path) -> None:
    adapter = started(CopilotAdapter(), {"COPILOT_HOME": str(tmp_path)}, tmp_path)
    write(
        tmp_path / "session-state" / SESSION / "events.jsonl",
        {"type": "session.start", "data": {"sessionId": SESSION}},
        {"type": "user.message", "data": {"content": mail(TAKEN), "transformedContent": "…"}},
        {"type": "assistant.message", "data": {"content": mail(QUEUED)}},
    )
    assert adapter.session_holds(BOTH) == [TAKEN]


def test_geminis_chat_file_holds_its_user_messages_in_records_and_in_a_whole_list(tmp_path: Path) -> None:
    adapter = started(GeminiAdapter(), {"HOME": str(tmp_path)}, tmp_path)
    chats = tmp_path / ".gemini/tmp/work/chats"
    other = "0c0ffee0-9999-4222-8333-444455556666"  # the same first 8 characters: another session
    write(
        chats / "session-2026-01-01T00-00-0c0ffee0.jsonl",
        {"sessionId": other},
        {"type": "user", "content": [{"text": mail(QUEUED)}]},
    )
    write(
        chats / "session-2026-01-01T00-01-0c0ffee0.jsonl",
        {"sessionId": SESSION, "projectHash": "x"},
        {"$set": {"messages": [{"type": "user", "content": [{"text": "<session_context>"}]}]}},
        {"type": "user", "content": [{"text": mail(TAKEN)}]},
        {"type": "gemini", "content": mail(QUEUED)},
    )
    assert adapter.session_holds(BOTH) == [TAKEN]
    later = chats / "session-2026-01-01T00-02-0c0ffee0.jsonl"  # a resume rewrites the list whole
    write(
        later, {"sessionId": SESSION}, {"$set": {"messages": [{"type": "user", "content": [{"text": mail(QUEUED)}]}]}}
    )
    later.rename(chats / "session-2026-01-01T00-01-0c0ffee0.jsonl")
    assert adapter.session_holds(BOTH) == [QUEUED]


def test_a_cli_whose_store_the_runner_does_not_read_cannot_tell(tmp_path: Path) -> None:
    assert GenericAdapter(("true",)).session_holds(BOTH) is None
    assert started(CursorAdapter(), {}, tmp_path).session_holds(BOTH) is None
