"""team.toml parsing (runner/team.py) and the example team (runner/team_init.py): the example
parses into three roles with folders, prompts and channels; every mistake is a bad_team error
naming the file and what to write; init refuses to overwrite a team.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from callboard.errors import AlreadyExists
from callboard.runner.team import BadTeam, NoTeam, load_team, team_path
from callboard.runner.team_init import PROCEDURES, write_example_team


def test_the_example_team_parses_into_three_roles_with_their_files(tmp_path: Path) -> None:
    written = write_example_team(tmp_path / "t")
    team = load_team(team_path(tmp_path / "t"))
    assert [(r.name, r.agent, r.cli) for r in team.roles] == [
        ("product", "product", "claude"),
        ("engineering", "engineering", "claude"),
        ("qa", "qa", "claude"),
    ]
    assert team.channels == ("team", "handoffs")
    for role in team.roles:
        assert role.folder.is_dir() and role.prompt is not None and role.prompt.is_file()
        assert role.channels == ("team", "handoffs")
        assert "procedures/" in role.prompt.read_text()
    assert {p.name for p in (tmp_path / "t" / "procedures").iterdir()} == set(PROCEDURES)
    assert len(written) == 1 + 3 + len(PROCEDURES)
    assert team.role("QA").name == "qa" and team.roles[1].turn_limit == 1800


def test_init_refuses_to_overwrite_a_team(tmp_path: Path) -> None:
    write_example_team(tmp_path)
    (tmp_path / "team.toml").write_text("# mine\n")
    with pytest.raises(AlreadyExists, match="exists already"):
        write_example_team(tmp_path)
    assert (tmp_path / "team.toml").read_text() == "# mine\n"


def test_no_team_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(NoTeam, match="team init"):
        team_path(tmp_path)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[team\n", "not valid TOML"),
        ("[team]\nname = 'x'\n", "names no role"),
        ("[roles.a]\ncli = 'vim'\n", "is not one of"),
        ("[roles.a]\ncli = 'generic:  '\n", "is not one of"),
        ("[roles.a]\nmood = 'ok'\n", "unknown keys"),
        ("[roles.a]\nevery = -5\n", "every must be a number"),
        ("[roles.a]\nchannels = 'team'\n", "list of channel names"),
        ("[roles.a]\nchannels = ['no spaces']\n", "channel name"),
        ("[roles.a]\nagent = 'x'\n[roles.b]\nagent = 'x'\n", "more than one role"),
        ("[roles.'Bad Name']\n", "not valid"),
        ("[teams]\n", "unknown entries"),
    ],
)
def test_mistakes_are_bad_team_errors_with_a_sentence(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "team.toml").write_text(text)
    with pytest.raises(BadTeam, match=says) as caught:
        load_team(team_path(tmp_path))
    assert caught.value.code == "bad_team"


def test_an_unknown_role_names_the_roles(tmp_path: Path) -> None:
    write_example_team(tmp_path)
    with pytest.raises(BadTeam, match="its roles: product, engineering, qa"):
        load_team(team_path(tmp_path)).role("design")


def test_a_role_naming_no_channels_joins_the_teams(tmp_path: Path) -> None:
    (tmp_path / "team.toml").write_text(
        "[team]\nchannels = ['#all']\n[roles.a]\ncli = 'generic:python a.py'\n[roles.b]\nchannels = []\n"
    )
    team = load_team(team_path(tmp_path))
    assert [(r.name, r.channels, r.cli, r.folder, r.prompt) for r in team.roles] == [
        ("a", ("all",), "generic:python a.py", tmp_path / "a", None),
        ("b", (), "claude", tmp_path / "b", None),
    ]
    assert team.name == tmp_path.name
