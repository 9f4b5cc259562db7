#!/usr/bin/env python3
"""A stand-in for Cursor's ``cursor-agent`` (which cannot be installed here), speaking its
documented headless output: ``-p <prompt> --output-format stream-json [--resume <chat id>]``
prints ``system``/``init`` with the chat's id, echoes the ``user`` message, makes a
``tool_call``, says an ``assistant`` text and ends with a ``result``; ``--version`` says one line.

Its "tool call" runs ``callboard send <to> <text>`` (as Cursor's shell tool would): to whom and
what come from a ``REPLY <agent>: <text>`` line in the prompt. Each run appends one line
``{"chat": id, "resumed": bool, "prompt": …}`` to ``$CURSOR_STANDIN_LOG``; a chat remembers its
prompts (in ``$CURSOR_STANDIN_LOG``'s folder), so a resumed run shows what came before.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path


def main(argv: list[str]) -> int:
    if argv == ["--version"]:  # what a runner asks at its start
        print("cursor-agent stand-in 0.0.0")
        return 0
    prompt = argv[argv.index("-p") + 1]
    resumed = "--resume" in argv
    chat = argv[argv.index("--resume") + 1] if resumed else str(uuid.uuid4())
    log = Path(__import__("os").environ["CURSOR_STANDIN_LOG"])
    history = log.with_name(f"chat-{chat}.txt")
    earlier = history.read_text() if history.exists() else ""
    history.write_text(earlier + prompt + "\n")
    with log.open("a") as out:
        out.write(json.dumps({"chat": chat, "resumed": resumed, "prompt": prompt, "earlier": earlier}) + "\n")
    say({"type": "system", "subtype": "init", "session_id": chat, "model": "stand-in", "cwd": str(Path.cwd())})
    say(
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}, "session_id": chat}
    )
    for to, text in re.findall(r"REPLY (\S+): ([^\n]*)", prompt):
        call = {"shellToolCall": {"args": {"command": f"callboard send {to} ..."}}}
        say({"type": "tool_call", "subtype": "started", "call_id": "c1", "tool_call": call, "session_id": chat})
        done = subprocess.run(["callboard", "send", to, text], capture_output=True, text=True)
        say({"type": "tool_call", "subtype": "completed", "call_id": "c1", "tool_call": call, "session_id": chat})
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
    answer = "Answered."
    say({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}})
    say({"type": "result", "subtype": "success", "is_error": False, "result": answer, "session_id": chat})
    return 0


def say(event: dict) -> None:
    print(json.dumps(event), flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
