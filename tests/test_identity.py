"""Who am I: the identity rule, the machine name, and process start times."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from callboard.config import Settings
from callboard.errors import BadName, NoIdentity
from callboard.identity import machine_name, resolve_agent, slug
from callboard.procs import process_alive, process_start_time


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "Billing Service"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "api").mkdir(parents=True)
    return root


def test_the_environment_wins_over_everything(repo: Path):
    (repo / ".callboard-agent").write_text("from-file\n")
    identity = resolve_agent({"CALLBOARD_AGENT": "Reviewer"}, repo / "src", "fallback")
    assert (identity.name, identity.source) == ("reviewer", "env:CALLBOARD_AGENT")


def test_an_agent_file_in_a_parent_folder_names_the_agent(repo: Path):
    (repo / ".callboard-agent").write_text("# comment\n\n  api-worker \n")
    identity = resolve_agent({}, repo / "src" / "api")
    assert identity.name == "api-worker"
    assert identity.source == f"file:{repo / '.callboard-agent'}"


def test_the_agent_id_file_is_honoured_too(repo: Path):
    (repo / "src" / ".agent-id").write_text("frontend")
    assert resolve_agent({}, repo / "src" / "api").name == "frontend"


def test_an_agent_file_outside_the_git_root_is_not_used(repo: Path):
    (repo.parent / ".callboard-agent").write_text("outsider")
    assert resolve_agent({}, repo / "src").name == "billing-service"


def test_the_git_root_folder_name_is_made_a_valid_name(repo: Path):
    identity = resolve_agent({}, repo / "src" / "api")
    assert (identity.name, identity.source) == ("billing-service", f"git:{repo}")


def test_the_user_default_applies_outside_a_project(tmp_path: Path):
    assert resolve_agent({}, tmp_path, "Me").name == "me"


def test_no_rule_matching_is_a_clear_error(tmp_path: Path):
    with pytest.raises(NoIdentity, match="CALLBOARD_AGENT"):
        resolve_agent({}, tmp_path)


def test_a_bad_name_from_a_source_names_that_source(repo: Path):
    with pytest.raises(BadName, match="CALLBOARD_AGENT"):
        resolve_agent({"CALLBOARD_AGENT": "not valid!"}, repo)
    (repo / ".callboard-agent").write_text("also not valid!")
    with pytest.raises(BadName, match=".callboard-agent"):
        resolve_agent({}, repo)


@pytest.mark.parametrize(
    ("folder", "name"),
    [("My Project", "my-project"), ("__init__", "init"), ("API_v2.0", "api_v2.0"), ("!!!", None), ("x" * 80, "x" * 64)],
)
def test_slug(folder, name):
    assert slug(folder) == name


def test_workspace_comes_from_env_then_config_then_default(tmp_path):
    configured, unset = Settings(tmp_path, tmp_path / "db", workspace="other"), Settings(tmp_path, tmp_path / "db")
    assert configured.workspace_in({"CALLBOARD_WORKSPACE": "Team"}) == "team"
    assert configured.workspace_in({}) == "other"
    assert unset.workspace_in({}) == "default"


def test_a_hub_names_the_workspace_only_when_env_or_config_does(tmp_path):
    configured, unset = Settings(tmp_path, tmp_path / "db", workspace="other"), Settings(tmp_path, tmp_path / "db")
    assert configured.named_workspace({"CALLBOARD_WORKSPACE": " Team "}) == "Team"
    assert configured.named_workspace({}) == "other"
    assert unset.named_workspace({"CALLBOARD_WORKSPACE": " "}) is None


def test_the_hub_setting_lists_its_replicas_in_order(tmp_path):
    settings = Settings(tmp_path, tmp_path / "db", hub=" http://a:1/ , http://b:2,")
    assert settings.hub_urls == ["http://a:1", "http://b:2"]
    assert Settings(tmp_path, tmp_path / "db").hub_urls == []


def test_machine_name_is_the_host_name_unless_overridden():
    assert machine_name({"CALLBOARD_MACHINE": "Build-01"}) == "build-01"
    assert machine_name({}) == machine_name({"CALLBOARD_MACHINE": ""})
    assert machine_name({"CALLBOARD_MACHINE": "weird host!"}) == "weird-host"


def test_a_process_start_time_tells_a_recycled_pid_apart():
    me = process_start_time(os.getpid())
    assert me is not None and process_alive(os.getpid(), me)
    assert not process_alive(os.getpid(), me + 1)  # same pid, another process's start time


def test_a_process_that_ended_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start_time(child.pid)
    child.wait()
    assert process_start_time(child.pid) is None
    assert not process_alive(child.pid, started)
