"""Leases through the real CLI on the embedded store, inside a git repository: taking one lists
its conflicts (advisory: granted), ``check`` exits 1 on another agent's exclusive lease (also for
the staged files), shared leases do not block, release by path or id, a forced release is a
person's with a reason and kept in the audit trail, and outside a repository nothing is taken."""

from __future__ import annotations

import subprocess

from tests.support.cli_runner import CLI, describe, expect_error


def _repository(cli: CLI) -> None:
    subprocess.run(["git", "init", "-q", str(cli.workdir)], check=True)
    (cli.workdir / "src").mkdir()
    (cli.workdir / "src" / "retry.py").write_text("x = 1\n")


def test_leases_are_granted_with_their_conflicts_and_checked(cli: CLI) -> None:
    _repository(cli)
    ana = cli.run_json("lease", "src/", "--reason", "refactor", agent="ana")
    assert ana["lease"]["patterns"] == ["src/"] and ana["conflicts"] == []
    ben = cli.run("lease", "src/retry.py", agent="ben")
    assert ben.returncode == 0 and "conflict: ana holds src/ (exclusive" in ben.stderr, describe(ben)
    check = cli.run("lease", "check", "src/retry.py", agent="cai")
    assert check.returncode == 1 and "held: ana holds src/" in check.stderr, describe(check)
    assert cli.run("lease", "check", "README.md", agent="cai").returncode == 0
    subprocess.run(["git", "-C", str(cli.workdir), "add", "src/retry.py"], check=True)
    staged_proc = cli.run("lease", "check", "--staged", "--json", agent="cai")
    assert staged_proc.returncode == 1, describe(staged_proc)
    who = {a["name"]: a["leases"] for a in cli.run_json("who", agent="cai")["agents"]}
    assert who["ana"] == [f"src/ (exclusive) in {ana['lease']['scope']}, id {ana['lease']['id']}"]
    assert "ana leases src/ (exclusive)" in cli.run("who", agent="cai").stdout
    listed = cli.run_json("lease", "list", "--all", agent="cai")
    assert sorted(x["agent"] for x in listed) == ["ana", "ben"] and cli.run_json("lease", "list", agent="cai") == []
    assert cli.run_json("lease", "release", "src/", agent="ana")["released"] == [ana["lease"]["id"]]
    assert cli.run("lease", "check", "src/retry.py", agent="cai").returncode == 1  # ben's still
    cli.run_json("lease", "release", agent="ben")
    assert cli.run("lease", "check", "src/retry.py", agent="cai").returncode == 0


def test_shared_leases_do_not_block_each_other(cli: CLI) -> None:
    _repository(cli)
    cli.run_json("lease", "src/", "--shared", agent="ana")
    assert cli.run_json("lease", "src/", "--shared", agent="ben")["conflicts"] == []
    assert cli.run("lease", "check", "src/retry.py", agent="cai").returncode == 0


def test_a_forced_release_is_a_persons_with_a_reason_and_audited(cli: CLI) -> None:
    _repository(cli)
    held = cli.run_json("lease", "src/", agent="ana")["lease"]["id"]
    expect_error(cli.run("lease", "release", held, agent="ben"), "bad_request", as_json=False)  # not ben's own
    expect_error(cli.run("lease", "release", "--force", held, agent="ben"), "bad_request", as_json=False)  # no reason
    cli.run_json("lease", "release", "--force", held, "--reason", "ana's session is stuck", agent="ben")
    assert cli.run_json("lease", "list", "--all", agent="ben") == []
    trail = cli.run_json("audit", agent="ben")
    [record] = [e for e in trail if e["action"] == "lease.release"]
    assert record["target"] == "ana" and record["detail"]["reason"] == "ana's session is stuck"


def test_outside_a_repository_or_outside_it_nothing_is_taken(cli: CLI) -> None:
    expect_error(cli.run("lease", "src/", agent="ana"), "bad_request", as_json=False)
    _repository(cli)
    expect_error(cli.run("lease", "../elsewhere", agent="ana"), "bad_request", as_json=False)
    assert cli.run_json("lease", "list", "--all", agent="ana") == []
