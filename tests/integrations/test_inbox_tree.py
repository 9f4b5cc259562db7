"""import-inbox on the embedded store: a folder-per-agent tree becomes mail, each message once.

A realistic tree (tree() below) is imported through LocalClients on a real SQLite file, and
through the command line run in this process (``main``, with the command module imported so
that it is registered); the mailboxes are then read back as their recipients see them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import callboard.cli.import_inbox  # noqa: F401  (registers the command on the app)
from callboard.cli.main import main
from callboard.client.local import LocalClient
from callboard.config import Settings
from callboard.integrations.inbox_tree import InboxFile, import_plan, parse_message, plan, scan
from callboard.model import Caller, MailItem
from callboard.requests import InboxQuery
from callboard.service.door import Service
from callboard.store.sqlite.store import SQLiteStore
from tests.support.files import write

WS = "acme"

# file -> content: every valid message of tree(), by the path it is written to.
VALID: dict[str, dict[str, Any]] = {
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
        "timestamp": "2024-05-01T09:05:00+00:00",
        "subject": "re: deploy",
        "body": "Deployed.\nAll green.",
    },
    "bob/0003.json": {  # no 'to': the folder names the recipient; Unix seconds; no subject
        "id": "m-3",
        "from": "carol",
        "timestamp": 1714554600,  # 2024-05-01T09:10:00Z
        "subject": None,
        "body": "lunch?",
    },
    "carol/.read/0004.json": {
        "id": "m-4",
        "from": "Alice",  # names are case-insensitive
        "to": "carol",
        "timestamp": "2024-05-01T09:15:00Z",
        "subject": "docs",
        "body": "Docs are up.",
    },
    # one message to two agents: a copy in each folder, with the same id
    "bob/0005.json": {
        "id": "all-1",
        "from": "dave",
        "to": "bob",
        "timestamp": "2024-05-01T09:20:00Z",
        "subject": "standup",
        "body": "Standup moved to 10.",
    },
    "carol/0005.json": {
        "id": "all-1",
        "from": "dave",
        "to": "carol",
        "timestamp": "2024-05-01T09:20:00Z",
        "subject": "standup",
        "body": "Standup moved to 10.",
    },
}

# file -> the words its skip reason must contain
BAD: dict[str, str] = {
    "bob/broken.json": "not JSON",
    "bob/list.json": "not a JSON object",
    "alice/bad-sender.json": "sender ('from') 'Eve Smith!' is not valid",
    "alice/no-body.json": "missing field 'body'",
    "carol/wrong-type.json": "'id' must be a string, not a number",
    "carol/elsewhere.json": "'to' is 'alice' but the file is in agent carol's folder",
    "Not An Agent/0001.json": "agent folder name 'Not An Agent' is not valid",
}


def tree(root: Path) -> Path:
    """Four agents' folders, two .read/ folders, the bad files of BAD, and files to ignore."""
    for file, content in VALID.items():
        write(root, file, content)
    write(root, "bob/broken.json", '{"id": "x", "from": "alice",')
    write(root, "bob/list.json", "[1, 2]")
    write(root, "alice/bad-sender.json", {**VALID["alice/0002.json"], "id": "b-1", "from": "Eve Smith!"})
    write(
        root, "alice/no-body.json", {k: v for k, v in VALID["alice/0002.json"].items() if k != "body"} | {"id": "b-2"}
    )
    write(root, "carol/wrong-type.json", {**VALID["carol/0005.json"], "id": 17})
    write(root, "carol/elsewhere.json", {**VALID["carol/0005.json"], "id": "b-3", "to": "alice"})
    write(root, "Not An Agent/0001.json", {**VALID["bob/0003.json"], "id": "b-4"})
    write(root, "bob/notes.txt", "not a message")  # not *.json: ignored
    write(root, "bob/.hidden.json", "{}")  # hidden: ignored
    write(root, ".git/config.json", "{}")  # hidden folder: not an agent
    return root


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tree(tmp_path / "inboxes")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    service = Service(SQLiteStore(tmp_path / "callboard.db"), machine="testhost")
    try:
        yield service
    finally:
        service.store.close()


@pytest.fixture
def as_agent(service: Service) -> Callable[[str], LocalClient]:
    return LocalClient(service, Caller(workspace=WS, agent="importer")).as_agent


def mailbox(client: LocalClient) -> list[MailItem]:
    return client.inbox(InboxQuery(include_acked=True, limit=1000))


def imported_of(item: MailItem) -> dict[str, Any]:
    data = [p.data for p in item.message.parts if p.data is not None]
    assert len(data) == 1, item.message.parts
    return data[0]["imported"]


