"""Where the mail lives: CALLBOARD_HOME by default; --db or CALLBOARD_DB put it elsewhere."""

from __future__ import annotations


def test_the_default_database_is_in_callboard_home(cli, run_json):
    run_json("send", "bob", "at home", agent="alice")

    assert cli.default_db.is_file()
    assert run_json("whoami", agent="alice")["store"] == str(cli.default_db)


def test_db_option_keeps_mail_in_that_file_only(cli, run_json):
    elsewhere = cli.root / "elsewhere" / "mail.db"  # its folder does not exist yet
    sent = run_json("send", "bob", "in another db", "--db", elsewhere, agent="alice")

    assert elsewhere.is_file()
    assert run_json("whoami", "--db", elsewhere, agent="bob")["store"] == str(elsewhere)
    assert run_json("read", agent="bob")["items"] == []  # not in the default store
    got = run_json("read", "--db", elsewhere, agent="bob")
    assert [i["message"]["id"] for i in got["items"]] == [sent["message_id"]]


def test_callboard_db_env_keeps_mail_in_that_file_and_db_option_beats_it(cli, run_json):
    from_env = cli.root / "env.db"
    option = cli.root / "option.db"
    sent = run_json("send", "bob", "via the env", agent="alice", env={"CALLBOARD_DB": str(from_env)})

    assert from_env.is_file()
    assert run_json("read", agent="bob")["items"] == []
    got = run_json("read", agent="bob", env={"CALLBOARD_DB": str(from_env)})
    assert [i["message"]["id"] for i in got["items"]] == [sent["message_id"]]

    me = run_json("whoami", "--db", option, agent="bob", env={"CALLBOARD_DB": str(from_env)})
    assert me["store"] == str(option)
