"""The registration rule on its own (``store.registration``): what registering a session does to
the other open sessions of its process. The contract suite checks each store applies it."""

from __future__ import annotations

from callboard.store.records import NewSession
from callboard.store.registration import OpenSession, Registration, registration


def new(agent: str = "alice", proc_start: int | None = 100, may_end: tuple[str, ...] = ()) -> NewSession:
    return NewSession("ws", agent, "laptop", 42, "script", proc_start, may_end=may_end)


def test_a_process_with_no_open_session_gets_a_new_one():
    assert registration(new(), []) == Registration(refresh=None, end=())


def test_the_same_agent_and_process_start_is_refreshed_not_duplicated():
    assert registration(new(), [OpenSession("s1", "alice", 100)]) == Registration(refresh="s1", end=())


def test_a_recycled_pid_ends_the_agents_session_of_the_earlier_process():
    assert registration(new(), [OpenSession("old", "alice", 99)]) == Registration(refresh=None, end=("old",))


def test_of_two_matching_sessions_the_first_is_refreshed_and_the_other_ended():
    open_here = [OpenSession("s1", "alice", 100), OpenSession("s2", "alice", 100)]
    assert registration(new(), open_here) == Registration(refresh="s1", end=("s2",))


def test_another_agents_session_the_service_named_is_ended():
    open_here = [OpenSession("theirs", "bob", 100), OpenSession("mine", "alice", 100)]
    assert registration(new(may_end=("theirs",)), open_here) == Registration(refresh="mine", end=("theirs",))


def test_another_agents_session_the_service_did_not_name_refuses_the_registration():
    open_here = [OpenSession("theirs", "bob", 100), OpenSession("other", "carol", 1)]
    assert registration(new(may_end=("theirs",)), open_here) is None
