"""``callboard run --cli generic:…`` with a real scripted program: mail in, answers out, and
the runner's life (batches, respawn, clear, turn limit, wake, stop, crash loop)."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from callboard.runner import prompts
from tests.runner.conftest import RunnerMachine
from tests.support.waiting import scaled, wait_until

pytestmark = pytest.mark.e2e


def answered(machine: RunnerMachine, token: str) -> bool:
    return any(f"{token}" in text for text in machine.alice_got())


def surfaced(machine: RunnerMachine, message_id: str) -> dict:
    """The message's status once its turn is done: handed to the runner, surfaced when the turn
    took it, read at its done line (which may come after the program's answer)."""

    def status() -> dict | None:
        found = machine.status(message_id)
        return found if found["state"] == "read" else None

    found = wait_until(status, 10, f"message {message_id} read")
    events = [e["event"] for e in found["history"]]
    assert events[-3:] == ["handed", "surfaced", "read"] and found["via"] == "runner", found
    return found


def prompt_session(machine: RunnerMachine) -> str:
    return machine.records("start")[-1]["session"]


def test_answers_mail_surfaced_via_runner_and_stops_on_sigterm(machine: RunnerMachine) -> None:
    machine.start("--grace", "5")
    sent = machine.send("please echo tok-111")
    wait_until(lambda: answered(machine, "echo tok-111"), 30, "the runner's answer")
    status = surfaced(machine, sent)
    assert [e for e in status["history"] if e["event"] == "surfaced"][0]["detail"] == "turn"
    (prompt,) = machine.prompts()
    assert "BEGIN MESSAGE" in prompt["text"] and "please echo tok-111" in prompt["text"]
    (report,) = wait_until(
        lambda: [r for r in machine.reports() if r.turns == 1 and r.state == "idle"], 10, "the report"
    )
    assert (report.agent, report.cli_session_id, report.input_tokens, report.cost_usd) == (
        "rbot",
        prompt_session(machine),
        10,
        0.001,
    )
    logs = machine.cli.run("runner", "logs", "rbot", "-n", "50")
    assert "turn t1-" in logs.stdout
    as_data = machine.cli.run_json("runner", "logs", "rbot", "-n", "50")
    assert as_data["agent"] == "rbot" and len(as_data["lines"]) == len(logs.stdout.splitlines())
    turn = next(line for line in as_data["lines"] if "turn t1-" in line["text"])
    assert turn["at"].endswith("Z") and f"{turn['at']} {turn['text']}" in logs.stdout
    started = time.monotonic()
    assert machine.stop() == 0, machine.describe()
    assert time.monotonic() - started < scaled(10)  # the program ended when told, not killed after --grace (10 s)
    assert machine.records("stop"), "the program was told to stop"
    assert [r.state for r in machine.reports()] == ["stopped"]
    who = machine.cli.run_json("who", agent="alice")["agents"]
    assert not [s for a in who if a["name"] == "rbot" for s in a.get("sessions", []) if s["live"]]


def test_a_second_runner_for_the_agent_is_refused(machine: RunnerMachine) -> None:
    proc = machine.start()
    second = machine.cli.run("run", "--agent", "rbot", "--cli", "generic:true")
    assert second.returncode == 2 and "runner_running" in second.stderr and str(proc.pid) in second.stderr


def test_mail_during_a_turn_goes_as_one_batch_after_it(machine: RunnerMachine) -> None:
    release = machine.agent_log.with_name("release")
    machine.start(ECHO_AGENT_RELEASE=str(release))
    machine.send("hold tok-first")
    wait_until(lambda: machine.prompts(), 30, "the first turn")
    sent = [machine.send(f"tok-batch{n}") for n in (1, 2, 3)]
    assert [machine.status(s)["state"] for s in sent] == ["delivered"] * 3  # waiting for the turn's end
    release.touch()
    wait_until(lambda: answered(machine, "tok-batch3"), 30, "the batch's answer")
    prompts = machine.prompts()
    assert len(prompts) == 2, prompts
    assert all(f"tok-batch{n}" in prompts[1]["text"] for n in (1, 2, 3))


def test_a_killed_program_is_respawned_resuming_its_session_and_nothing_is_lost(machine: RunnerMachine) -> None:
    machine.start("--respawn-base", "0.2")
    sent = machine.send("hangfirst tok-kill")
    (first,) = wait_until(lambda: machine.prompts(), 30, "the first turn")
    os.kill(first["pid"], signal.SIGKILL)
    wait_until(lambda: answered(machine, "echo tok-kill"), 30, "the answer after the respawn")
    starts = machine.records("start")
    assert len(starts) == 2 and starts[1]["resume"] == starts[0]["session"]
    assert machine.prompts()[-1]["resume"] == starts[0]["session"]
    surfaced(machine, sent)


def test_a_program_killed_after_it_took_its_mail_goes_on_with_that_turn_and_is_not_given_it_again(
    machine: RunnerMachine,
) -> None:
    machine.start("--respawn-base", "0.2")
    sent = machine.send("tookdie tok-once")
    first, second = wait_until(lambda: len(machine.prompts()) == 2 and machine.prompts(), 30, "the turn after")
    assert sent in first["text"]
    # Its session holds the mail (it said it took it): the next turn goes on with it, without it.
    assert second["text"].startswith(prompts.INTERRUPTED_TEXT), second
    assert sent not in second["text"] and "tok-once" not in second["text"], second
    assert second["resume"] == machine.records("start")[0]["session"]
    found = surfaced(machine, sent)  # once, when the first turn took it; read when the second is done
    assert [e["event"] for e in found["history"]].count("surfaced") == 1, found


def test_done_with_clear_starts_a_fresh_program_and_clears_are_rate_limited(machine: RunnerMachine) -> None:
    machine.start("--clear-min-gap", "3600")
    machine.send("clearme tok-c1")
    wait_until(lambda: len(machine.records("start")) == 2, 30, "a fresh program after the clear")
    assert machine.records("start")[1]["resume"] is None
    assert machine.records("clear"), "the program was told of the clear"
    machine.send("clearme tok-c2")
    wait_until(lambda: answered(machine, "tok-c2"), 30, "the second answer")
    machine.send("tok-c3")
    wait_until(lambda: answered(machine, "tok-c3"), 30, "the third answer")
    assert len(machine.records("start")) == 2  # the second clear came too soon: kept pending
    assert any("clear refused" in line for line in machine.err)


def test_a_turn_past_the_limit_is_stopped_reported_and_its_mail_answered(machine: RunnerMachine) -> None:
    # A limit the resumed turn's own `callboard send` fits in on a loaded machine (one of 1 s did not).
    machine.start("--turn-limit", "4", "--grace", "1", "--respawn-base", "0.2")
    machine.send("hangfirst tok-slowpoke")
    wait_until(lambda: answered(machine, "echo tok-slowpoke"), 60, "the answer after the restart")
    assert any("ran past its limit of 4 s" in line for line in machine.err), machine.describe()
    assert len(machine.records("start")) == 2


def test_a_wake_waits_for_the_running_turn_then_ticks(machine: RunnerMachine) -> None:
    release = machine.agent_log.with_name("release")
    proc = machine.start(ECHO_AGENT_RELEASE=str(release))
    machine.send("hold tok-w")
    wait_until(lambda: machine.prompts(), 30, "the turn")
    woke = machine.cli.run_json("runner", "wake", "rbot")
    assert woke == {"sent": True, "pid": proc.pid, "message": f"woke rbot's runner (pid {proc.pid})"}
    assert len(machine.prompts()) == 1  # the running turn is not interrupted
    release.touch()
    wait_until(lambda: len(machine.prompts()) == 2, 30, "the tick after the turn")
    assert answered(machine, "echo tok-w")  # the first turn ran to its end
    assert machine.prompts()[1]["text"].startswith("No new mail.")
    assert machine.cli.run_json("runner", "wake", "nobody")["sent"] is False


def test_an_idle_runner_makes_no_turns(machine: RunnerMachine) -> None:
    machine.start()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:  # a span of nothing: the runner must stay silent in it
        assert machine.prompts() == []
        time.sleep(0.1)
    assert len(machine.records("start")) == 1


def test_sigterm_during_a_hung_turn_ends_within_the_grace(machine: RunnerMachine) -> None:
    machine.start("--grace", "2")
    sent = machine.send("hang tok-h")
    wait_until(lambda: machine.prompts(), 30, "the turn")
    started = time.monotonic()
    assert machine.stop() == 0, machine.describe()
    assert time.monotonic() - started < scaled(20)  # the grace (2 s) then a kill, not the hung turn's end
    assert machine.status(sent)["state"] in ("queued", "delivered")  # never taken: back in the mailbox


def test_a_crash_loop_ends_the_runner_with_exit_3(machine: RunnerMachine, tmp_path) -> None:
    script = tmp_path / "dies.py"  # starts fine (says ready), then dies on every prompt
    script.write_text('import sys\nprint(\'{"type": "ready"}\', flush=True)\nsys.stdin.readline()\nsys.exit(5)\n')
    cli = f"generic:{sys.executable} {script}"
    proc = machine.cli.spawn(
        "run", "--agent", "rbot", "--cli", cli, "--respawn-base", "0.05", env={"CALLBOARD_WARM": "0"}
    )
    wait_until(
        lambda: (
            machine.cli.run_json("who", agent="alice")
            and any(
                s["live"]
                for a in machine.cli.run_json("who", agent="alice")["agents"]
                if a["name"] == "rbot"
                for s in a.get("sessions", [])
            )
        ),
        30,
        "the runner's session",
    )
    try:
        sent = machine.send("tok-doomed")
        assert proc.wait(timeout=30) == 3
    finally:
        proc.kill()
    assert "crashes within" in (proc.stderr.read() if proc.stderr else "")
    (report,) = machine.reports()
    assert report.state == "crashed" and "crashes within" in (report.detail or "")
    assert machine.status(sent)["state"] in ("queued", "delivered")  # nothing lost: it waits for the next taker


def test_a_program_that_exits_at_once_is_a_failed_start_with_its_status_and_last_lines(
    machine: RunnerMachine, tmp_path
) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        "import sys\nprint('reading config.toml')\nprint('no config.toml here', file=sys.stderr)\nsys.exit(7)\n"
    )
    proc = machine.cli.spawn("run", "--agent", "rbot", "--cli", f"generic:{sys.executable} {script}")
    try:
        code = proc.wait(timeout=60)  # not started again and again, nor left idle as if ready
    finally:
        proc.kill()
    out, err = proc.communicate()
    assert code == 3, (code, out, err)
    assert "running " not in out, out  # never said ready
    assert "exited with status 7" in err and "no config.toml here" in err and "reading config.toml" in err, err
    assert "did not start" in err and "respawning" not in err and "Traceback" not in err, err
    (report,) = machine.reports()
    assert report.state == "crashed" and "exited with status 7" in (report.detail or "")