def by_original_id(client: LocalClient) -> dict[str, MailItem]:
    items = mailbox(client)
    found = {imported_of(item)["id"]: item for item in items}
    assert len(found) == len(items), "a message was stored twice"
    return found


# --- the import, through LocalClients ----------------------------------------------------------


def test_each_file_becomes_a_message_from_its_sender_to_its_folders_agent(
    root: Path, as_agent: Callable[[str], LocalClient]
) -> None:
    report = import_plan(scan(root), as_agent)

    assert sorted(i.message.file for i in report.imported) == sorted(VALID)
    assert report.already_imported == []
    expected: dict[str, dict[str, dict[str, Any]]] = {}
    for file, content in VALID.items():
        expected.setdefault(file.split("/")[0], {})[content["id"]] = {"file": file, **content}
    for agent, messages in expected.items():
        mail = by_original_id(as_agent(agent))
        assert set(mail) == set(messages), agent
        for original_id, content in messages.items():
            message = mail[original_id].message
            assert message.sender == content["from"].lower()
            assert message.recipients == [agent]
            assert message.subject == content["subject"]
            assert message.text == content["body"]
            assert imported_of(mail[original_id]) == {
                "id": original_id,
                "timestamp": content["timestamp"],
                "file": Path(content["file"]).name,
            }
    assert mailbox(as_agent("dave")) == []  # a sender gets nothing


def test_read_files_are_read_and_the_others_are_not(root: Path, as_agent: Callable[[str], LocalClient]) -> None:
    report = import_plan(scan(root), as_agent)

    assert sorted(i.message.file for i in report.marked_read) == ["bob/.read/0001.json", "carol/.read/0004.json"]
    for file, content in VALID.items():
        agent = file.split("/")[0]
        item = by_original_id(as_agent(agent))[content["id"]]
        status = as_agent(agent).message_status(item.message.id)
        assert [r.state for r in status.recipients] == ["read" if "/.read/" in file else "queued"], file
    assert as_agent("bob").unread_count() == 2
    assert as_agent("carol").unread_count() == 1
    assert as_agent("alice").unread_count() == 1


def test_bad_files_are_skipped_with_a_reason_and_store_nothing(
    root: Path, as_agent: Callable[[str], LocalClient]
) -> None:
    report = import_plan(scan(root), as_agent)

    reasons = {s.file: s.reason for s in report.skipped}
    assert set(reasons) == set(BAD)
    for file, words in BAD.items():
        assert words in reasons[file], (file, reasons[file])
    stored = {imported_of(item)["id"] for agent in ("alice", "bob", "carol") for item in mailbox(as_agent(agent))}
    assert stored == {c["id"] for c in VALID.values()}


def test_importing_again_stores_nothing_new(root: Path, as_agent: Callable[[str], LocalClient]) -> None:
    first = import_plan(scan(root), as_agent)
    before = {agent: mailbox(as_agent(agent)) for agent in ("alice", "bob", "carol")}

    second = import_plan(scan(root), as_agent)

    assert second.imported == []
    assert sorted((i.message.file, i.message_id) for i in second.already_imported) == sorted(
        (i.message.file, i.message_id) for i in first.imported
    )
    assert {agent: mailbox(as_agent(agent)) for agent in before} == before


def test_new_files_and_files_read_since_are_picked_up(root: Path, as_agent: Callable[[str], LocalClient]) -> None:
    import_plan(scan(root), as_agent)
    # bob reads carol's message the folder way, and a new one arrives for alice
    (root / "bob/0003.json").rename(root / "bob/.read/0003.json")
    write(root, "alice/0006.json", {**VALID["alice/0002.json"], "id": "m-6", "body": "And the docs?"})

    report = import_plan(scan(root), as_agent)

    assert [i.message.file for i in report.imported] == ["alice/0006.json"]
    assert "bob/.read/0003.json" in {i.message.file for i in report.already_imported}
    assert "bob/.read/0003.json" in {i.message.file for i in report.marked_read}
    lunch = by_original_id(as_agent("bob"))["m-3"]
    assert lunch.state == "read"
    assert len(by_original_id(as_agent("alice"))) == 2


def test_a_file_changed_after_its_import_is_skipped_not_stored_again(
    root: Path, as_agent: Callable[[str], LocalClient]
) -> None:
    import_plan(scan(root), as_agent)
    write(root, "alice/0002.json", {**VALID["alice/0002.json"], "body": "Deployed, mostly."})

    report = import_plan(scan(root), as_agent)

    assert {s.file: s.reason for s in report.skipped}["alice/0002.json"].startswith(
        "id 'm-2' from bob was imported before with other content"
    )
    assert by_original_id(as_agent("alice"))["m-2"].message.text == "Deployed.\nAll green."


