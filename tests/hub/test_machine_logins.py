"""Nothing a user has is lost to ``up``: a login to another hub is kept and comes back, the
commands ``up`` logged in use its store directly again once it stops (however it stops), a
second hub on the same SQLite file refuses, each store keeps its own admin token, and a token
made with ``token create > FILE`` logs another machine in with ``login --token - < FILE``."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from callboard.config import save_login
from tests.hub.conftest import ADMIN_TOKEN, CLI, Hub, Tenant, expect_error, unique
from tests.support.waiting import wait_until


def _config(home: Path) -> dict:
    with (home / "config.toml").open("rb") as file:
        return tomllib.load(file)


def _stopped(hub: Hub, how: str) -> None:
    """Stop ``hub`` gracefully (SIGTERM) or not at all (SIGKILL)."""
    if how == "terminate":
        assert hub.terminate() == 0, hub.describe()
    else:
        hub.kill()


def _said(hub: Hub, words: str) -> str:
    found: list[str] = []

    def seen() -> bool:
        found[:] = [line for line in hub.output if words in line]
        return bool(found)

    wait_until(seen, 15, f"the hub to say {words!r}")
    return found[0]


@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_up_on_a_machine_logged_in_to_another_hub_keeps_that_login_and_gives_it_back(
    tenant: Tenant, tmp_path: Path, how: str
) -> None:
    local = Hub(tmp_path / "local")
    local.callboard_home.mkdir()
    save_login(local.callboard_home, tenant.hub.url, tenant.token)  # this machine uses the team's hub
    try:
        local.start()
        line = _said(local, "is kept")
        assert tenant.hub.url in line and f"callboard login {tenant.hub.url}" in line, line
        machine = CLI.on_hub_machine(local)
        assert machine.run_json("whoami", agent="me")["store"] == local.url  # the commands use this hub now
        kept = _config(local.callboard_home)["logins"][tenant.hub.url]
        assert kept["token"] == tenant.token

        _stopped(local, how)
        me = machine.run_json("whoami", agent="me")  # the team's hub again, with its token
        assert (me["store"], me["workspace"]) == (tenant.hub.url, tenant.workspace), me
        if how == "terminate":
            _said(local, f"use {tenant.hub.url} again")
    finally:
        local.close()


@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_once_up_stops_the_commands_it_logged_in_use_its_store_directly(make_hub, how: str) -> None:
    hub: Hub = make_hub()
    machine = CLI.on_hub_machine(hub)
    words = unique("through the hub")
    machine.run_json("send", "bob", words, agent="alice")
    login = _config(hub.callboard_home)["token"]

    _stopped(hub, how)
    me = machine.run_json("whoami", agent="bob")
    assert Path(me["store"]) == hub.db_path, me  # not hub_unavailable: the store the hub served
    read = machine.run_json("read", agent="bob")
    assert [i["message"]["parts"][0]["text"] for i in read["items"]] == [words]
    shown = machine.run("whoami", agent="bob")
    assert f"the hub at {hub.url}" in shown.stdout and "has stopped" in shown.stdout, shown.stdout

    hub.args += ["--port", hub.url.rsplit(":", 1)[1]]
    hub.start()  # started again: the commands use it again, with the same token
    assert machine.run_json("whoami", agent="bob")["store"] == hub.url
    assert _config(hub.callboard_home)["token"] == login
    assert not [line for line in hub.output if ADMIN_TOKEN.search(line)], hub.output


def test_a_second_up_on_the_same_store_refuses_and_names_the_first(make_hub) -> None:
    hub: Hub = make_hub()
    before = (hub.callboard_home / "config.toml").read_bytes()
    second = subprocess.run(
        [sys.executable, "-m", "callboard", "up", "--port", "0"],
        env=hub.env(),
        cwd=hub.root,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    expect_error(second, "store_in_use", as_json=False)
    assert hub.url in second.stderr and str(hub.db_path) in second.stderr, second.stderr
    assert (hub.callboard_home / "config.toml").read_bytes() == before  # the login stays the first hub's
    assert CLI.on_hub_machine(hub).run_json("whoami", agent="me")["store"] == hub.url


def test_each_store_keeps_its_own_admin_token(make_hub, tmp_path: Path) -> None:
    first: Hub = make_hub()
    first_admin = first.admin_token
    first.terminate()
    second = Hub(first.root, args=["--db", str(tmp_path / "second.db")], prints_admin=True)
    try:
        second.start()
        assert second.admin_token and second.admin_token != first_admin
        stores = _config(first.callboard_home)["stores"]
        assert stores[str(first.db_path.resolve())]["admin_token"] == first_admin
        assert stores[str((tmp_path / "second.db").resolve())]["admin_token"] == second.admin_token
        machine = CLI.on_hub_machine(second)
        assert machine.run_json("token", "list", "--as-admin")  # the admin token of the hub in use
    finally:
        second.close()


def test_a_token_made_into_a_file_logs_another_machine_in(hub: Hub, tenant: Tenant, make_cli) -> None:
    issuer, other = make_cli("issuer"), make_cli("other")
    issuer.run_json("login", hub.url, "--token", tenant.token)
    made = issuer.run("token", "create")  # as 'callboard token create > token.txt' writes it
    assert made.returncode == 0, made.stderr
    assert made.stdout.count("\n") == 1 and made.stdout.startswith("cb_"), made.stdout  # the token alone
    assert "shown once" in made.stderr and "callboard login" in made.stderr, made.stderr
    logged_in = other.run("login", hub.url, "--token", "-", input=made.stdout)
    assert logged_in.returncode == 0, logged_in.stderr
    assert other.run_json("whoami", agent="someone")["workspace"] == tenant.workspace


def test_login_again_to_a_hub_this_machine_logged_in_to_uses_the_kept_token(hub: Hub, tenant: Tenant, cli: CLI) -> None:
    other = unique("ws")
    second = hub.issue(kind="user", workspace=other)
    cli.run_json("login", hub.url, "--token", tenant.token)
    switched = cli.run("login", hub.url + ",http://127.0.0.1:9", "--token", second["token"])
    assert switched.returncode == 0 and "is kept" in switched.stdout, switched.stdout + switched.stderr
    back = cli.run("login", hub.url, "--json")  # no token given, none piped: the kept one
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["kept_token"] is True
    assert cli.run_json("whoami", agent="someone")["workspace"] == tenant.workspace
