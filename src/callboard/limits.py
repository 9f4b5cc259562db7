"""Every bound, named once: what an address, a request, a message, a task list or a report may hold.

The service's checks and the hub's request schemas (so /openapi.json states them) both read
these, and a value past its bound is refused with a 4xx before anything is stored, whichever face
it came through. ``Limits`` gathers the ones a hub may set per deployment. Pure: stdlib only, so
the hooks' fast path may use it.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- the bounds of an address ------------------------------------------------------------------

PID_MAX = 2**31 - 1  # pid_t is a signed 32-bit integer (Linux's own pid_max is lower still)
PROC_START_MAX = 2**63 - 1  # a process's start time in clock ticks since boot, as /proc has it
ADDRESS_CHARS = 64 + 1 + 253 + 1 + 10  # name@machine#pid at its longest
NAME_CHARS = 64  # an agent, channel, workspace or runtime name
MACHINE_CHARS = 253  # a host name
URL_CHARS = 2000  # an outside agent's URL
WEBHOOK_URL_CHARS = 2048  # a push notification's target

# --- the bounds of what a request holds --------------------------------------------------------

# --- numbers ----------------------------------------------------------------------------------

SEQ_MAX = 2**63 - 1  # a delivery sequence number, and so every cursor (after=, Last-Event-ID)
SEQ_DIGITS = len(str(SEQ_MAX))  # 19: a longer run of digits is no cursor
READ_LIMIT_MAX = 1000  # messages one read, peek, surface or inbox call returns at most
READ_LIMIT_DEFAULT = 100
INBOX_LIMIT_DEFAULT = 50
AUDIT_LIMIT_DEFAULT = 50
WAIT_SECONDS_MAX = 3600.0  # how long one long-poll read may block
GOAL_CHARS = 4000  # a round's goal: a paragraph, not a document (send that as a file)
TIMEOUT_MAX = 7 * 24 * 3600.0  # how long a command may wait for a task's end or a reply (a week)

# --- a message --------------------------------------------------------------------------------

MESSAGE_BYTES = 256 * 1024  # all parts of one message, JSON-encoded
PARTS_MAX = 32
RECIPIENTS_MAX = 100
SUBJECT_CHARS = 256
IDEMPOTENCY_KEY_CHARS = 200
MESSAGE_ID_CHARS = 36  # a UUID in its canonical text form
MESSAGE_IDS_MAX = 1000  # ids one ack or mark-read names
# What a data part (or a part's metadata) may nest: JSON parsers give up not far past this.
DATA_DEPTH_MAX = 100
DATA_INT_DIGITS = 4000  # a longer integer is refused by common JSON readers (Python's at 4300)

# --- names and labels -------------------------------------------------------------------------

DESCRIPTION_CHARS = 2000  # an agent card's or a channel's description
SKILLS_MAX = 64
SKILL_CHARS = 100
TERMINAL_CHARS = 200  # the terminal a session runs in (tmux:%3, tty:/dev/pts/4)
DELIVERY_ERROR_CHARS = 500  # what a session reports broken in its delivery path
TOKEN_LABEL_CHARS = 200  # a note that tells tokens apart
ID_CHARS = 36  # a session or token id (a UUID)

# --- lists, tasks and their push targets ------------------------------------------------------

PAGE_SIZE_MAX = 100  # tasks one list call returns at most
PAGE_SIZE_DEFAULT = 50
HISTORY_MAX = 1000  # messages of a task's history one call returns at most
PUSH_CONFIGS_MAX = 10  # per task
THREAD_TASKS = 50  # an outside agent's tasks one thread follows at most
REMOTE_TOKEN_CHARS = 4096  # the bearer token kept for an outside agent
REMOTE_ERROR_CHARS = 500  # what an outside agent's failure is kept as
GUARD_MAX_RECIPIENTS = 16  # sends to more recipients at once are not loop-guarded (channels, broadcasts)

# --- a runner's report ------------------------------------------------------------------------

COUNT_MAX = 2**63 - 1  # every counter fits a signed 64-bit column in both stores
COST_MAX = 1e12  # dollars: past this a figure is a bug, not a bill
DETAIL_CHARS = 2000
CLI_CHARS = 1000  # generic:CMD carries its command line
CLI_SESSION_ID_CHARS = 200
CWD_CHARS = 4096

# --- time -------------------------------------------------------------------------------------

DEFAULT_WINDOW_SECONDS = 60.0  # a session is live while it reported within this
POLL_INTERVAL_SECONDS = 0.005  # how often a store with no change watch is polled for new mail
# How long a runner's CLI may take from its start to ready (able to take a prompt): past it, the
# start failed. Claude Code's own MCP connect timeout (30 s by default) fits well inside it.
RUNNER_START_LIMIT_SECONDS = 90.0


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one request may carry; past them a request fails with ``too_large``."""

    message_bytes: int = MESSAGE_BYTES  # all parts, JSON-encoded
    parts: int = PARTS_MAX
    recipients: int = RECIPIENTS_MAX
    subject_chars: int = SUBJECT_CHARS
    description_chars: int = DESCRIPTION_CHARS
    skills: int = SKILLS_MAX
    idempotency_key_chars: int = IDEMPOTENCY_KEY_CHARS
    read_limit: int = READ_LIMIT_MAX
    wait_seconds: float = WAIT_SECONDS_MAX
