"""What the mailbox takes from outside: the address grammar, and the bounds of every value.

The address grammar, who or what a message is sent to:

    name                 an agent's mailbox (``backend``)
    name@machine         that agent, pushed to its sessions on one machine
    name@machine#pid     one exact session of that agent
    #channel             every member of a channel
    a2a:https://host/…   an outside A2A agent, by the URL of its card (registered on first use;
                         a registered outside agent is then also reached by its name)

Names are case-insensitive and stored in lower case; an a2a: URL keeps its case.

The bounds themselves are named once, in ``limits``; here are the patterns built on them and what
JSON can carry. Pure and light: stdlib, ``errors`` and ``limits`` only, so the hooks' fast path
may use it.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from dataclasses import dataclass
from typing import Any

from callboard.errors import BadAddress, BadName
from callboard.limits import DATA_DEPTH_MAX, DATA_INT_DIGITS, MACHINE_CHARS, NAME_CHARS, PID_MAX, SEQ_DIGITS, URL_CHARS

# --- address patterns --------------------------------------------------------------------------
# Unanchored, for the grammar below to build on; the anchored ``*_PATTERN`` forms
# are what /openapi.json states. Those are the canonical forms: the service also takes upper
# case and surrounding blanks, and folds them.


def whole_numbers_up_to(most: int) -> str:
    """A regular expression matching exactly the decimal numbers 1..``most`` (no leading zero)."""
    text = str(most)
    # Shorter than ``most``: any such number. As long: ``most``'s first i digits, a smaller
    # digit, then any digits; or ``most`` itself.
    choices = [f"[1-9][0-9]{{0,{len(text) - 2}}}"] if len(text) > 1 else []
    for i, digit in enumerate(text):
        least = 1 if i == 0 else 0
        if int(digit) > least:
            smaller = str(least) if int(digit) - 1 == least else f"[{least}-{int(digit) - 1}]"
            rest = len(text) - i - 1
            choices.append(text[:i] + smaller + (f"[0-9]{{{rest}}}" if rest else ""))
    return "(?:" + "|".join([*choices, text]) + ")"


NAME_REGEX = rf"[a-z0-9](?:[a-z0-9._-]{{0,{NAME_CHARS - 2}}}[a-z0-9])?"
MACHINE_REGEX = rf"[a-z0-9](?:[a-z0-9._-]{{0,{MACHINE_CHARS - 2}}}[a-z0-9])?"
PID_REGEX = whole_numbers_up_to(PID_MAX)
AGENT_ADDRESS_REGEX = rf"{NAME_REGEX}(?:@{MACHINE_REGEX}(?:#{PID_REGEX})?)?"
ADDRESS_REGEX = rf"(?:#{NAME_REGEX}|{AGENT_ADDRESS_REGEX})"

NAME_PATTERN = f"^{NAME_REGEX}$"
MACHINE_PATTERN = f"^{MACHINE_REGEX}$"
AGENT_ADDRESS_PATTERN = f"^{AGENT_ADDRESS_REGEX}$"
ADDRESS_PATTERN = f"^{ADDRESS_REGEX}$"
ADDRESS_LIST_PATTERN = f"^{ADDRESS_REGEX}(?:,{ADDRESS_REGEX})*$"  # to: "alice,bob,#team"
CHANNEL_PATTERN = f"^#?{NAME_REGEX}$"  # a channel's name, with or without its '#'

NAME_MAX = NAME_CHARS
MACHINE_MAX = MACHINE_CHARS

# A name starts and ends with a letter or digit; inside, it may also use . _ and -.
_NAME = NAME_REGEX
# Host names as the machine reports them (lower-cased); underscores appear in the wild.
_MACHINE = MACHINE_REGEX
_PID = PID_REGEX  # 1..2**31-1: no process has another id

_NAME_RE = re.compile(_NAME)
_MACHINE_RE = re.compile(_MACHINE)
_AGENT_ADDRESS_RE = re.compile(rf"(?P<name>{_NAME})(?:@(?P<machine>{_MACHINE})(?:#(?P<pid>{_PID}))?)?")
_CHANNEL_ADDRESS_RE = re.compile(rf"#(?P<name>{_NAME})")

NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting and ending with a letter or digit"


@dataclass(frozen=True, slots=True)
class AgentAddress:
    """An agent's mailbox, optionally narrowed to one machine or one exact session."""

    name: str
    machine: str | None = None
    pid: int | None = None

    def __str__(self) -> str:
        text = self.name
        if self.machine:
            text += f"@{self.machine}"
            if self.pid is not None:
                text += f"#{self.pid}"
        return text


@dataclass(frozen=True, slots=True)
class ChannelAddress:
    """A channel; a post fans out to every member but the sender."""

    name: str

    def __str__(self) -> str:
        return f"#{self.name}"


@dataclass(frozen=True, slots=True)
class RemoteAddress:
    """An outside A2A agent by its URL (where its card is): mail to it becomes an A2A task."""

    url: str

    def __str__(self) -> str:
        return f"a2a:{self.url}"


Address = AgentAddress | ChannelAddress | RemoteAddress
REMOTE_PREFIX = "a2a:"


def shown(text: str, most: int = 80) -> str:
    """``text`` as an error message quotes it: cut short, so a megabyte of junk is not echoed back."""
    return text if len(text) <= most else text[:most] + "…"


def is_valid_name(text: str) -> bool:
    return _NAME_RE.fullmatch(text) is not None


def parse_name(text: str, what: str = "name") -> str:
    """Validate an agent, channel or workspace name; return its canonical (lower-case) form."""
    canonical = text.strip().lower()
    if not is_valid_name(canonical):
        raise BadName(f"{what} {shown(text)!r} is not valid: use {NAME_RULE}.", name=shown(text))
    return canonical


