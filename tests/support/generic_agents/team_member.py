"""A scripted team member for tests: one role of product → engineering → qa → product, acting
only by `callboard send` (as the runner's agent, in its session) on the mail each turn brings.

Usage: ``team_member.py ROLE`` under ``callboard run --cli generic:…`` (docs/runner-protocol.md).

- product: "kickoff tok-X" → engineering "build tok-X"; "passed tok-X" → $TEAM_BOSS "accepted tok-X"
- engineering: "build tok-X" → qa "review tok-X"
- qa: "review tok-X" → product "passed tok-X"

Each turn ends with done (with a little usage, so the report counts it).
"""

import json
import os
import re
import subprocess
import sys
import uuid

ROLE = sys.argv[1]
BOSS = os.environ.get("TEAM_BOSS", "boss")
MOVES = {
    "product": {"kickoff": ("engineering", "build"), "passed": (BOSS, "accepted")},
    "engineering": {"build": ("qa", "review")},
    "qa": {"review": ("product", "passed")},
}[ROLE]
WORK = re.compile(r"\b(kickoff|build|review|passed) (tok-[0-9a-f]+)\b")


def say(obj):
    print(json.dumps(obj), flush=True)


say({"type": "session", "id": os.environ.get("CALLBOARD_RUNNER_RESUME") or f"{ROLE}-{uuid.uuid4().hex[:8]}"})
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("type") == "stop":
        break
    if msg.get("type") != "prompt":
        continue
    for verb, token in dict.fromkeys(WORK.findall(msg.get("text", ""))):
        if verb in MOVES:
            to, next_verb = MOVES[verb]
            cmd = [sys.executable, "-m", "callboard", "send", to, f"{next_verb} {token}"]
            subprocess.run(cmd, check=False, capture_output=True, timeout=60)
    say({"type": "done", "id": msg["id"], "usage": {"input_tokens": 5, "output_tokens": 1}})
