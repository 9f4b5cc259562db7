"""The loop and flood guards (guard.py) on their own: loops and floods are held, conversations never."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callboard import guards as guard
from callboard.guards import Exchange, Hold
from callboard.service.holds import TRAFFIC_REUSE_SECONDS, Guards

Send = tuple[str, str, float]  # sender, recipient, when


def run(sends: list[Send]) -> list[Hold | None]:
    """Each send's verdict, in order, each decided on the pair's traffic before it (with the
    verdicts given to it), as the service does."""
    history: list[tuple[str, str, Exchange]] = []
    verdicts: list[Hold | None] = []
    for sender, recipient, at in sends:
        pair = [e for s, r, e in reversed(history) if {s, r} == {sender, recipient}]  # newest first
        verdict = guard.decide(sender, at, pair)
        verdicts.append(verdict)
        held = (verdict.until, verdict.reason) if verdict else (None, None)
        history.append((sender, recipient, Exchange(sender, at, *held)))
    return verdicts


def gaps(minimum: float, maximum: float, size: int) -> st.SearchStrategy[list[float]]:
    return st.lists(st.floats(minimum, maximum), min_size=size, max_size=size)


def timeline(start: float, steps: list[float]) -> list[float]:
    times, at = [], start
    for step in steps:
        at += step
        times.append(at)
    return times


# --- ordinary exchanges are never held ----------------------------------------------------------


@given(st.lists(st.sampled_from("ab"), min_size=1, max_size=60), gaps(0, 120, 60))
def test_a_few_messages_a_minute_between_a_pair_are_never_held(senders: list[str], steps: list[float]) -> None:
    # "A few a minute": at most three in any minute (the fourth comes a minute after the first).
    times = timeline(1000.0, steps[: len(senders)])
    for i in range(3, len(times)):
        times[i] = max(times[i], times[i - 3] + 60.0)
        for j in range(i + 1, len(times)):  # keep the order
            times[j] = max(times[j], times[i])
    sends = [(s, "b" if s == "a" else "a", t) for s, t in zip(senders, times, strict=False)]
    assert run(sends) == [None] * len(sends)


@given(gaps(0, 0.5, 10), st.booleans())
def test_a_burst_of_ten_from_different_senders_is_never_held(steps: list[float], replies: bool) -> None:
    sends: list[Send] = []
    for i, at in enumerate(timeline(0.0, steps)):
        sends.append((f"agent{i}", "lead", at))
        if replies:
            sends.append(("lead", f"agent{i}", at + 0.1))
    assert run(sends) == [None] * len(sends)


@given(st.lists(st.sampled_from("ab"), min_size=10, max_size=10), gaps(0, 30, 10))
def test_a_ten_message_conversation_is_never_held(senders: list[str], steps: list[float]) -> None:
    sends = [(s, "b" if s == "a" else "a", t) for s, t in zip(senders, timeline(0.0, steps), strict=True)]
    assert run(sends) == [None] * 10


@given(st.integers(1, 60), gaps(0, 10, 200))
def test_up_to_twenty_a_minute_one_way_are_never_held(per_minute: int, jitter: list[float]) -> None:
    per_minute = min(per_minute, guard.FLOOD_MESSAGES)
    # At most per_minute in any minute: the n-th goes at least a minute after the (n - per_minute)-th.
    times: list[float] = []
    for i, step in enumerate(jitter[:100]):
        at = (times[-1] if times else 0.0) + step
        if i >= per_minute:
            at = max(at, times[i - per_minute] + 60.0)
        times.append(at)
    assert run([("a", "b", t) for t in times]) == [None] * len(times)


# --- loops and floods are held -------------------------------------------------------------------


@settings(max_examples=50)
@given(gaps(0, guard.ECHO_GAP_SECONDS - 0.01, 30), st.integers(0, 8))
def test_an_echo_loop_is_held_from_its_twelfth_message_doubling_up_to_fifteen_minutes(
    steps: list[float], extra: int
) -> None:
    sends: list[Send] = []
    holds: list[Hold | None] = []
    at = 0.0
    for i in range(guard.ECHO_MESSAGES + extra):
        sender, recipient = ("a", "b") if i % 2 == 0 else ("b", "a")
        previous = holds[-1] if holds else None
        # The other side answers steps[i] after the message reached it (let through).
        at = max(at, previous.until if previous else at) + steps[i]
        sends.append((sender, recipient, at))
        holds = run(sends)
    assert holds[: guard.ECHO_MESSAGES - 1] == [None] * (guard.ECHO_MESSAGES - 1)
    held = holds[guard.ECHO_MESSAGES - 1 :]
    expected = [min(guard.ECHO_HOLD_SECONDS * 2**n, guard.ECHO_MAX_HOLD_SECONDS) for n in range(len(held))]
    assert all(h is not None and h.reason == "echo_loop" for h in held)
    lengths = [h.until - s[2] for h, s in zip(held, sends[guard.ECHO_MESSAGES - 1 :], strict=True) if h]
    assert lengths == pytest.approx(expected)


def test_a_pause_ends_the_echo_loop() -> None:
    sends = [("a" if i % 2 == 0 else "b", "b" if i % 2 == 0 else "a", i * 1.0) for i in range(11)]
    later = 10 + guard.ECHO_GAP_SECONDS
    assert run([*sends, ("b", "a", later)])[-1] is None


@given(st.integers(21, 80), gaps(0, 2, 80))
def test_a_flood_is_let_through_at_the_window_rate_and_nothing_is_dropped(count: int, steps: list[float]) -> None:
    times = timeline(0.0, steps[:count])
    verdicts = run([("a", "b", t) for t in times])
    released = [v.until if v else t for v, t in zip(verdicts, times, strict=True)]
    assert all(v is None or v.reason == "flood" for v in verdicts)
    # Never more than twenty let through within any minute, and in the order sent.
    assert released == sorted(released)
    for i in range(guard.FLOOD_MESSAGES, len(released)):
        assert released[i] - released[i - guard.FLOOD_MESSAGES] >= guard.FLOOD_WINDOW_SECONDS - 1e-6
    if times[guard.FLOOD_MESSAGES] - times[0] < guard.FLOOD_WINDOW_SECONDS:
        assert verdicts[guard.FLOOD_MESSAGES] is not None  # the 21st within a minute is held
        assert verdicts[guard.FLOOD_MESSAGES].until == times[0] + guard.FLOOD_WINDOW_SECONDS


exchanges = st.builds(
    Exchange,
    st.sampled_from("ab"),
    st.floats(0, 1000),
    st.one_of(st.none(), st.floats(0, 3000)),
    st.sampled_from([None, "flood", "echo_loop"]),
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])  # long sends lists: slow to draw
@given(
    st.lists(exchanges, max_size=80),
    # mostly one way and quick, so that floods come and old holds leave the kept traffic
    st.lists(st.tuples(st.sampled_from("aaab"), st.floats(0, 3), st.booleans()), min_size=70, max_size=150),
)
def test_pair_traffic_kept_send_by_send_decides_as_decide_does(
    read: list[Exchange], sends: list[tuple[str, float, bool]]
) -> None:
    """The service keeps each pair's traffic as a PairTraffic, adding its sends as it decides
    them: its verdicts are decide's on the same traffic, also as the oldest leave it."""
    read.sort(key=lambda e: e.at, reverse=True)
    traffic = guard.PairTraffic(read)
    assert traffic.exchanges == read[: guard.PairTraffic.KEPT]
    now = read[0].at if read else 0.0
    for sender, step, held_long in sends:
        now += step
        verdict = traffic.decide(sender, now)
        assert verdict == guard.decide(sender, now, traffic.exchanges)
        if verdict is None and held_long:  # some sends held for other reasons (as read from a store)
            verdict = Hold("echo_loop", now + 900)
        newest = Exchange(sender, now, *((verdict.until, verdict.reason) if verdict else (None, None)))
        expected = [newest, *traffic.exchanges][: guard.PairTraffic.KEPT]
        traffic.add(newest)
        assert traffic.exchanges == expected
        for who in "ab":
            assert list(traffic.released(who)) == sorted(e.released for e in expected if e.sender == who)


