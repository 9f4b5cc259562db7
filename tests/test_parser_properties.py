"""Property tests of every parser and validator that reads what a client, a header or a file
says: names, machine names, addresses, resume points and other numbers written as text, the
process header, the config file, and the bounds' own patterns. For any input each one either
answers within its bounds or refuses with a CallboardError — never another exception."""

from __future__ import annotations

import re
import string
from pathlib import Path

from hypothesis import assume, example, given
from hypothesis import strategies as st

from callboard import address, limits
from callboard.address import AgentAddress, ChannelAddress, parse_address, parse_machine, parse_name
from callboard.config import read_config, write_config
from callboard.errors import BadAddress, BadName, BadRequest
from callboard.headers import parse_process_header, process_header
from callboard.hub.query_numbers import decimal_number, resume_point, whole_number

NAME_CHARS = string.ascii_letters + string.digits + "._-"
# Text as hostile clients write it: any character, and the look-alikes that fool str methods.
TRICKY = st.sampled_from(["²", "١", "٣", "߀", "\u00a0", "\u2028", "\x00", "\ufeff", "#", "@", ":", "-", " ", ","])
ANY_TEXT = st.text(st.one_of(st.characters(), TRICKY), max_size=80)
NAME_LIKE = st.text(st.one_of(st.sampled_from(NAME_CHARS), TRICKY), min_size=0, max_size=70)
DIGITS_LIKE = st.text(st.one_of(st.sampled_from(string.digits), TRICKY, st.sampled_from("+-.eE_ ")), max_size=30)


@given(st.one_of(ANY_TEXT, NAME_LIKE))
@example("²")
@example("a" * 65)
def test_a_name_is_canonical_and_fits_its_pattern_or_is_refused(text: str) -> None:
    try:
        name = parse_name(text)
    except BadName:
        return
    assert re.fullmatch(address.NAME_PATTERN, name) and len(name) <= limits.NAME_CHARS
    assert parse_name(name) == name == text.strip().lower()


@given(st.one_of(ANY_TEXT, NAME_LIKE, st.text(st.sampled_from(NAME_CHARS), min_size=250, max_size=260)))
def test_a_machine_name_is_canonical_and_fits_its_pattern_or_is_refused(text: str) -> None:
    try:
        machine = parse_machine(text)
    except BadName:
        return
    assert re.fullmatch(address.MACHINE_PATTERN, machine) and len(machine) <= limits.MACHINE_CHARS
    assert parse_machine(machine) == machine


ADDRESS_LIKE = st.one_of(
    ANY_TEXT,
    st.builds(
        lambda name, machine, pid: f"{name}@{machine}#{pid}",
        NAME_LIKE,
        NAME_LIKE,
        st.one_of(st.integers(min_value=-5, max_value=2**64), DIGITS_LIKE),
    ),
    st.builds(lambda name: f"#{name}", NAME_LIKE),
)


@given(ADDRESS_LIKE)
@example(f"bob@laptop#{2**31}")
@example("bob@laptop#²")
def test_an_address_round_trips_and_fits_the_documented_pattern_or_is_refused(text: str) -> None:
    try:
        parsed = parse_address(text)
    except BadAddress:
        return
    assert isinstance(parsed, AgentAddress | ChannelAddress)
    assert parse_address(str(parsed)) == parsed
    assert re.fullmatch(address.ADDRESS_PATTERN, str(parsed)), str(parsed)
    if isinstance(parsed, AgentAddress) and parsed.pid is not None:
        assert 1 <= parsed.pid <= limits.PID_MAX


@given(st.integers(min_value=1, max_value=10**12), st.integers(min_value=-10, max_value=10**13))
@example(limits.PID_MAX, limits.PID_MAX + 1)
def test_whole_numbers_up_to_matches_exactly_1_to_its_bound(most: int, number: int) -> None:
    matched = re.fullmatch(address.whole_numbers_up_to(most), str(number)) is not None
    assert matched == (1 <= number <= most)


@given(DIGITS_LIKE)
@example("9" * 5000)
@example(str(limits.SEQ_MAX + 1))
@example("²")
def test_a_resume_point_is_ascii_digits_up_to_the_largest_sequence_number(text: str) -> None:
    try:
        value = resume_point(text)
    except BadRequest:
        assert not (text.isascii() and text.isdigit()) or len(text) > limits.SEQ_DIGITS or int(text) > limits.SEQ_MAX
        return
    assert text.isascii() and text.isdigit() and 0 <= value <= limits.SEQ_MAX == 2**63 - 1


@given(DIGITS_LIKE, st.integers(min_value=-5, max_value=5), st.integers(min_value=0, max_value=2**64))
def test_a_whole_number_query_parameter_is_within_its_bounds_or_refused(text: str, least: int, most: int) -> None:
    try:
        value = whole_number(text, "limit", least, most)
    except BadRequest:
        return
    assert least <= value <= most and re.fullmatch(r"-?[0-9]+", text, re.ASCII)


@given(st.one_of(DIGITS_LIKE, st.sampled_from(["nan", "inf", "-inf", "1e400", "NaN", "Infinity", "0x10", "1_0"])))
def test_a_number_query_parameter_is_finite_and_within_its_bounds_or_refused(text: str) -> None:
    try:
        value = decimal_number(text, "wait", 0.0, limits.WAIT_SECONDS_MAX)
    except BadRequest:
        return
    assert 0.0 <= value <= limits.WAIT_SECONDS_MAX and text.isascii()


PAIRS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=2**70), st.one_of(st.none(), st.integers(min_value=0, max_value=2**70))
    ),
    max_size=20,
)


@given(st.one_of(ANY_TEXT, st.builds(lambda machine, pairs: process_header(machine, pairs), NAME_LIKE, PAIRS)))
@example("laptop ²:-")
@example("laptop 1:²")
@example(f"laptop {2**31}:-")
def test_the_process_header_names_pids_and_start_times_within_bounds_or_nothing(text: str) -> None:
    named = parse_process_header(text)
    if named is None:
        return
    machine, lineage = named
    assert machine and len(lineage) <= 16
    for pid, start in lineage:
        assert 0 <= pid <= limits.PID_MAX
        assert start is None or 0 <= start <= limits.PROC_START_MAX


@given(st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=20), PAIRS)
def test_a_process_header_of_pids_in_bounds_reads_back_as_written(machine: str, pairs: list) -> None:
    assume(all(pid <= limits.PID_MAX and (start is None or start <= limits.PROC_START_MAX) for pid, start in pairs))
    assert parse_process_header(process_header(machine, pairs[:16])) == (machine, pairs[:16])


@given(st.binary(max_size=300))
@example(b'hub = "\xff"')
@example(b"a = " + b"[" * 5000 + b"]" * 5000)
@example(b'token = "cb_x"\nagent = 7\n')
def test_a_config_file_gives_its_string_settings_or_a_clear_error(tmp_path_factory, raw: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("config")) / "config.toml"
    path.write_bytes(raw)
    try:
        settings = read_config(path)
    except BadRequest as error:
        assert str(path) in error.message
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items())


SETTING = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(st.dictionaries(st.sampled_from(["hub", "token", "agent", "workspace", "ca_cert"]), SETTING, max_size=5))
@example({"hub": "https://hub.example/😀", "agent": '\x7f\x00"\\'})
def test_settings_written_read_back_the_same(tmp_path_factory, settings: dict[str, str]) -> None:
    home = Path(tmp_path_factory.mktemp("home"))
    write_config(home, settings)
    assert read_config(home / "config.toml") == settings
