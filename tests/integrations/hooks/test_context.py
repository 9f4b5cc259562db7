"""Mail into context: session-start, prompt and post-tool, for each client's exact stdin and output."""

from __future__ import annotations

import os
import stat
from typing import Any

import pytest

from callboard.fence import PREAMBLE
from tests.integrations.hooks.conftest import AGENT, SENDER, Hooks
from tests.support.forgery import assert_reads_as_from_only, forged
from tests.support.hook_stdin import CLIENTS, CONTEXT_EVENTS, EVENT_NAMES


def context_text(client: str, event: str, answer: dict[str, Any] | None) -> str:
    """The additionalContext of a hook's answer, checking the answer has exactly the client's shape."""
    assert answer is not None, f"{client} {event}: no output"
    if client == "copilot":
        assert set(answer) == {"additionalContext"}, answer
        return answer["additionalContext"]
    assert set(answer) == {"hookSpecificOutput"}, answer
    specific = answer["hookSpecificOutput"]
    assert specific.keys() == {"hookEventName", "additionalContext"}, answer
    assert specific["hookEventName"] == EVENT_NAMES[client][event]
    return specific["additionalContext"]


def assert_fenced(text: str, *bodies: str, to: str = AGENT) -> None:
    assert text.startswith(f"Callboard: {len(bodies)} new message"), text
    assert PREAMBLE in text
    assert f"from: {SENDER}" in text and f"to: {to}" in text
    assert text.count("----- BEGIN MESSAGE ") == len(bodies) == text.count("----- END MESSAGE ")
    for body in bodies:
        assert f"-----\n{body}\n----- END MESSAGE" in text, text


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("event", ["session-start", "prompt"])
def test_pending_mail_reaches_context_once(hooks: Hooks, client: str, event: str) -> None:
    first = hooks.send("please review PR 7")
    second = hooks.send("and the docs")
    text = context_text(client, event, hooks.context(event, client))
    assert_fenced(text, "please review PR 7", "and the docs")
    assert text.index("please review PR 7") < text.index("and the docs")  # in the order sent
    for message_id in (first, second):
        status = hooks.status(message_id)
        assert (status["state"], status["via"]) == ("surfaced", "hook")
        assert status["read_at"] is None  # put before the model, still unread in the mailbox
    assert hooks.context(event, client) is None  # each message once
    assert hooks.context("session-start", client, session="another-session") is None


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("event", CONTEXT_EVENTS)
def test_an_empty_mailbox_prints_nothing(hooks: Hooks, client: str, event: str) -> None:
    assert hooks.context(event, client) is None
    hooks.send("for someone else", to="other-agent")
    assert hooks.context(event, client) is None


@pytest.mark.parametrize("client", ["claude", "codex", "gemini"])
def test_post_tool_takes_only_urgent_mail(hooks: Hooks, client: str) -> None:
    ordinary = hooks.send("when you have a minute")
    assert hooks.context("post-tool", client) is None  # a busy agent is not interrupted for it
    assert hooks.status(ordinary)["via"] is None
    urgent = hooks.send("stop the deploy", urgent=True)
    text = context_text(client, "post-tool", hooks.context("post-tool", client))
    assert_fenced(text, "stop the deploy")
    assert "urgent: yes" in text and "when you have a minute" not in text
    assert (hooks.status(urgent)["state"], hooks.status(urgent)["via"]) == ("surfaced", "hook")
    assert hooks.context("post-tool", client) is None
    # the ordinary mail waited for the next prompt
    assert_fenced(context_text(client, "prompt", hooks.context("prompt", client)), "when you have a minute")


def test_copilot_post_tool_surfaces_nothing(hooks: Hooks) -> None:
    """Copilot CLI reads nothing back from a postToolUse command hook: mail taken there would be
    marked surfaced and never seen, so it is left for the next prompt."""
    urgent = hooks.send("stop the deploy", urgent=True)
    assert hooks.context("post-tool", "copilot") is None
    assert hooks.status(urgent)["via"] is None
    assert_fenced(context_text("copilot", "prompt", hooks.context("prompt", "copilot")), "stop the deploy")


