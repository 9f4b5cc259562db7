"""A hook never breaks its host: every failure exits 0 (no wake) with one line on stderr, and a
synchronous hook gives up on a mailbox that does not answer. How fast a hook is: bench/hooks.py."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.integrations.hooks.conftest import Hooks
from tests.support.cli_runner import describe
from tests.support.waiting import scaled

EVENTS = ("session-start", "prompt", "post-tool", "stop", "wake")
# Far below what the hub client itself would wait for a silent hub (30 s): a hook that returns
# within this gave up by its own deadline, however loaded the machine.
GAVE_UP = scaled(20.0)  # a hook gives up after 2-3 s: far sooner than never


def one_line(
    run: tuple[subprocess.CompletedProcess[str], float], event: str, code: str, limit: float | None = None
) -> str:
    """Exit 0, nothing on stdout, one line on stderr naming ``code`` (within ``limit`` seconds)."""
    proc, took = run
    info = describe(proc)
    assert proc.returncode == 0 and proc.stdout == "", info
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, info
    assert lines[0].startswith(f"callboard hook{' ' + event if event else ''}: {code}: "), info
    assert limit is None or took < limit, f"took {took:.2f} s\n{info}"
    return lines[0]


def timed(hooks: Hooks, event: str, **kwargs: object) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = hooks.run(event, **kwargs)  # type: ignore[arg-type]
    return proc, time.monotonic() - started


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_hub() -> Iterator[int]:
    """A port that takes connections and never answers (a hub that hangs)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield server.getsockname()[1]


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", "", "\xff"])
def test_bad_stdin(hooks: Hooks, event: str, raw: str) -> None:
    one_line(timed(hooks, event, raw=raw), event, "bad_request")


@pytest.mark.parametrize("event", EVENTS)
def test_unreachable_hub(hooks: Hooks, event: str, closed_port: int) -> None:
    hooks.send("not reachable")
    env = {"CALLBOARD_HUB": f"http://127.0.0.1:{closed_port}", "CALLBOARD_TOKEN": "cb_nothing"}
    line = one_line(timed(hooks, event, env=env), event, "hub_unavailable")
    assert str(closed_port) in line


@pytest.mark.parametrize("event", ["session-start", "prompt", "post-tool", "stop"])
def test_a_hub_that_never_answers_is_given_up_on(hooks: Hooks, event: str, silent_hub: int) -> None:
    env = {
        "CALLBOARD_HUB": f"http://127.0.0.1:{silent_hub}",
        "CALLBOARD_TOKEN": "cb_nothing",
        "CALLBOARD_HOOK_SECONDS": "2",
    }
    line = one_line(timed(hooks, event, env=env), event, "timeout", limit=GAVE_UP)
    assert "no answer within 2 s" in line


def test_without_the_setting_a_hook_gives_up_after_three_seconds(hooks: Hooks, silent_hub: int) -> None:
    env = {"CALLBOARD_HUB": f"http://127.0.0.1:{silent_hub}", "CALLBOARD_TOKEN": "cb_x", "CALLBOARD_HOOK_SECONDS": None}
    line = one_line(timed(hooks, "prompt", env=env), "prompt", "timeout", limit=GAVE_UP)
    assert "no answer within 3 s" in line


@pytest.mark.parametrize("seconds", ["soon", "0", "-1", "nan", "61"])
def test_a_bad_deadline_is_one_line_naming_the_variable(hooks: Hooks, seconds: str) -> None:
    hooks.send("waits for a good setting")
    line = one_line(timed(hooks, "prompt", env={"CALLBOARD_HOOK_SECONDS": seconds}), "prompt", "bad_request")
    assert "CALLBOARD_HOOK_SECONDS" in line and repr(seconds) in line


@pytest.mark.parametrize("event", EVENTS)
def test_no_identity(hooks: Hooks, event: str) -> None:
    assert hooks.cli.outside_any_project()
    hooks.send("to nobody in particular")
    line = one_line(timed(hooks, event, cwd=hooks.cli.workdir), event, "no_identity")
    assert "CALLBOARD_AGENT" in line  # says what to do


@pytest.mark.parametrize(
    "args",
    [["bogus"], [], ["prompt", "--client", "vim"], ["prompt", "--client"], ["prompt", "extra"]],
)
def test_usage_errors_exit_0(hooks: Hooks, args: list[str]) -> None:
    started = time.monotonic()
    proc = hooks.cli.run("hook", *args, input="{}")
    one_line((proc, time.monotonic() - started), "", "usage")


def test_help(hooks: Hooks) -> None:
    proc = hooks.cli.run("hook", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: callboard hook {session-start|prompt|")


def test_an_empty_mailbox_loads_neither_the_service_nor_the_cli(hooks: Hooks) -> None:
    """The common case stays cheap: no typer, pydantic, httpx or service for an empty prompt."""
    assert hooks.context("session-start") is None  # registered: no heartbeat due for a while
    for event in ("prompt", "post-tool", "stop"):
        loaded = hooks.modules_loaded(event)
        heavy = {
            "typer",
            "rich",
            "pydantic",
            "httpx",
            "callboard.service",
            "callboard.client.base",
            "callboard.model",
        }
        assert not heavy & loaded, f"{event} loaded {sorted(heavy & loaded)}"