def test_describe_names_the_pair_and_the_rule() -> None:
    assert "echo loop" in guard.describe("echo_loop", "a", "b")
    assert "flood" in guard.describe("flood", "a", "b")


def test_guards_read_a_pairs_traffic_once_a_second_and_count_their_own_sends_meanwhile() -> None:
    """A flood decided from the traffic read once, plus the sends decided since: the store is not
    asked on every send (the hub decides sends on its event loop)."""

    class CountingFacts:
        reads = 0

        def pair_traffic(self, workspace, a, b, since, limit):  # noqa: ANN001, ANN202 - the one method used
            CountingFacts.reads += 1
            return []

    guards = Guards(CountingFacts())  # type: ignore[arg-type]
    start = datetime(2026, 12, 2, tzinfo=UTC)
    verdicts = [
        guards.decide("ws", "alice", ["bob"], start + timedelta(seconds=i * TRAFFIC_REUSE_SECONDS / 100))
        for i in range(guard.FLOOD_MESSAGES + 1)
    ]
    assert CountingFacts.reads == 1
    assert [bool(v) for v in verdicts] == [False] * guard.FLOOD_MESSAGES + [True]  # the 21st is held
    assert verdicts[-1]["bob"].reason == "flood"
    guards.decide("ws", "alice", ["bob"], start + timedelta(seconds=2 * TRAFFIC_REUSE_SECONDS))
    assert CountingFacts.reads == 2  # read again once the reuse time is over
