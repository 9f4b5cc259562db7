"""Leases' rules (leases.py) on their own: patterns are repository-relative, a folder covers what
is under it, globs match paths and their folders, and leases conflict unless both are shared or
they are one agent's or in different repositories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callboard import leases
from callboard.leases import Lease

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def lease(agent: str, *patterns: str, shared: bool = False, scope: str = "github.com/acme/app") -> Lease:
    return Lease(
        id=f"{agent}-{'-'.join(patterns)}", workspace="w", agent=agent, scope=scope, patterns=list(patterns),
        shared=shared, created_at=NOW, expires_at=NOW,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("given", "kept"),
    [("src/a.py", "src/a.py"), ("./src//a.py", "src/a.py"), ("docs/", "docs/"), ("src\\\\b.py", "src/b.py")],
)
def test_a_pattern_is_kept_relative_to_the_root(given: str, kept: str) -> None:
    assert leases.pattern(given) == kept


@pytest.mark.parametrize("given", ["", "  ", "/etc/passwd", "../x", "src/../../x", ".", "x" * 501])
def test_what_is_not_a_path_inside_the_repository_is_none(given: str) -> None:
    assert leases.pattern(given) is None


def test_a_folder_covers_what_is_under_it_and_a_glob_its_matches() -> None:
    assert leases.covers("src/", "src/a/b.py") and leases.covers("src", "src/a.py") and leases.covers("src", "src")
    assert not leases.covers("src", "srcfoo/a.py") and not leases.covers("src/a.py", "src")
    assert leases.covers("src/*.py", "src/a.py") and leases.covers("docs/*", "docs/guide/x.md")
    assert not leases.covers("src/*.py", "lib/a.py")


def test_leases_conflict_unless_both_shared_or_one_agents_or_another_repository() -> None:
    ana = lease("ana", "src/")
    assert leases.conflicting(lease("ben", "src/retry.py"), [ana]) == [ana]
    assert leases.conflicting(lease("ben", "docs/"), [ana]) == []
    assert leases.conflicting(lease("ana", "src/a.py"), [ana]) == []
    assert leases.conflicting(lease("ben", "src/", shared=True), [lease("ana", "src/", shared=True)]) == []
    assert leases.conflicting(lease("ben", "src/", shared=True), [ana]) == [ana]
    assert leases.conflicting(lease("ben", "src/", scope="other"), [ana]) == []
    assert leases.blocking("ben", ana.scope, ["src/x.py"], [ana]) == [ana]
    assert leases.blocking("ben", ana.scope, ["src/x.py"], [lease("ana", "src/", shared=True)]) == []


names = st.text(alphabet="abc", min_size=1, max_size=3)
paths = st.lists(names, min_size=1, max_size=4).map("/".join)


@given(paths, paths)
def test_overlap_is_symmetric_and_a_path_covers_itself_and_what_is_under_it(one: str, other: str) -> None:
    assert leases.overlaps(one, other) == leases.overlaps(other, one)
    assert leases.covers(one, one) and leases.covers(one, f"{one}/x")
    assert leases.covers(one, other) == (other == one or other.startswith(one + "/"))