def parse_channel_name(text: str) -> str:
    """A channel name, with or without its leading '#'."""
    stripped = text.strip()
    return parse_name(stripped[1:] if stripped.startswith("#") else stripped, "channel name")


def parse_machine(text: str) -> str:
    canonical = text.strip().lower()
    if _MACHINE_RE.fullmatch(canonical) is None:
        raise BadName(f"machine name {shown(text)!r} is not valid: use a host name.", name=shown(text))
    return canonical


@functools.lru_cache(maxsize=4096)  # agents write to the same few addresses; parsing is a regex or two
def parse_address(text: str) -> Address:
    """Parse one address; raise BadAddress with a sentence saying what a valid one looks like."""
    canonical = text.strip().lower()
    if canonical.startswith(REMOTE_PREFIX):
        return parse_remote_address(text)
    if match := _CHANNEL_ADDRESS_RE.fullmatch(canonical):
        return ChannelAddress(match["name"])
    if match := _AGENT_ADDRESS_RE.fullmatch(canonical):
        pid = match["pid"]
        return AgentAddress(match["name"], match["machine"], int(pid) if pid else None)
    raise BadAddress(
        f"{shown(text)!r} is not an address: use name, name@machine, name@machine#pid or #channel "
        f"(names are {NAME_RULE}; a pid is 1-{PID_MAX}).",
        address=shown(text),
    )


def parse_remote_address(text: str) -> RemoteAddress:
    """``a2a:http(s)://host[:port][/path]``: the URL keeps its case (paths are case-sensitive)."""
    url = text.strip()[len(REMOTE_PREFIX) :].strip()
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    if scheme.lower() not in ("http", "https") or not host or len(url) > URL_CHARS or any(c.isspace() for c in url):
        raise BadAddress(
            f"{shown(text)!r} is not an outside agent's address: write a2a: and the http:// or https:// URL "
            "of the agent (where its card is), e.g. a2a:https://agents.example.com/reviewer.",
            address=shown(text),
        )
    return RemoteAddress(scheme.lower() + "://" + rest.rstrip("/"))


def parse_addresses(text_or_list: str | list[str]) -> list[Address]:
    """Parse a comma-separated list (or a list of such strings); drop exact repeats, keep order."""
    if isinstance(text_or_list, str) and "," not in text_or_list and text_or_list.strip():
        return [parse_address(text_or_list)]  # the usual case: one recipient
    parts = [text_or_list] if isinstance(text_or_list, str) else list(text_or_list)
    pieces = [piece for part in parts for piece in part.split(",")]
    if not any(piece.strip() for piece in pieces):
        raise BadAddress("no recipient given: name at least one agent or #channel.")
    addresses: list[Address] = []
    for piece in pieces:
        if not piece.strip():
            raise BadAddress(f"empty address in {','.join(parts)!r}: remove the stray comma.")
        address = parse_address(piece)
        if address not in addresses:
            addresses.append(address)
    return addresses


# Free text a store keeps as it is: no NUL (PostgreSQL's text cannot hold one); where the service
# refuses blank text, some character that is not white space.
TEXT_PATTERN = r"^[^\x00]*$"
NON_BLANK_TEXT_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
SEQ_PATTERN = rf"^[0-9]{{1,{SEQ_DIGITS}}}$"


# --- what JSON can carry, for the values a message holds as data (a data part, its metadata) --
#
# Python's and pydantic's JSON readers take ``NaN``, ``Infinity`` and ``1e400`` (which overflows to
# infinity), but JSON has no such numbers: written out again they become ``null``, and a data
# part of ``null`` is no part at all, so the stored message could no longer be read. The send
# refuses such values (content.py) and the stores refuse to render a stored message holding one
# (store/rows.py). Pure: no I/O.

_INT_LIMIT = 10**DATA_INT_DIGITS


def json_problem(value: Any, name: str = "the value") -> str | None:
    """What keeps ``value`` from being written as JSON and read back the same, as a few words
    that say where (``data.rows[2] is nan, …``), or None when nothing does.

    Walked without recursion, so no nesting can exhaust Python's stack."""
    pending: list[tuple[Any, str, int]] = [(value, name, 0)]
    while pending:
        item, where, depth = pending.pop()
        if depth > DATA_DEPTH_MAX:
            return f"{name} nests deeper than {DATA_DEPTH_MAX} levels"
        problem = _scalar_problem(item)
        if problem is not None:
            return f"{_cut(where)} {problem}"
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str) or not is_utf8(key):
                    return f"{_cut(where)} has a key that is not text: {_cut(repr(key))}"
                pending.append((inner, f"{where}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            pending.extend((inner, f"{where}[{i}]", depth + 1) for i, inner in enumerate(item))
    return None


def _cut(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _scalar_problem(item: Any) -> str | None:
    if item is None or isinstance(item, bool | dict | list | tuple):
        return None
    if isinstance(item, float):
        return (
            None if math.isfinite(item) else f"is {item}, a number JSON cannot carry (NaN and infinities are not JSON)"
        )
    if isinstance(item, int):
        fits = -_INT_LIMIT < item < _INT_LIMIT
        return None if fits else f"is an integer of more than {DATA_INT_DIGITS} digits"
    if isinstance(item, str):
        return None if is_utf8(item) else "is text with undecodable bytes (lone surrogates)"
    return f"holds a Python {type(item).__name__}, which JSON cannot carry"


def is_utf8(text: str) -> bool:
    """False for text holding lone surrogates, which is how Python carries undecodable bytes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (127.0.0.0/8, ::1, localhost; not 0.0.0.0 or ::)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: other machines may reach it
        return False