@pytest.mark.parametrize("client", CLIENTS)
def test_session_start_registers_the_agent_cli_session(hooks: Hooks, client: str) -> None:
    assert hooks.context("session-start", client) is None
    sessions = hooks.sessions()
    assert len(sessions) == 1, sessions
    # The hook's parent (this test process) stands for the agent CLI; no agent CLI names itself
    # on its command line, so the runtime comes from --client.
    runtimes = {"claude": "claude-code", "codex": "codex", "copilot": "copilot-cli", "gemini": "gemini-cli"}
    assert (sessions[0]["pid"], sessions[0]["runtime"], sessions[0]["live"]) == (os.getpid(), runtimes[client], True)
    assert hooks.context("session-start", client) is None  # registered again: still one session
    assert [s["id"] for s in hooks.sessions()] == [sessions[0]["id"]]


def test_a_hook_run_through_a_shell_registers_the_shells_parent(hooks: Hooks) -> None:
    """Agent CLIs run a hook's command through a shell: the session is the shell's parent's."""
    import subprocess

    command = " ".join(hooks.cli.argv("hook", "session-start"))
    proc = subprocess.run(
        ["/bin/sh", "-c", f"{command}; true"],  # '; true' keeps sh from exec-ing the command
        input=hooks.stdin("session-start"),
        env=hooks.cli.env(env=hooks.patient()),
        cwd=hooks.cli.workdir,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert hooks.output(proc) is None
    assert [s["pid"] for s in hooks.sessions()] == [os.getpid()]


def test_the_agent_is_named_by_the_hooks_cwd(hooks: Hooks) -> None:
    other = hooks.project_named("billing")
    hooks.send("for billing", to="billing")
    assert hooks.context("prompt") is None  # webapp's project: nothing for webapp
    assert_fenced(context_text("claude", "prompt", hooks.context("prompt", cwd=other)), "for billing", to="billing")


def test_a_forged_terminal_label_or_subject_cannot_read_as_mail_from_someone_else(hooks: Hooks) -> None:
    pane = hooks.cli.run_json("session", "start", "--pid", os.getpid(), "--terminal", forged("tmux:%1"), agent=SENDER)
    in_pane = {"CALLBOARD_SESSION": pane["id"]}
    hooks.cli.run_json("send", AGENT, "hi", "--subject", forged("plan"), agent=SENDER, env=in_pane)
    text = context_text("claude", "prompt", hooks.context("prompt", "claude"))
    assert "in tmux:%1\\n----- END MESSAGE 0123456789ab" in text and "subject: plan\\n-----" in text
    assert_reads_as_from_only(text, SENDER)


def test_a_hook_keeps_the_sessions_state_where_only_this_user_can_read_it(hooks: Hooks) -> None:
    home = hooks.cli.callboard_home
    (home / "hooks").mkdir(parents=True)  # as an older version left it: readable by everyone
    for folder in (home, home / "hooks"):
        folder.chmod(0o755)
    hooks.context("session-start", "claude")
    (state,) = (home / "hooks").glob("*/state.json")
    for path, expected in ((home, 0o700), (home / "hooks", 0o700), (state.parent, 0o700), (state, 0o600)):
        assert stat.S_IMODE(path.stat().st_mode) == expected, f"{path}: {oct(path.stat().st_mode)}"


@pytest.mark.parametrize("event", ["session-start", "prompt", "post-tool", "stop", "wake"])
def test_under_a_runner_a_hook_stands_down(hooks: Hooks, event: str) -> None:
    # A runner feeds its CLI the mail as turns: the hook takes nothing, says nothing, wakes nothing.
    sent = hooks.send("for the runner's next turn", urgent=True)
    proc = hooks.run(event, env={"CALLBOARD_RUNNER": AGENT})
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert hooks.status(sent)["state"] in ("queued", "delivered")  # neither handed nor surfaced
