"""Finding agents by skill: the rule once in the directory (``offers_skill``), as every face sees it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from callboard.client.local import LocalClient
from callboard.errors import BadRequest, TooLarge
from callboard.service.directory import offers_skill


@pytest.mark.parametrize(
    ("skills", "wanted", "found"),
    [
        (["review", "deploy"], "review", True),
        (["Review"], "rEVIEW", True),
        (["  review "], "review", True),
        (["code review"], "review", False),  # the whole skill name, not a piece of one
        (["reviews"], "review", False),
        ([], "review", False),
    ],
)
def test_a_skill_matches_by_its_whole_name_case_aside(skills: list[str], wanted: str, found: bool) -> None:
    assert offers_skill(skills, wanted) is found


def test_list_agents_with_a_skill_keeps_those_offering_it(agents: Callable[[str], LocalClient]) -> None:
    alice = agents("alice")
    alice.create_agent("bob", "reviews pull requests", ["Review", "python"])
    alice.create_agent("carol", "deploys", ["deploy"])
    alice.create_agent("dave", None, ["code review"])
    assert [a.name for a in alice.list_agents(skill="review")] == ["bob"]
    assert [a.name for a in alice.list_agents(skill="DEPLOY")] == ["carol"]
    assert alice.list_agents(skill="cooking") == []
    assert {a.name for a in alice.list_agents()} == {"bob", "carol", "dave"}  # alice only looked: no agent


def test_a_blank_or_oversized_skill_filter_is_refused_with_a_stable_code(agents: Callable[[str], LocalClient]) -> None:
    alice = agents("alice")
    with pytest.raises(BadRequest) as blank:
        alice.list_agents(skill="  ")
    assert blank.value.code == "bad_request" and "--skill review" in blank.value.message
    with pytest.raises(TooLarge):
        alice.list_agents(skill="x" * 500)
