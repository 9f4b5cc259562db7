"""The hub's commands, as subprocesses: up, login, logout, token create/list/revoke, the
CALLBOARD_HUB / CALLBOARD_TOKEN overrides, and an agent token acting only as its agent."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import socket
import stat
import subprocess
import sys
import tomllib

import pytest

from tests.hub.conftest import ADMIN_TOKEN, CLI, LISTENING, Hub, Tenant, expect_error, unique
from tests.support.cli_runner import isolated_env
from tests.support.waiting import wait_until

DEAD_HUB = "http://127.0.0.1:9"  # the discard port: nothing answers there


def _config(cli_or_hub: CLI | Hub) -> dict:
    path = cli_or_hub.callboard_home / "config.toml"
    with path.open("rb") as file:
        return tomllib.load(file)


def _in_use(cli_or_hub: CLI | Hub) -> dict:
    """The login the config names as in use (its top-level login fields)."""
    return {k: v for k, v in _config(cli_or_hub).items() if k in ("hub", "token", "ca_cert")}


def _store_record(hub: Hub) -> dict:
    return _config(hub)["stores"][str(hub.db_path.resolve())]


def _mode(cli_or_hub: CLI | Hub) -> int:
    return stat.S_IMODE((cli_or_hub.callboard_home / "config.toml").stat().st_mode)


def test_up_prints_its_address_and_admin_token_and_logs_this_machine_in_with_a_user_token(make_hub) -> None:
    hub: Hub = make_hub()
    lines = hub.first_output
    address = LISTENING.search(lines[0])
    assert address is not None, lines
    assert re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*", address.group(1)), lines  # --port 0 picked a port
    assert any(hub.admin_token in line for line in lines[1:]), lines
    config = _config(hub)
    assert config["hub"] == hub.url and _store_record(hub) == {"hub": hub.url, "admin_token": hub.admin_token}
    assert config["token"].startswith("cb_") and config["token"] != hub.admin_token
    assert _mode(hub) == 0o600

    on_hub = CLI.on_hub_machine(hub)
    me = on_hub.run_json("whoami", agent="operator")
    assert (me["store"], me["agent"], me["workspace"]) == (hub.url, "operator", "default")
    assert me["source"].endswith("via user token"), me
    refused = on_hub.run("token", "create", "--admin", "--json")  # its agents cannot mint admin tokens …
    expect_error(refused, "forbidden", as_json=True)
    refused = on_hub.run("workspace", "list", "--json", env={"CALLBOARD_WORKSPACE": "elsewhere"})
    expect_error(refused, "forbidden", as_json=True)  # … nor look into other workspaces


def test_the_admin_token_up_kept_acts_only_in_commands_given_as_admin(make_hub) -> None:
    hub: Hub = make_hub()
    on_hub = CLI.on_hub_machine(hub)
    other = unique("ws")
    issued = on_hub.run_json("token", "create", "--workspace", other, "--as-admin")
    assert (issued["kind"], issued["workspace"]) == ("user", other)
    assert other in [w["name"] for w in on_hub.run_json("workspace", "list", "--as-admin")]
    assert [w["name"] for w in on_hub.run_json("workspace", "list")] == ["default"]
    every = on_hub.run_json("token", "list", "--as-admin")
    assert {t["kind"] for t in every} == {"admin", "user"} and issued["id"] in [t["id"] for t in every]
    assert issued["id"] not in [t["id"] for t in on_hub.run_json("token", "list")]
    revoked = on_hub.run_json("token", "revoke", issued["id"], "--as-admin")
    assert revoked["revoked_at"] is not None


def test_as_admin_without_a_saved_admin_token_says_where_it_is_kept(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    refused = cli.run("token", "list", "--as-admin", "--json")
    error = expect_error(refused, "unauthorized", as_json=True)
    assert "admin_token" in error["message"]


def test_up_on_an_existing_store_prints_no_new_admin_token(make_hub) -> None:
    hub: Hub = make_hub()
    login = _config(hub)["token"]
    hub.terminate()
    hub.start()
    assert LISTENING.search(hub.output[0]), hub.output
    assert not [line for line in hub.output if ADMIN_TOKEN.search(line)], hub.output
    assert _config(hub)["token"] == login  # the first login is still the login, and works
    with hub.http(login, "operator") as http:
        assert http.get("/v1/whoami").json()["workspace"] == "default"


def test_up_logs_in_with_a_user_token_of_the_configured_workspace(tmp_path) -> None:
    hub = Hub(tmp_path / "hub")
    hub.callboard_home.mkdir()
    (hub.callboard_home / "config.toml").write_text('workspace = "team"\n')
    try:
        hub.start()
        me = CLI.on_hub_machine(hub).run_json("whoami", agent="operator")
    finally:
        hub.close()
    assert me["workspace"] == "team" and me["source"].endswith("via user token"), me


def test_a_login_made_by_hand_with_the_admin_token_stays_as_it_is(make_hub) -> None:
    from callboard.config import save_login

    hub: Hub = make_hub()
    hub.terminate()
    save_login(hub.callboard_home, hub.url, hub.admin_token, "/etc/ssl/own-ca.pem")
    hub.args += ["--port", hub.url.rsplit(":", 1)[1]]
    hub.start()
    assert _in_use(hub) == {"hub": hub.url, "token": hub.admin_token, "ca_cert": "/etc/ssl/own-ca.pem"}


def test_sigterm_stops_an_idle_hub_with_exit_status_0(make_hub) -> None:
    hub: Hub = make_hub()
    status = hub.terminate()
    assert status == 0, f"the hub exited {status} after SIGTERM:\n{hub.describe()}"


def test_token_create_json_has_the_token_and_list_never_shows_it(hub: Hub, cli: CLI) -> None:
    admin = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": hub.admin_token}
    agent = unique("tokened")
    issued = cli.run_json("token", "create", "--agent", agent, "--label", "for a test", env=admin)
    assert issued["token"].startswith("cb_")
    assert (issued["kind"], issued["agent"], issued["label"]) == ("agent", agent, "for a test")
    with hub.http(issued["token"]) as http:
        assert http.get("/v1/whoami").json()["agent"] == agent

    listing = cli.run("token", "list", "--json", env=admin)
    assert listing.returncode == 0, listing.stderr
    assert issued["token"] not in listing.stdout
    assert issued["id"] in listing.stdout


def test_a_token_revoked_by_cli_is_refused(hub: Hub, cli: CLI) -> None:
    issued = hub.issue(agent=unique("doomed"))
    with hub.http(issued["token"]) as http:  # in use (the hub remembers checked tokens) …
        assert http.get("/v1/whoami").status_code == 200
    admin = {"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": hub.admin_token}
    revoked = cli.run_json("token", "revoke", issued["id"], env=admin)
    assert revoked["id"] == issued["id"] and revoked["revoked_at"] is not None

    refused = cli.run("whoami", "--json", env={"CALLBOARD_HUB": hub.url, "CALLBOARD_TOKEN": issued["token"]})
    expect_error(refused, "unauthorized", as_json=True)


def test_login_writes_the_hub_and_token_to_a_0600_config(tenant: Tenant, cli: CLI) -> None:
    result = cli.run_json("login", tenant.hub.url + "/", "--token", tenant.token)
    assert result["hub"] == tenant.hub.url
    assert _in_use(cli) == {"hub": tenant.hub.url, "token": tenant.token}
    assert _mode(cli) == 0o600

    me = cli.run_json("whoami", agent="someone")  # every command now goes to the hub
    assert (me["store"], me["workspace"]) == (tenant.hub.url, tenant.workspace)


def test_login_with_a_token_the_hub_refuses_saves_nothing(hub: Hub, cli: CLI) -> None:
    refused = cli.run("login", hub.url, "--token", "cb_never-issued", "--json")
    expect_error(refused, "unauthorized", as_json=True)
    assert not cli.config_path.exists()


def test_logout_removes_the_hub_from_the_config(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)
    cli.run_json("logout")
    config = _config(cli)
    assert "hub" not in config and "token" not in config
    assert tenant.token not in cli.config_path.read_text()  # forgotten, not kept
    me = cli.run_json("whoami", agent="someone")  # back on this machine's embedded store
    assert me["store"] != tenant.hub.url
    assert me["store"].endswith("callboard.db")


def test_callboard_hub_and_token_in_the_environment_override_the_config(tenant: Tenant, cli: CLI) -> None:
    from callboard.config import save_login

    save_login(cli.callboard_home, DEAD_HUB, "cb_stale")  # a login that cannot work
    env = {"CALLBOARD_HUB": tenant.hub.url, "CALLBOARD_TOKEN": tenant.token}
    me = cli.run_json("whoami", agent="someone", env=env)
    assert (me["store"], me["workspace"]) == (tenant.hub.url, tenant.workspace)

    save_login(cli.callboard_home, tenant.hub.url, tenant.token)  # a login that works …
    refused = cli.run("whoami", "--json", agent="someone", env={"CALLBOARD_TOKEN": "cb_never-issued"})
    expect_error(refused, "unauthorized", as_json=True)  # … but the environment's token wins


def test_an_agent_token_acts_only_as_its_agent_by_cli(tenant: Tenant, cli: CLI) -> None:
    assert cli.outside_any_project(), "the test needs a working folder the identity rule names no agent in"
    eve, frank, gina = unique("eve"), unique("frank"), unique("gina")
    secret = unique("for-frank-only")
    with tenant.http("mailer") as http:
        assert http.post("/v1/messages", json={"to": frank, "text": secret}).status_code == 201
    with tenant.http(gina) as http:  # an agent token sends only to agents that exist
        assert http.post("/v1/agents", json={"name": gina}).status_code == 201
    cli.run_json("login", tenant.hub.url, "--token", tenant.agent_token(eve)["token"])

    refused = cli.run("read", "--json", agent=frank)  # eve's token, naming frank
    expect_error(refused, "forbidden", as_json=True)
    assert secret not in refused.stdout + refused.stderr

    me = cli.run_json("whoami")  # no name given: the token's own agent
    assert (me["agent"], me["workspace"]) == (eve, tenant.workspace)
    sent = cli.run_json("send", gina, "signed by the token")
    with tenant.http(gina) as http:
        items = http.post("/v1/read").json()["items"]
    assert [(i["message"]["id"], i["message"]["sender"]) for i in items] == [(sent["message_id"], eve)]
    with tenant.http(frank) as http:  # frank's mail is still unread: nobody else drained it
        assert [i["message"]["parts"][0]["text"] for i in http.post("/v1/read").json()["items"]] == [secret]


def test_up_on_a_taken_port_says_so_and_writes_nothing(tmp_path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        home = tmp_path / "sb"
        proc = subprocess.run(
            [sys.executable, "-m", "callboard", "up", "--port", str(taken.getsockname()[1])],
            env=isolated_env(tmp_path / "home", home),
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    finally:
        taken.close()
    assert proc.returncode == 2, proc.stderr
    assert "error: hub_unavailable: cannot listen on" in proc.stderr and "Traceback" not in proc.stderr
    assert not home.exists() or not any(home.iterdir())  # no store, no admin token, no login


# --- login takes the token from standard input, the environment or a hidden prompt -----------------


@pytest.mark.parametrize(
    ("args", "stdin", "env"),
    [
        (["--token", "-"], "{token}\n", {}),  # piped in: never on the command line (shell history, ps)
        ([], "{token}\n", {}),  # no --token and a pipe: the same
        ([], None, {"CALLBOARD_TOKEN": "{token}"}),
    ],
    ids=["token-dash", "piped", "environment"],
)
def test_login_takes_the_token_from_standard_input_or_the_environment(
    tenant: Tenant, cli: CLI, args: list[str], stdin: str | None, env: dict[str, str]
) -> None:
    given = {name: value.format(token=tenant.token) for name, value in env.items()}
    proc = cli.run(
        "login", tenant.hub.url, *args, "--json", input=stdin and stdin.format(token=tenant.token), env=given
    )
    assert proc.returncode == 0, proc.stderr
    assert _in_use(cli) == {"hub": tenant.hub.url, "token": tenant.token}
    assert cli.run_json("whoami", agent="someone")["workspace"] == tenant.workspace


def test_login_without_a_token_anywhere_says_how_to_give_one_and_saves_nothing(hub: Hub, cli: CLI) -> None:
    refused = cli.run("login", hub.url, "--json")  # standard input is empty, not a terminal
    error = expect_error(refused, "bad_request", as_json=True)
    assert "--token -" in error["message"] and "CALLBOARD_TOKEN" in error["message"]
    assert not cli.config_path.exists()


def test_login_in_a_terminal_asks_for_the_token_without_showing_it(tenant: Tenant, cli: CLI) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        cli.argv("login", tenant.hub.url),
        env=cli.env(),
        cwd=cli.workdir,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,  # no controlling terminal but this one: the prompt comes here
    )
    os.close(follower)
    try:
        seen = _read_until(leader, b"token")
        os.write(leader, tenant.token.encode() + b"\n")
        seen += _read_until(leader, b"logged in")
        assert proc.wait(30) == 0, seen
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    assert tenant.token.encode() not in seen, seen  # not echoed
    assert _config(cli)["token"] == tenant.token


def _read_until(fd: int, marker: bytes) -> bytes:
    """What the terminal shows until ``marker`` (or its end)."""
    seen = b""

    def arrived() -> bool:
        nonlocal seen
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the other end closed
                return True
            seen += chunk
            return marker in seen.lower() or not chunk
        return False

    wait_until(arrived, 30, f"the terminal to show {marker!r}")
    return seen


def test_token_create_for_another_workspace_on_the_hub_machine_uses_the_kept_admin_token_and_says_so(
    hub: Hub,
) -> None:
    on_hub = CLI.on_hub_machine(hub)
    other = unique("elsewhere")
    made = on_hub.run("token", "create", "--workspace", other, "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    issued = json.loads(made.stdout)
    assert (issued["kind"], issued["workspace"]) == ("user", other)
    assert "admin token this machine keeps" in made.stderr, made.stderr
    with hub.http(issued["token"], "someone") as http:
        assert http.get("/v1/whoami").json()["workspace"] == other  # a token of that workspace …
    with hub.http(issued["token"], "someone", workspace="default") as http:
        assert http.get("/v1/whoami").status_code == 403  # … and of that one only
    own = on_hub.run("token", "create", "--workspace", "default", "--json")  # the login's own: no admin token
    assert own.returncode == 0 and json.loads(own.stdout)["workspace"] == "default", own.stdout + own.stderr
    assert "admin" not in own.stderr, own.stderr


def test_a_user_token_alone_still_cannot_create_tokens_for_another_workspace(tenant: Tenant, cli: CLI) -> None:
    cli.run_json("login", tenant.hub.url, "--token", tenant.token)  # a machine that keeps no admin token
    refused = cli.run("token", "create", "--workspace", unique("ws"), "--json")
    error = expect_error(refused, "forbidden", as_json=True)
    assert "--as-admin" in error["message"]
    with tenant.hub.http(tenant.token) as http:  # over the wire, whatever the client
        answer = http.post("/v1/tokens", json={"workspace": unique("ws")})
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden"
