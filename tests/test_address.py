"""The address grammar: name, name@machine, name@machine#pid, #channel."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callboard.address import (
    AgentAddress,
    ChannelAddress,
    RemoteAddress,
    parse_address,
    parse_addresses,
    parse_channel_name,
    parse_name,
)
from callboard.errors import BadAddress, BadName

_EDGE = "abcdefghijklmnopqrstuvwxyz0123456789"
names = st.builds(
    lambda first, middle, last: first + middle + last if middle or last else first,
    st.sampled_from(_EDGE),
    st.text(alphabet=_EDGE + "._-", max_size=20),
    st.sampled_from(["", *_EDGE]),
).filter(lambda n: n[-1] in _EDGE)
machines = st.lists(st.text(alphabet=_EDGE, min_size=1, max_size=10), min_size=1, max_size=3).map(".".join)
pids = st.integers(min_value=1, max_value=4_000_000)
agent_addresses = st.builds(AgentAddress, names, st.none() | machines, st.none()) | st.builds(
    AgentAddress, names, machines, pids
)
addresses = agent_addresses | st.builds(ChannelAddress, names)


@given(addresses)
def test_every_address_round_trips_through_its_text(address):
    assert parse_address(str(address)) == address


@given(addresses)
def test_addresses_are_case_insensitive_and_ignore_surrounding_space(address):
    assert parse_address(f"  {str(address).upper()} ") == address


@given(st.text(max_size=40))
def test_any_text_parses_or_fails_with_bad_address(text):
    try:
        address = parse_address(text)
    except BadAddress as error:
        assert error.code == "bad_address"
        assert "name" in error.message  # the sentence says what a valid address looks like
    else:
        assert str(address) == text.strip().lower()


@given(st.lists(addresses, min_size=1, max_size=6))
def test_a_comma_list_parses_in_order_without_repeats(items):
    parsed = parse_addresses(",".join(str(a) for a in items))
    assert parsed == list(dict.fromkeys(items))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("backend", AgentAddress("backend")),
        ("Backend", AgentAddress("backend")),
        ("backend@laptop", AgentAddress("backend", "laptop")),
        ("backend@build-01.lan#4242", AgentAddress("backend", "build-01.lan", 4242)),
        ("#general", ChannelAddress("general")),
        ("my_agent.v2", AgentAddress("my_agent.v2")),
    ],
)
def test_examples_parse(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "bad name!!",
        "-lead",
        "trail-",
        "a" * 65,
        "#",
        "##x",
        "bob@",
        "bob@m#",
        "bob@m#0",
        "bob#1",
        "bob@m#-3",
        "@m",
    ],
)
def test_malformed_addresses_are_refused(text):
    with pytest.raises(BadAddress):
        parse_address(text)


def test_outside_a2a_addresses_keep_their_url_and_malformed_ones_are_refused():
    assert parse_address(" a2a:HTTPS://Agents.example/Backend/ ") == RemoteAddress("https://Agents.example/Backend")
    assert str(parse_address("a2a:http://127.0.0.1:9/x")) == "a2a:http://127.0.0.1:9/x"
    for text in ("a2a:", "a2a:ftp://x.example/a", "a2a:https://", "a2a:https://a b"):
        with pytest.raises(BadAddress, match="outside agent's address"):
            parse_address(text)


def test_an_empty_list_or_stray_comma_is_refused():
    with pytest.raises(BadAddress, match="no recipient"):
        parse_addresses(" , ")
    with pytest.raises(BadAddress, match="stray comma"):
        parse_addresses("bob,,carol")


def test_names_and_channel_names_validate_and_lower_case():
    assert parse_name(" Reviewer ") == "reviewer"
    assert parse_channel_name("#Release") == "release"
    assert parse_channel_name("release") == "release"
    with pytest.raises(BadName):
        parse_name("no spaces")
    with pytest.raises(BadName):
        parse_channel_name("#")