def test_mail_is_imported_in_timestamp_order_then_file_name(tmp_path: Path, service: Service) -> None:
    root = tmp_path / "inboxes"
    for file, timestamp in [
        ("bob/c.json", "2024-05-01T10:00:00+02:00"),  # 08:00Z: first
        ("bob/b.json", 1714557600),  # 10:00Z, as Unix seconds
        ("bob/a.json", "2024-05-01T10:00:00"),  # 10:00, no offset: UTC; same moment, earlier name
        ("bob/.read/d.json", "2024-05-01T09:00:00Z"),
    ]:
        write(root, file, {"id": file, "from": "alice", "timestamp": timestamp, "subject": file, "body": "x"})

    planned = scan(root)
    import_plan(planned, LocalClient(service, Caller(workspace=WS, agent="bob")).as_agent)

    order = ["bob/c.json", "bob/.read/d.json", "bob/a.json", "bob/b.json"]
    assert [m.file for m in planned.messages] == order
    bob = LocalClient(service, Caller(workspace=WS, agent="bob"))
    assert [item.message.subject for item in sorted(mailbox(bob), key=lambda i: i.seq)] == order


def test_the_same_message_twice_in_one_folder_is_imported_once(tmp_path: Path) -> None:
    root = tmp_path / "inboxes"
    write(root, "bob/0001.json", VALID["bob/.read/0001.json"])
    write(root, "bob/.read/0001-copy.json", VALID["bob/.read/0001.json"])

    planned = scan(root)

    assert [m.file for m in planned.messages] == ["bob/.read/0001-copy.json"]
    assert [(s.file, s.reason) for s in planned.skipped] == [
        (
            "bob/0001.json",
            "id 'm-1' from alice to bob is also in bob/.read/0001-copy.json, which is imported instead; "
            "remove one of the copies.",
        )
    ]


def test_an_unreadable_file_is_skipped(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unreadable = root / "bob/0003.json"
    read_bytes = Path.read_bytes

    def refuse(path: Path) -> bytes:
        if path == unreadable:
            raise PermissionError(13, "Permission denied")
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    planned = scan(root)

    assert "bob/0003.json" not in {m.file for m in planned.messages}
    assert {s.file: s.reason for s in planned.skipped}["bob/0003.json"] == "cannot be read (Permission denied)"


GOOD = {"id": "1", "from": "alice", "timestamp": "2024-05-01T09:00:00Z", "subject": "s", "body": "b"}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\xff\xfe{}", "not UTF-8 text (byte 0)"),
        (b"", "not JSON (Expecting value at line 1, column 1)"),
        (b'"just a string"', "not a JSON object (a string)"),
        ({"body": "b"}, "missing fields 'id', 'from', 'timestamp', 'subject'"),
        ({**GOOD, "id": ""}, "'id' is empty"),
        ({**GOOD, "from": ["alice"]}, "'from' must be a string, not a list"),
        ({**GOOD, "body": None}, "'body' must be a string, not a null"),
        ({**GOOD, "subject": 3}, "'subject' must be a string or null, not a number"),
        ({**GOOD, "to": 5}, "'to' must be a string, not a number"),
        ({**GOOD, "to": "#ops"}, "'to' is channel '#ops', but the file is in agent bob's folder"),
        ({**GOOD, "to": "bob smith"}, "recipient ('to') 'bob smith' is not valid"),
        ({**GOOD, "from": "-alice"}, "sender ('from') '-alice' is not valid"),
        ({**GOOD, "timestamp": "yesterday"}, "'timestamp' 'yesterday' is not an ISO 8601 date-time or Unix seconds"),
        ({**GOOD, "timestamp": True}, "'timestamp' must be an ISO 8601 string or Unix seconds, not a boolean"),
        ({**GOOD, "subject": "s" * 300}, "the subject has 300 characters; the limit is 256"),
        (b'{"id":"1","from":"alice","timestamp":0,"subject":null,"body":"\\ud800"}', "not valid UTF-8"),
    ],
)
def test_a_bad_file_says_why(content: Any, reason: str) -> None:
    raw = content if isinstance(content, bytes) else json.dumps(content).encode()
    planned = plan([InboxFile("bob/x.json", "bob", False, raw)])

    assert planned.messages == []
    assert len(planned.skipped) == 1
    assert reason in planned.skipped[0].reason


