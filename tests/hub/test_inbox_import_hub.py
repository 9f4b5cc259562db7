"""import-inbox through a running hub: each file sent as its sender (one HubClient per agent,
with the workspace's user token), .read/ ones marked read, and nothing stored twice — by the
library and by the command line (run in this process, configured for the hub)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import callboard.cli.import_inbox  # noqa: F401  (registers the command on the app)
from callboard.cli.main import main
from callboard.client.hub import HubClient
from callboard.integrations.inbox_tree import import_plan, scan
from callboard.requests import InboxQuery
from tests.hub.conftest import Tenant
from tests.support.files import write

FILES: dict[str, dict[str, Any]] = {
    "bob/.read/0001.json": {
        "id": "m-1",
        "from": "alice",
        "to": "bob",
        "timestamp": "2024-05-01T09:00:00Z",
        "subject": "deploy",
        "body": "Can you deploy the API?",
    },
    "alice/0002.json": {
        "id": "m-2",
        "from": "bob",
        "to": "alice",
        "timestamp": "2024-05-01T09:05:00Z",
        "subject": "re: deploy",
        "body": "Deployed.",
    },
    "bob/0003.json": {"id": "m-3", "from": "carol", "timestamp": 1714554600, "subject": None, "body": "lunch?"},
}


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    for file, content in files.items():
        write(root, file, content)
    return root


@pytest.fixture
def clients(tenant: Tenant) -> Iterator[Callable[[str], HubClient]]:
    opened: dict[str, HubClient] = {}

    def client(agent: str) -> HubClient:
        if agent not in opened:
            opened[agent] = tenant.client(agent)
        return opened[agent]

    try:
        yield client
    finally:
        for one in opened.values():
            one.close()


def mail(client: HubClient) -> dict[str, tuple[str, str | None, str, str, dict[str, Any]]]:
    """original id -> (sender, subject, text, state, the imported data) in this mailbox."""
    found = {}
    for item in client.inbox(InboxQuery(include_acked=True, limit=1000)):
        (data,) = [p.data for p in item.message.parts if p.data is not None]
        original = data["imported"]
        assert original["id"] not in found, "a message was stored twice"
        found[original["id"]] = (item.message.sender, item.message.subject, item.message.text, item.state, original)
    return found


def test_import_through_the_hub_stores_each_message_once(tmp_path: Path, clients: Callable[[str], HubClient]) -> None:
    root = write_tree(tmp_path / "inboxes", {**FILES, "alice/broken.json": "{nope"})

    first = import_plan(scan(root), clients)

    assert sorted(i.message.file for i in first.imported) == sorted(FILES)
    assert [(s.file, s.reason.split(" (")[0]) for s in first.skipped] == [("alice/broken.json", "not JSON")]
    assert [i.message.file for i in first.marked_read] == ["bob/.read/0001.json"]
    assert mail(clients("bob")) == {
        "m-1": (
            "alice",
            "deploy",
            "Can you deploy the API?",
            "read",
            {"id": "m-1", "timestamp": "2024-05-01T09:00:00Z", "file": "0001.json"},
        ),
        "m-3": ("carol", None, "lunch?", "queued", {"id": "m-3", "timestamp": 1714554600, "file": "0003.json"}),
    }
    assert mail(clients("alice")) == {
        "m-2": (
            "bob",
            "re: deploy",
            "Deployed.",
            "queued",
            {"id": "m-2", "timestamp": "2024-05-01T09:05:00Z", "file": "0002.json"},
        )
    }
    bob_status = clients("alice").message_status(mail_id(clients("bob"), "m-1"))
    assert [(r.agent, r.state) for r in bob_status.recipients] == [("bob", "read")]

    second = import_plan(scan(root), clients)

    assert second.imported == []
    assert sorted(i.message_id for i in second.already_imported) == sorted(i.message_id for i in first.imported)
    assert len(mail(clients("bob"))) == 2 and len(mail(clients("alice"))) == 1


def mail_id(client: HubClient, original_id: str) -> str:
    for item in client.inbox(InboxQuery(include_acked=True, limit=1000)):
        if any(p.data and p.data["imported"]["id"] == original_id for p in item.message.parts):
            return item.message.id
    raise AssertionError(f"no message imported from {original_id}")


def test_cli_import_against_the_hub(
    tenant: Tenant,
    tmp_path: Path,
    clients: Callable[[str], HubClient],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in list(os.environ):
        if name.startswith("CALLBOARD_"):
            monkeypatch.delenv(name)
    home = tmp_path / "callboard-home"
    monkeypatch.setenv("CALLBOARD_HOME", str(home))
    monkeypatch.setenv("CALLBOARD_HUB", tenant.hub.url)
    monkeypatch.setenv("CALLBOARD_TOKEN", tenant.token)
    root = write_tree(tmp_path / "inboxes", FILES)

    def run(*args: object) -> tuple[int, dict[str, Any]]:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as done:
            code = int(done.code or 0)
        return code, json.loads(capsys.readouterr().out)

    code, report = run("import-inbox", root, "--json")

    assert code == 0, report
    assert sorted(i["file"] for i in report["imported"]) == sorted(FILES)
    assert [m["file"] for m in report["marked_read"]] == ["bob/.read/0001.json"]
    assert {k: v[0] for k, v in mail(clients("bob")).items()} == {"m-1": "alice", "m-3": "carol"}
    assert mail(clients("bob"))["m-1"][3] == "read"
    assert not (home / "callboard.db").exists()  # it all went to the hub

    # bob reads carol's message the folder way; a new file arrives for alice
    (root / "bob/0003.json").rename(root / "bob/.read/0003.json")
    write_tree(root, {"alice/0004.json": {**FILES["alice/0002.json"], "id": "m-4", "body": "Docs too."}})

    code, report = run("import-inbox", root, "--json")

    assert code == 0, report
    assert [i["file"] for i in report["imported"]] == ["alice/0004.json"]
    assert len(report["already_imported"]) == 3
    assert mail(clients("bob"))["m-3"][3] == "read"
    assert set(mail(clients("alice"))) == {"m-2", "m-4"}
