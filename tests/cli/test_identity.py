"""Which agent a command acts as: CALLBOARD_AGENT, then an agent file, then the git root's name."""

from __future__ import annotations

from pathlib import Path

import pytest


def _repo(root: Path, name: str = "My Project") -> tuple[Path, Path]:
    """A git repository folder (a '.git' dir is all it takes) and a folder deep inside it."""
    repo = root.resolve() / name
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    return repo, deep


@pytest.mark.parametrize("filename", [".callboard-agent", ".agent-id"])
def test_an_agent_file_in_the_cwd_names_the_agent(cli, run_json, filename):
    agent_file = cli.workdir / filename
    agent_file.write_text("# which agent works here\n\n  filebot  \n")

    me = run_json("whoami")  # no CALLBOARD_AGENT
    assert me["agent"] == "filebot"
    assert me["source"] == f"file:{agent_file}"


def test_the_git_roots_folder_name_names_the_agent(cli, run_json):
    repo, deep = _repo(cli.root)

    me = run_json("whoami", cwd=deep)
    assert me["agent"] == "my-project"  # 'My Project' made a valid name
    assert me["source"] == f"git:{repo}"


def test_an_agent_file_at_the_git_root_beats_the_folder_name(cli, run_json):
    repo, deep = _repo(cli.root)
    (repo / ".callboard-agent").write_text("reviewer\n")

    me = run_json("whoami", cwd=deep)
    assert me["agent"] == "reviewer"
    assert me["source"] == f"file:{repo / '.callboard-agent'}"


def test_callboard_agent_beats_an_agent_file_and_the_git_root(cli, run_json):
    repo, deep = _repo(cli.root)
    (repo / ".callboard-agent").write_text("reviewer\n")

    me = run_json("whoami", agent="Override", cwd=deep)
    assert me["agent"] == "override"  # names are case-insensitive, kept in lower case
    assert me["source"] == "env:CALLBOARD_AGENT"


def test_the_config_files_agent_is_the_last_resort(cli, run_json):
    if not cli.outside_any_project():
        pytest.skip(f"{cli.workdir} is inside a git repository or below an agent file")
    cli.callboard_home.mkdir(parents=True, exist_ok=True)
    (cli.callboard_home / "config.toml").write_text('agent = "cfgbot"\n')

    me = run_json("whoami")  # cwd is in no git repository and holds no agent file
    assert (me["agent"], me["source"]) == ("cfgbot", "config:agent")


def test_the_named_agent_is_who_sends_and_who_reads(cli, run_json):
    repo, deep = _repo(cli.root, "frontend")
    run_json("send", "backend", "from the repo", cwd=deep)  # acts as 'frontend', by the git root

    got = run_json("read", agent="backend")
    assert [i["message"]["sender"] for i in got["items"]] == ["frontend"]
    reply = run_json("send", "frontend", "hello repo", agent="backend")
    # Reading inside the repo reads frontend's mailbox.
    mine = run_json("read", cwd=repo)
    assert [i["message"]["id"] for i in mine["items"]] == [reply["message_id"]]