def test_a_program_that_says_nothing_until_its_first_prompt_is_taken_as_started(
    machine: RunnerMachine, tmp_path
) -> None:
    script = tmp_path / "quiet.py"  # the protocol's minimal agent: no ready line, answers each prompt
    script.write_text(
        "import json, subprocess, sys\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    if msg.get('type') == 'prompt':\n"
        "        subprocess.run(['callboard', 'send', 'alice', 'got it'])\n"
        "        print(json.dumps({'type': 'done', 'id': msg['id']}), flush=True)\n"
    )
    machine.start(script=str(script))
    machine.send("hello")
    wait_until(lambda: answered(machine, "got it"), 30, "the quiet program's answer")
    assert any("taken as started" in line for line in machine.err), machine.describe()


def test_the_runners_log_shows_each_event_once_and_ends_quietly(machine: RunnerMachine) -> None:
    machine.start("--grace", "5")
    machine.send("please echo tok-log")
    wait_until(lambda: answered(machine, "echo tok-log"), 30, "the runner's answer")
    assert machine.stop() == 0, machine.describe()
    logged = machine.cli.run("runner", "logs", "rbot", "-n", "100").stdout.splitlines()
    events = [line.split(" ", 1)[1] for line in logged]  # without the time stamp
    assert len(events) == len(set(events)), logged
    assert sum("mail from alice (1 message)" in e for e in events) == 1, logged  # the turn, said once
    assert events[0].startswith("ready: rbot@") and events[-1] == "stopped", logged
    assert not [line for line in machine.err if "Traceback" in line or "Error" in line], machine.describe()


def test_a_program_that_dies_while_idle_is_started_again_at_once(machine: RunnerMachine) -> None:
    """Not when the next mail comes (which would then wait for the start): at once, resuming."""
    machine.start()
    [first] = machine.records("start")
    os.kill(first["pid"], signal.SIGKILL)  # idle: no mail, no turn
    starts = wait_until(lambda: machine.records("start")[1:], 30, "the program started again, with no mail")
    assert starts[0]["resume"] == first["session"], starts  # its session resumed
    assert machine.prompts() == []  # no turn was needed to notice
    machine.send("still there tok-idle")
    wait_until(lambda: answered(machine, "echo tok-idle"), 30, "the answer")
