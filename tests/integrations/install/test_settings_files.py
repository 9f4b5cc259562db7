"""settings_files and toml_block: merging entries into a file's text and taking them out."""

from __future__ import annotations

import tomllib

import pytest

from callboard.integrations.install import toml_block
from callboard.integrations.install.entries import Block, Item, Member, Whole, from_dict, to_dict
from callboard.integrations.install.settings_files import FORMATS, SettingsError, merge, unmerge

JSON = FORMATS["json"]
TOML = FORMATS["toml"]
TEXT = FORMATS["text"]
HOOK = Item(("hooks", "Stop"), {"hooks": [{"type": "command", "command": "sb hook stop"}]})
SERVER = Member(("mcpServers", "callboard"), {"command": "sb", "args": ["mcp"]})
BLOCK = Block(toml_block.block('[mcp_servers.callboard]\ncommand = "sb"\n', "codex"), ("mcp_servers", "callboard"))


def test_merge_is_idempotent_and_records_what_it_added() -> None:
    first = merge(JSON, '{"a": 1}\n', [HOOK, SERVER])
    assert first.mine == [HOOK, SERVER] and first.created == [("hooks",), ("hooks", "Stop"), ("mcpServers",)]
    again = merge(JSON, first.text, [HOOK, SERVER], first.mine, [], first.created)
    assert again.text == first.text and again.mine == first.mine


def test_an_entry_the_user_already_has_is_never_claimed() -> None:
    text = '{"permissions": {"allow": ["mcp__callboard__who"]}}'
    got = merge(JSON, text, [Item(("permissions", "allow"), "mcp__callboard__who")])
    assert got.text == text and got.mine == []


def test_a_replaced_member_is_remembered_and_put_back() -> None:
    text = '{"mcpServers": {"callboard": {"command": "old"}}}'
    merged = merge(JSON, text, [SERVER])
    (recorded,) = merged.mine
    assert recorded.replaced == '{"command": "old"}'
    assert (
        to_dict(recorded)["replaced"] == recorded.replaced
        and from_dict(to_dict(recorded)).replaced == recorded.replaced
    )
    back = unmerge(JSON, merged.text, merged.mine, [], merged.created)
    assert back.text == text


def test_a_member_the_user_changed_is_kept_and_reported() -> None:
    merged = merge(JSON, "{}", [SERVER])
    edited = merged.text.replace('"sb"', '"my-sb"')
    back = unmerge(JSON, edited, merged.mine, [], merged.created)
    assert back.kept == [SERVER] and '"my-sb"' in back.text and not back.empty


def test_entries_another_install_holds_stay() -> None:
    merged = merge(JSON, "{}", [HOOK, SERVER])
    back = unmerge(JSON, merged.text, merged.mine, [SERVER], merged.created)
    assert '"callboard"' in back.text and "hook stop" not in back.text


def test_invalid_text_is_a_settings_error_with_a_line() -> None:
    with pytest.raises(SettingsError) as caught:
        merge(JSON, '{\n  "a": 1\n  "b": 2\n}', [HOOK])
    assert caught.value.line == 3
    with pytest.raises(SettingsError) as caught:
        merge(TOML, "a = 1\nb = = 2\n", [BLOCK])
    assert caught.value.line == 2


@pytest.mark.parametrize("text", ["", 'model = "o3"\n', "# c\n[x]\ny = 1\n\n", "[x]\ny = 1\n\n\n"])
def test_the_toml_block_comes_out_exactly(text: str) -> None:
    merged = merge(TOML, text or None, [BLOCK])
    assert tomllib.loads(merged.text)["mcp_servers"]["callboard"] == {"command": "sb"}
    assert merged.text.startswith(text) and merged.text.endswith("# <<< callboard\n")
    back = unmerge(TOML, merged.text, merged.mine, [], [])
    assert back.text == text


def test_an_old_block_is_replaced_in_place_never_doubled() -> None:
    old = toml_block.block('[mcp_servers.callboard]\ncommand = "/old/sb"\n', "codex")
    text = f"a = 1\n\n{old}\n[after]\nb = 2\n"
    merged = merge(TOML, text, [BLOCK])  # even with no record of the old one
    assert merged.text == f"a = 1\n\n{BLOCK.text}\n[after]\nb = 2\n"
    assert tomllib.loads(merged.text)["after"] == {"b": 2}


def test_a_block_that_would_break_the_file_is_refused() -> None:
    with pytest.raises(SettingsError, match="invalid TOML"):
        merge(TOML, "mcp_servers = { other = { command = 'x' } }\n", [BLOCK])


def test_a_text_file_of_the_users_is_left_alone() -> None:
    mine = Whole("our command\n")
    got = merge(TEXT, "their command\n", [mine])
    assert got.text == "their command\n" and got.mine == [] and got.notes
    created = merge(TEXT, None, [mine])
    assert created.text == "our command\n"
    assert unmerge(TEXT, "our command\n", created.mine, [], []).empty
    assert not unmerge(TEXT, "edited\n", created.mine, [], []).empty
