"""A send that returned is on disk: SIGKILL the sending process right after, and the mail is there."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading

import pytest

# Each driver sends one message, prints "SENT <message id>" once the send has returned, then
# blocks until it is killed. Neither closes anything first.
DRIVERS = {
    # the CLI's own entry point, in-process (its 'with open_client' closes the store on return)
    "cli-main": (
        "import contextlib, io, json, sys, time\n"
        "from callboard.cli.main import main\n"
        "captured = io.StringIO()\n"
        "with contextlib.redirect_stdout(captured):\n"
        "    main(['send', 'bob', sys.argv[1], '--subject', 'durable', '--json'])\n"
        "print('SENT', json.loads(captured.getvalue())['message_id'], flush=True)\n"
        "time.sleep(300)\n"
    ),
    # the client the CLI uses, left open: the process dies holding its database connection
    "open-client": (
        "import sys, time\n"
        "from callboard.client.local import LocalClient\n"
        "from callboard.requests import SendRequest\n"
        "client = LocalClient.open()\n"
        "result = client.send(SendRequest(to='bob', text=sys.argv[1], subject='durable'))\n"
        "print('SENT', result.message_id, flush=True)\n"
        "time.sleep(300)\n"
    ),
}


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        pytest.fail(f"the driver printed nothing within {timeout:g} s")


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_mail_survives_sigkill_of_the_sender_right_after_send_returned(cli, run_json, driver):
    text = f"survives a kill ({driver})"
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVERS[driver], text],
        env=cli.env("alice"),
        cwd=cli.workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = _first_line(proc, timeout=20)
        if not line.startswith("SENT "):
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the driver did not report a send: {line!r}\n{err}")
        message_id = line.split()[1]
        assert proc.poll() is None, "the driver should still be running when it is killed"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()

    got = run_json("read", agent="bob")
    assert [i["message"]["id"] for i in got["items"]] == [message_id]
    message = got["items"][0]["message"]
    assert (message["sender"], message["subject"], message["parts"]) == ("alice", "durable", [{"text": text}])
