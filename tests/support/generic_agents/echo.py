"""A generic runner agent for tests: answers each prompt's mail by sending "echo <tok-…>" to alice.

It speaks docs/runner-protocol.md: says its session id (the resumed one when respawned), logs
every prompt to $ECHO_AGENT_LOG (one JSON line per prompt: id, text, resume), and ends each turn
with done. Behaviour for tests, by words in the prompt: "hang" never answers the turn; "die"
exits before done (once per prompt id when $ECHO_AGENT_DIE_ONCE is set); "tookdie" says it took
the turn's input, then exits; "hangfirst" hangs
unless it was resumed; "clearme" asks for a clear with done; "hold" waits for the file
$ECHO_AGENT_RELEASE (up to 60 s) before it answers.
"""

import json
import os
import subprocess
import sys
import time
import uuid

LOG = os.environ.get("ECHO_AGENT_LOG")
RESUME = os.environ.get("CALLBOARD_RUNNER_RESUME")
SESSION = RESUME or f"echo-{uuid.uuid4().hex[:8]}"
DIED = os.environ.get("ECHO_AGENT_DIE_ONCE")


def say(obj):
    print(json.dumps(obj), flush=True)


def note(record):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(record) + "\n")


say({"type": "session", "id": SESSION})
note({"event": "start", "pid": os.getpid(), "resume": RESUME, "session": SESSION})
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("type") == "stop":
        note({"event": "stop"})
        break
    if msg.get("type") != "prompt":
        note({"event": msg.get("type")})
        continue
    text = msg.get("text", "")
    note({"event": "prompt", "id": msg["id"], "text": text, "resume": RESUME, "pid": os.getpid()})
    if "die" in text.split() and not (DIED and os.path.exists(DIED)):
        if DIED:
            open(DIED, "w").close()
        os._exit(9)
    if "tookdie" in text.split():
        say({"type": "took", "id": msg["id"]})
        os._exit(9)
    if "hang" in text.split() or ("hangfirst" in text.split() and not RESUME):
        time.sleep(3600)
    if "hold" in text.split():  # until the test lets the turn end: it sends mail meanwhile
        release, deadline = os.environ.get("ECHO_AGENT_RELEASE", ""), time.monotonic() + 60
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.01)
    words = [w for w in text.split() if w.startswith("tok-")]
    if words:
        subprocess.run(["callboard", "send", "alice", "echo " + " ".join(words)], check=False, capture_output=True)
    done = {"type": "done", "id": msg["id"], "usage": {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001}}
    if "clearme" in text.split():
        done["clear"] = True
    say(done)
