"""A command that waits more than a second says what it waits for, on stderr, once: a send to a
hub that does not answer (a following read whose hub goes away: tests/hub/test_waiting.py).
Standard output stays the command's answer alone."""

from __future__ import annotations

from tests.support.cli_runner import CLI, describe
from tests.support.outside_agent import free_port


def dead_hub() -> dict[str, str]:
    """A login to a hub nobody serves (a loopback port with no listener)."""
    return {"CALLBOARD_HUB": f"http://127.0.0.1:{free_port()}", "CALLBOARD_TOKEN": "cb_test"}


def test_a_send_to_a_hub_that_does_not_answer_says_so_once_then_fails(cli: CLI):
    env = {**dead_hub(), "CALLBOARD_SEND_RETRY_SECONDS": "3"}
    proc = cli.run("send", "bob", "anyone?", agent="alice", env=env)
    assert proc.returncode == 2 and proc.stdout == "", describe(proc)
    notice, error = proc.stderr.splitlines()  # exactly these two lines
    assert notice == (
        f"callboard: the hub at {env['CALLBOARD_HUB']} does not answer; trying again for 3 s (Ctrl-C stops)"
    ), describe(proc)
    assert error.startswith("error: hub_unavailable: ") and "nothing was sent" in error, describe(proc)


def test_a_send_that_will_not_wait_says_nothing_more(cli: CLI, expect_error):
    env = {**dead_hub(), "CALLBOARD_SEND_RETRY_SECONDS": "0"}
    expect_error(cli.run("send", "bob", "anyone?", agent="alice", env=env), "hub_unavailable", as_json=False)