def test_a_message_parses_with_its_folder_as_recipient() -> None:
    message = parse_message(InboxFile("Bob/.read/x.json", "Bob", True, json.dumps(GOOD).encode()))

    assert (message.sender, message.recipient, message.read) == ("alice", "bob", True)
    assert message.idempotency_key == "import:bob:1"
    assert message.parts == [{"data": {"imported": {"id": "1", "timestamp": GOOD["timestamp"], "file": "x.json"}}}]


def test_a_long_id_still_makes_a_valid_key() -> None:
    message = parse_message(InboxFile("bob/x.json", "bob", False, json.dumps({**GOOD, "id": "x" * 500}).encode()))

    assert message.idempotency_key.startswith("import:bob:sha256:")
    assert len(message.idempotency_key) <= 200


# --- the command line, run in this process ------------------------------------------------------


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Callable[..., Any]:
    for name in list(os.environ):
        if name.startswith("CALLBOARD_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CALLBOARD_HOME", str(tmp_path / "callboard-home"))
    monkeypatch.setenv("CALLBOARD_WORKSPACE", WS)
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: object) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as done:
            code = int(done.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def open_as(db: Path, agent: str) -> LocalClient:
    return LocalClient.open(Settings.load(db=db), agent=agent)


def test_cli_imports_says_what_it_skipped_and_exits_2(root: Path, tmp_path: Path, run: Callable[..., Any]) -> None:
    db = tmp_path / "cli.db"
    before = snapshot(root)

    code, out, _ = run("import-inbox", root, "--db", db, "--json")

    assert code == 2
    report = json.loads(out)
    assert set(report) == {"dry_run", "imported", "already_imported", "marked_read", "skipped"}
    assert sorted(i["file"] for i in report["imported"]) == sorted(VALID)
    assert {s["file"] for s in report["skipped"]} == set(BAD)
    assert sorted(m["file"] for m in report["marked_read"]) == ["bob/.read/0001.json", "carol/.read/0004.json"]
    bob = open_as(db, "bob")
    try:
        assert {imported_of(i)["id"]: i.state for i in mailbox(bob)} == {
            "m-1": "read",
            "m-3": "queued",
            "all-1": "queued",
        }
    finally:
        bob.close()
    assert snapshot(root) == before  # files are never moved or changed

    code, out, err = run("import-inbox", root, "--db", db)  # for people, the second time

    assert code == 2
    assert "imported 0, already imported 6, marked read 2, skipped 7" in out
    assert "skipped bob/broken.json: not JSON" in err


def test_cli_exits_0_when_every_file_was_imported(tmp_path: Path, run: Callable[..., Any]) -> None:
    root = tmp_path / "clean"
    for file in ("bob/.read/0001.json", "alice/0002.json"):
        write(root, file, VALID[file])

    code, out, err = run("import-inbox", root, "--db", tmp_path / "cli.db", "--json")

    assert (code, err) == (0, "")
    assert [i["id"] for i in json.loads(out)["imported"]] == ["m-1", "m-2"]


def test_cli_dry_run_writes_nothing(root: Path, tmp_path: Path, run: Callable[..., Any]) -> None:
    db = tmp_path / "cli.db"

    code, out, _ = run("import-inbox", root, "--db", db, "--dry-run", "--json")

    assert code == 2
    report = json.loads(out)
    assert report["dry_run"] is True
    assert sorted(m["file"] for m in report["would_import"]) == sorted(VALID)
    assert {s["file"] for s in report["skipped"]} == set(BAD)
    assert not db.exists()

    code, out, _ = run("import-inbox", root, "--db", db, "--dry-run")

    assert "dry run: would import 6 messages; nothing was written; 7 files skipped" in out
    assert not db.exists()


def test_cli_refuses_a_path_that_is_not_a_folder(tmp_path: Path, run: Callable[..., Any]) -> None:
    code, out, err = run("import-inbox", tmp_path / "missing", "--db", tmp_path / "cli.db")

    assert code == 2
    assert err.startswith("error: bad_request: ") and "is not a folder" in err


def test_a_file_far_too_large_for_a_message_is_skipped_unread(tmp_path: Path) -> None:
    root = tmp_path / "inboxes"
    write(root, "bob/huge.json", {**GOOD, "body": "x" * (8 * 256 * 1024)})

    planned = scan(root)

    assert planned.messages == []
    assert [s.reason.split(" bytes")[1] for s in planned.skipped] == [", too large for one message"]
