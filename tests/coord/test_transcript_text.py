"""A transcript as the conversation it records: Claude Code's and Codex's record shapes, the
bookkeeping left out, long entries cut in their middle, and a file of another shape excerpted
as it is."""

from __future__ import annotations

import json
from pathlib import Path

from callboard.coord import transcript_text
from callboard.coord.handoff_packet import transcript_excerpt
from callboard.coord.transcript_text import ENTRY_CHARS, conversation_of


def write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"type": "user", "mess')  # a cut last line
    return path


def test_claude_codes_records_become_who_said_what_and_which_tools_ran(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "session.jsonl",
        [
            {"type": "system", "subtype": "init", "tools": ["x"] * 500},  # bookkeeping: left out
            {"type": "attachment", "content": "skills listing " * 200},
            {"type": "user", "message": {"role": "user", "content": "fix the queue limit"}},
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Reading settings first."},
                        {"type": "tool_use", "name": "Bash", "input": {"command": "cat settings.py"}},
                    ],
                },
            },
            {
                "type": "user",
                "message": {"role": "user", "content": [{"type": "tool_result", "content": "LIMIT = 10"}]},
            },
        ],
    )
    assert conversation_of(path) == (
        "user: fix the queue limit\n\nassistant: Reading settings first.\n\n"
        'tool call Bash: {"command":"cat settings.py"}\n\ntool result: LIMIT = 10'
    )


def test_codexs_rollout_items_become_who_said_what_and_which_tools_ran(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "rollout.jsonl",
        [
            {"type": "session_meta", "payload": {"id": "t-1", "instructions": "long " * 300}},
            {
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            },
            {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "ls"}},
            {"type": "response_item", "payload": {"type": "function_call_output", "output": "a.py"}},
            {
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "done"}],
                },
            },
        ],
    )
    assert conversation_of(path) == "user: hi\n\ntool call shell: ls\n\ntool result: a.py\n\nassistant: done"


def test_a_long_entry_keeps_its_start_and_end_and_says_what_it_left_out(tmp_path: Path) -> None:
    text = "A" * ENTRY_CHARS + "B" * 500
    path = write_lines(tmp_path / "s.jsonl", [{"type": "user", "message": {"role": "user", "content": text}}])
    conversation = conversation_of(path)
    assert conversation is not None
    assert conversation.startswith("user: AAA") and conversation.endswith("B" * 100)
    assert f"[…{len('user: ' + text) - ENTRY_CHARS} characters left out…]" in conversation


def test_only_the_files_end_is_read_and_its_cut_first_line_is_skipped(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(transcript_text, "READ_BYTES", 200)
    records = [{"type": "user", "message": {"role": "user", "content": f"message {n:03d}"}} for n in range(40)]
    conversation = conversation_of(write_lines(tmp_path / "s.jsonl", records))
    assert conversation is not None and conversation.endswith("user: message 039")
    assert "message 000" not in conversation


def test_a_transcript_of_another_shape_is_excerpted_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("plain words, no records\n")
    assert conversation_of(path) is None
    excerpt = transcript_excerpt(path)
    assert excerpt is not None and excerpt.text == "plain words, no records\n"
    assert transcript_excerpt(tmp_path / "missing.jsonl") is None
