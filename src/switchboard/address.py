"""The address grammar: who or what a message is sent to.

    name                 an agent's mailbox (``backend``)
    name@machine         that agent, pushed to its sessions on one machine
    name@machine#pid     one exact session of that agent
    #channel             every member of a channel

Names are case-insensitive and stored in lower case. Pure: no I/O, imports only ``errors``.
The bounds of an address are named here once; the hub's schemas state them in /openapi.json.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from switchboard.errors import BadAddress, BadName

# --- the bounds of an address ------------------------------------------------------------------

PID_MAX = 2**31 - 1  # pid_t is a signed 32-bit integer (Linux's own pid_max is lower still)
PROC_START_MAX = 2**63 - 1  # a process's start time in clock ticks since boot, as /proc has it
ADDRESS_CHARS = 64 + 1 + 253 + 1 + 10  # name@machine#pid at its longest
NAME_CHARS = 64  # an agent, channel, workspace or runtime name
MACHINE_CHARS = 253  # a host name

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


Address = AgentAddress | ChannelAddress


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
    if canonical.startswith("a2a:"):
        raise BadAddress(
            f"{shown(text)!r} is an external A2A address; those are not supported yet. "
            "Send to an agent name, name@machine, name@machine#pid or #channel.",
            address=shown(text),
        )
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
