"""Mail injected into this machine's Claude Code sessions that Callboard does not serve.

A Claude Code session that runs our MCP server gets its agent's mail from that server's
injector (``socket_delivery``); one with our hooks gets it from them. Any other session of the
person is still in Claude Code's registry with its messaging socket. So right after a send has
committed, the sender looks there for the recipients' sessions and, acting as each recipient,
writes its waiting mail into them: handed by "socket", fenced, one frame (the injector's way).

Handed to a session the service can judge: before the frame, the sender registers the Claude
Code session as a session of its agent (its pid and start time on this machine, runtime
``claude-code-unserved``), and the mail is handed to that session. When its process is gone,
the service's sweep returns what its model never took to the mailbox, for the agent's next
session or reader. Nothing of ours watches that session's transcript, so the sender reads it
(``unserved_sessions``) and confirms the mail its model took (``confirm_injected``) before the
service judges it: at every injection (the next send) and before a status.

Whose session it is: the identity rule applied to the session's working folder, with the
``CALLBOARD_AGENT`` (and ``CALLBOARD_WORKSPACE``) of the session process's environment.

Left alone, the mail staying queued for the session's own reading:
- a session with a Callboard session of its pid on this machine: our server or hooks serve it;
- a session that would not deliver the frame. It comes from a process that is not the session's
  descendant and claims no permission mode, so a session that bypasses permission prompts holds
  it (``no-mode-asserted``), and a ``crossSessionInbound`` of hold or refuse holds or refuses
  it. Nothing comes back for a frame delivered, so one written there would be mail marked
  handed that the session never took;
- a session whose command line or environment cannot be read (no /proc: not Linux);
- through a hub, every session when the credential is an agent token (it acts as its own agent
  only).

Best effort: nothing here fails a send or holds it up for long (short socket timeouts); what
went wrong is one sentence in the report, for the face to show.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callboard.client.base import Client
from callboard.config import Settings
from callboard.errors import CallboardError, Forbidden
from callboard.identity import machine_name, resolve_agent
from callboard.integrations.agent_clis import CLAUDE_CODE
from callboard.integrations.claude_code import sessions as claude_sessions
from callboard.integrations.claude_code import unserved_sessions
from callboard.integrations.claude_code.sessions import ClaudeSession
from callboard.integrations.claude_code.socket_delivery import BATCH, write_batch
from callboard.integrations.claude_code.unserved_sessions import Note
from callboard.model import InjectedInto, SendResult, Session, WhoReport, unserved_runtime
from callboard.procs import process_alive, process_command_line, process_environment, process_start_time
from callboard.requests import SurfaceQuery

UNSERVED_RUNTIME = unserved_runtime(CLAUDE_CODE.runtime)  # "claude-code-unserved": see Session.unserved
TIMEOUT_SECONDS = 1.0  # a session's socket is local: it answers at once or not at all
BYPASS_FLAGS = frozenset({"--dangerously-skip-permissions", "--allow-dangerously-skip-permissions"})
BYPASS_MODE = "bypassPermissions"


@dataclass(frozen=True, slots=True)
class InjectReport:
    injected: tuple[InjectedInto, ...] = ()  # the model's type: a send's result carries them
    problem: str | None = None  # what went wrong, one sentence; the send itself stands


def inject_sent(
    client: Client, sent: SendResult, env: Mapping[str, str] | None = None, settings: Settings | None = None
) -> InjectReport:
    """Write the mail of ``sent``'s recipients into their Claude Code sessions on this machine
    that Callboard does not serve (``settings``: the ones the client was opened with, else
    loaded now). Never raises."""
    env = os.environ if env is None else env
    try:
        return _inject(client, sent, env, settings or Settings.load(env))
    except Exception as error:  # best effort: the send has committed whatever happens here
        return InjectReport(problem=f"could not inject mail into Claude Code sessions: {_reason(error)}")


def _inject(client: Client, sent: SendResult, env: Mapping[str, str], settings: Settings) -> InjectReport:
    # What the sessions injected into before took is told first: the surface below sweeps back
    # the mail of those that are gone, and mail their model took must not come back.
    confirm_injected(client, env, settings)
    recipients = {r.agent for r in sent.recipients if r.agent and r.state != "unknown_recipient"}
    sessions = [s for s in claude_sessions.live_sessions(env) if s.socket_path] if recipients else []
    if not sessions:
        return InjectReport()
    owned = [(owner, s) for s in sessions if (owner := _owner(s, settings)) and owner[0] in recipients]
    if not owned:
        return InjectReport()
    report = client.who()
    served = _served_pids(report, machine_name(env))
    injected: list[InjectedInto] = []
    problems: list[str] = []
    for (agent, workspace), session in owned:
        if workspace != report.workspace or session.pid in served or not _delivers(session, env):
            continue
        try:
            with _acting_as(client, agent) as recipient:
                if done := _inject_into(client, recipient, agent, session, settings, env):
                    injected.append(done)
        except Forbidden:
            continue  # an agent token may not act as another agent: the mail waits for its reading
        except Exception as error:
            problems.append(f"could not inject mail into Claude Code session {session.pid}: {_reason(error)}")
    return InjectReport(injected=tuple(injected), problem="; ".join(problems) or None)


def _inject_into(
    client: Client, recipient: Client, agent: str, session: ClaudeSession, settings: Settings, env: Mapping[str, str]
) -> InjectedInto | None:
    if not recipient.surface(SurfaceQuery(via="socket", peek=True, limit=1)).items:
        return None  # nothing waiting: another session of the agent took it, or it was read
    current = claude_sessions.session_of(session.pid, env)  # the session id follows /clear
    if current is None or current.socket_path is None:
        return None
    registered = _register_unserved(recipient, current, settings)
    token = claude_sessions.peer_token(current, env)
    written: list[str] = []
    with _acting_as(client, agent, registered.id) as handing:
        while True:
            taken = write_batch(
                handing, current.socket_path, token=token, session_id=current.session_id, timeout=TIMEOUT_SECONDS
            )
            written += [item.message.id for item in taken]
            if len(taken) < BATCH:
                break
    if not written:
        return None
    return InjectedInto(
        agent=agent, pid=current.pid, name=current.name, session_id=current.session_id, messages=written
    )


def _register_unserved(recipient: Client, current: ClaudeSession, settings: Settings) -> Session:
    """The Claude Code session as a session of the recipient's agent (registered again: its
    liveness renewed), with a note of the transcripts to read for what its model took."""
    registered = recipient.register_session(runtime=UNSERVED_RUNTIME, pid=current.pid)
    start = process_start_time(current.pid)
    note = Note(registered.workspace, registered.agent, registered.id, current.pid, start, (current.session_id,))
    unserved_sessions.remember(settings.home, note)
    return registered


def confirm_injected(
    client: Client, env: Mapping[str, str] | None = None, settings: Settings | None = None
) -> list[str]:
    """Tell the mailbox which mail handed to the unserved Claude Code sessions injected into from
    this machine their model took, as their transcripts show (evidence "transcript"), and renew
    the liveness of those still running (through a hub elsewhere, nothing else reports them).
    A session whose process is gone is read a last time and forgotten; the service's sweep
    then returns the rest of its mail. The ids confirmed. Never raises."""
    env = os.environ if env is None else env
    try:
        home = (settings or Settings.load(env)).home
        kept = unserved_sessions.notes(home)
        workspace = client.whoami().workspace if kept else None
    except Exception:  # best effort: a status or a send goes on without it
        return []
    confirmed: list[str] = []
    for note in kept:
        if note.workspace != workspace:
            continue  # another workspace's: its own client tells it
        running = process_alive(note.pid, note.proc_start)
        try:
            shown = unserved_sessions.carried(note, env)
            with _acting_as(client, note.agent) as recipient:
                if shown:
                    confirmed += recipient.confirm_surfaced(shown, "transcript").marked
                if running:
                    recipient.heartbeat(note.session)
        except Forbidden:
            continue  # an agent token may not act as another agent
        except Exception:  # the mailbox away, the session unknown to it: the note waits
            continue
        if not running:
            unserved_sessions.forget(home, note)
    return confirmed


# --- whose session, and who serves it -----------------------------------------------------------


def _owner(session: ClaudeSession, settings: Settings) -> tuple[str, str] | None:
    """The agent and workspace a session acts as, by the identity rule; None when unknown."""
    environ = process_environment(session.pid)
    if environ is None or not session.cwd:
        return None
    try:
        agent = resolve_agent(environ, Path(session.cwd), settings.agent).name
        workspace = settings.workspace_in(environ)
    except (CallboardError, OSError):
        return None
    return agent, workspace


def _served_pids(report: WhoReport, machine: str) -> set[int]:
    """The pids on this machine that have a Callboard session: live, or not ended and of the
    same process (a session kept by hooks alone drops out of the liveness window while idle,
    and its hooks still serve it). Not a session the injection itself registered (unserved)."""
    return {
        s.pid
        for agent in report.agents
        for s in agent.sessions
        if s.machine == machine
        and not s.unserved
        and (s.live or (s.ended_at is None and s.proc_start in (None, process_start_time(s.pid))))
    }


@contextmanager
def _acting_as(client: Client, agent: str, session_id: str | None = None) -> Iterator[Client]:
    """``client`` acting as ``agent`` of its workspace (in its session ``session_id`` when given),
    closed after (``Client.as_agent``: through a hub only a user or admin token may)."""
    recipient = client.as_agent(agent, session_id)
    try:
        yield recipient
    finally:
        recipient.close()


# --- does the session deliver a frame from us ----------------------------------------------------


def _delivers(session: ClaudeSession, env: Mapping[str, str]) -> bool:
    """Whether the session delivers a frame from a process that is not its own and claims no
    permission mode: not when it may bypass permission prompts, nor when its setting holds or
    refuses peer messages. Unknown counts as no."""
    argv = process_command_line(session.pid)
    if argv is None or _bypasses(argv):
        return False
    project = Path(session.cwd)
    flagged = _flag_settings(argv, project)
    if flagged is None:
        return False  # --settings we cannot read: its mode and policy are unknown
    if (
        BYPASS_MODE in claude_sessions.default_modes(project, env)
        or claude_sessions.default_mode_in(flagged) == BYPASS_MODE
    ):
        return False
    policies = (claude_sessions.inbound_policy(project, env), claude_sessions.policy_in(flagged))
    return not any(policy in ("hold", "refuse") for policy in policies)


def _bypasses(argv: Sequence[str]) -> bool:
    for index, arg in enumerate(argv):
        if arg in BYPASS_FLAGS or arg == f"--permission-mode={BYPASS_MODE}":
            return True
        if arg == "--permission-mode" and argv[index + 1 : index + 2] == [BYPASS_MODE]:
            return True
    return False


def _flag_settings(argv: Sequence[str], project: Path) -> dict[str, Any] | None:
    """What ``--settings`` (a JSON document or a file) on the command line sets: {} without
    it, None when it cannot be read."""
    values = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--settings"]
    values += [arg.removeprefix("--settings=") for arg in argv if arg.startswith("--settings=")]
    merged: dict[str, Any] = {}
    for value in values:
        if value.lstrip().startswith("{"):
            try:
                settings = json.loads(value)
            except ValueError:
                return None
            settings = settings if isinstance(settings, dict) else None
        else:
            settings = claude_sessions.read_settings(project / Path(value).expanduser())
        if settings is None:
            return None
        merged.update(settings)
    return merged


def _reason(error: Exception) -> str:
    return error.message if isinstance(error, CallboardError) else (str(error) or type(error).__name__)
