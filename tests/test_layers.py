"""Imports go down only (ARCHITECTURE.md, "Layers and folders"): a check, not a convention.

Every module of src/callboard is read (ast: every import, also those inside functions or
under TYPE_CHECKING) and each import is judged by the parts of the house it joins:

- the core (the root modules) and store/ import no client, no face;
- client/ imports no face, and mcp/ (the tool set, bound to any Client) no other face;
- a2a/ (cards, the request handler, outside agents) imports nothing of hub/, whose door it is served by;
- delivery/ (the service's mail collaborators and delivery-state rules) imports no client, no face;
- nothing outside integrations/ and cli/ imports what is particular to Claude Code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import callboard

PACKAGE = Path(callboard.__file__).parent
FACES = frozenset({"mcp", "hub", "cli", "integrations", "a2a", "runner", "coord", "dashboard"})
# What each part may not import.
FORBIDDEN: Mapping[str, frozenset[str]] = {
    "core": frozenset({"client"}) | FACES,
    "store": frozenset({"client"}) | FACES,
    "delivery": frozenset({"client"}) | FACES,
    "client": FACES,
    "mcp": FACES - {"mcp"},  # the tool set is bound to any Client: it knows no other face, no coding CLI
    "a2a": frozenset({"hub"}),  # A2A's own parts; its door into the hub is the hub's (hub/a2a_endpoint.py)
}
CLAUDE_CODE = "callboard.integrations.claude_code"
KNOWS_CLAUDE_CODE = frozenset({"integrations", "cli", "runner"})  # runner: its adapters, when it comes
# Imports known to go the wrong way, each with the change that removes it. Keep this empty: an
# entry no longer needed fails the test below, so none outlives its fix.
KNOWN: Mapping[str, str] = {}


def part_of(module: str) -> str:
    """The part of the house a module belongs to: its folder under the package, or "core"."""
    pieces = module.split(".")
    if pieces[0] != "callboard":
        return "outside"
    if len(pieces) == 1:
        return "core"  # the package's own __init__
    if pieces[1] == "__main__":
        return "entry"  # `python -m callboard`: the program's door, above every part
    if len(pieces) == 2 and (PACKAGE / f"{pieces[1]}.py").is_file() or pieces[1] == "__init__":
        return "core"
    return pieces[1]


def is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of callboard (not a name defined in one)."""
    path = PACKAGE.joinpath(*name.split(".")[1:])
    return path.with_suffix(".py").is_file() or path.is_dir()


def imported_by(source: str, module: str, is_package: bool = False) -> Iterator[str]:
    """Every callboard module ``source`` (the text of ``module``) imports, wherever the import is."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing module's package
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from package import module` imports that module
                yield f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base


def violations(module: str, imported: str) -> list[str]:
    """What is wrong with ``module`` importing ``imported`` (nothing, usually)."""
    if not imported.startswith("callboard."):
        return []
    found = []
    mine, theirs = part_of(module), part_of(imported)
    if theirs in FORBIDDEN.get(mine, ()):
        found.append(f"{module} imports {imported}: {mine} may not import {theirs} (imports go down only)")
    claude_code = imported == CLAUDE_CODE or imported.startswith(CLAUDE_CODE + ".")
    if claude_code and mine not in KNOWS_CLAUDE_CODE:
        found.append(f"{module} ({mine}) imports {imported}: only integrations/ and cli/ know Claude Code")
    return found


def check(sources: Mapping[str, str]) -> list[str]:
    """Every violation in ``sources`` (module name → its text)."""
    return sorted(
        {
            problem
            for module, source in sources.items()
            for imported in imported_by(source, module.removesuffix(".__init__"), module.endswith(".__init__"))
            for problem in violations(module.removesuffix(".__init__"), imported)
        }
    )


def package_sources() -> dict[str, str]:
    return {
        "callboard." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts): path.read_text()
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_imports_go_down_only() -> None:
    sources = package_sources()
    assert len(sources) > 100, "the package was not found"
    found = check(sources)
    assert [problem for problem in found if problem not in KNOWN] == []
    assert [known for known in KNOWN if known not in found] == [], "fixed: take it out of KNOWN"


# --- the checker itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("callboard.store.sqlite.store", "from callboard.cli.app import app"),
        ("callboard.service", "def later():\n    import callboard.hub.api\n"),
        (
            "callboard.client.local",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from callboard.mcp import tools",
        ),
        ("callboard.delivery.guard", "from callboard import client"),
        ("callboard.store.postgres.store", "from ...integrations import agent_clis"),
        ("callboard.hub.streams", "from callboard.integrations.claude_code.push import push_sent"),
        ("callboard.hub.api", "from callboard.integrations import claude_code"),
        ("callboard.mcp.tools", "from callboard.integrations.agent_clis import CLAUDE_CODE"),
    ],
)
def test_the_checker_finds_an_import_that_goes_up(module: str, source: str) -> None:
    assert len(check({module: source})) == 1


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("callboard.cli.mcp_server", "from callboard.integrations.claude_code.socket_delivery import SocketPusher"),
        ("callboard.integrations.hooks.entry", "from callboard.integrations.claude_code import waiter"),
        ("callboard.hub.api", "from callboard.client.base import Client\nfrom callboard.service import Service"),
        ("callboard.client.local", "from callboard.service import Service\nfrom ..store.opening import open_store"),
        ("callboard.service", "from callboard.delivery import guard\nfrom callboard.store.base import Store"),
        ("callboard.identity", "import os\nfrom callboard.procs import parent_of"),
    ],
)
def test_the_checker_lets_imports_that_go_down_pass(module: str, source: str) -> None:
    assert check({module: source}) == []
