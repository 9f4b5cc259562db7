"""Imports go down only (ARCHITECTURE.md, "Layers and folders"): a check, not a convention.

Every module of src/callboard is read (ast: every import, also those inside functions or
under TYPE_CHECKING) and each import is judged by the parts of the house it joins:

- the core (the root modules) imports nothing above itself: no store, no service, no client, no face;
- store/ imports only the core;
- service/ (the service and its collaborators) imports no client, no face;
- client/ imports no face;
- a face does not import another face: cli/ is the composition root, and the few exceptions are
  listed in FACE_TO_FACE, each with its reason (the hub mounts the MCP tool set and the A2A door);
- nothing outside integrations/, cli/ and the runner's adapters imports what is particular to
  Claude Code;
- and there is no import cycle anywhere in the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import callboard

PACKAGE = Path(callboard.__file__).parent
FACES = frozenset({"mcp", "hub", "cli", "integrations", "a2a", "runner", "coord", "dashboard"})
COMPOSITION_ROOT = "cli"  # builds the program from every part: it may import any face
# What each part may not import (a face's other faces are judged by FACE_TO_FACE below).
FORBIDDEN: Mapping[str, frozenset[str]] = {
    "core": frozenset({"store", "service", "client"}) | FACES,
    "store": frozenset({"service", "client"}) | FACES,
    "service": frozenset({"client"}) | FACES,
    "client": FACES,
}
# The faces one face may import, each with why.
FACE_TO_FACE: Mapping[tuple[str, str], str] = {
    ("hub", "mcp"): "the hub mounts the MCP tool set at /mcp (hub/mcp_endpoint.py), through its public builder",
    ("hub", "a2a"): "the hub mounts the A2A door (hub/a2a_endpoint.py) over a2a/'s request handler and cards",
    ("runner", "integrations"): "a runner's adapters read the table of coding CLIs and what is particular to theirs",
    ("integrations", "runner"): "hooks stand down inside a runner's CLI: they read its marker (runner/env.py, stdlib)",
}
CLAUDE_CODE = "callboard.integrations.claude_code"
KNOWS_CLAUDE_CODE = frozenset({"integrations", "cli", "runner"})  # runner: its adapters
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
    elif mine in FACES - {COMPOSITION_ROOT} and theirs in FACES - {mine} and (mine, theirs) not in FACE_TO_FACE:
        found.append(f"{module} imports {imported}: a face ({mine}) does not import another face ({theirs})")
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


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module → the callboard modules it imports (a package is its ``__init__``)."""
    return {
        module.removesuffix(".__init__"): {
            imported
            for imported in imported_by(source, module.removesuffix(".__init__"), module.endswith(".__init__"))
            if imported.startswith("callboard.")
        }
        for module, source in sources.items()
    }


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every import cycle: the strongly connected groups of two or more modules (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_there_is_no_import_cycle() -> None:
    """Every import counts, also one inside a function or under TYPE_CHECKING: a cycle hidden
    that way is still two modules that cannot be understood one without the other."""
    assert cycles(import_graph(package_sources())) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


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
        ("callboard.service.door", "def later():\n    import callboard.hub.api\n"),
        (
            "callboard.client.local",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from callboard.mcp import tools",
        ),
        ("callboard.guards", "from callboard import client"),
        ("callboard.store.postgres.store", "from ...integrations import agent_clis"),
        ("callboard.hub.streams", "from callboard.integrations.claude_code.inject import inject_sent"),
        ("callboard.hub.api", "from callboard.integrations import claude_code"),
        ("callboard.mcp.tools", "from callboard.integrations.agent_clis import CLAUDE_CODE"),
        ("callboard.store.sqlite.messages", "from callboard.service.guards import Exchange"),
        ("callboard.reach", "from callboard.store.base import Store"),
        ("callboard.service.sending", "from callboard.hub import schemas"),
        ("callboard.a2a.server.handler", "from callboard.hub.context import Context"),
        ("callboard.mcp.tools", "from callboard.runner import loop"),
        ("callboard.runner.loop", "from callboard.hub import app"),
    ],
)
def test_the_checker_finds_an_import_that_goes_up(module: str, source: str) -> None:
    assert check({module: source}) != []


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("callboard.cli.mcp_server", "from callboard.integrations.claude_code.socket_delivery import SocketInjector"),
        ("callboard.integrations.hooks.entry", "from callboard.integrations.claude_code import waiter"),
        ("callboard.hub.api", "from callboard.client.base import Client\nfrom callboard.service.door import Service"),
        (
            "callboard.client.local",
            "from callboard.service.door import Service\nfrom ..store.opening import open_store",
        ),
        ("callboard.service.door", "from callboard.service import guard\nfrom callboard.store.base import Store"),
        ("callboard.identity", "import os\nfrom callboard.procs import parent_of"),
        (
            "callboard.store.sqlite.messages",
            "from callboard.guards import Exchange\nfrom callboard.limits import ID_CHARS",
        ),
        ("callboard.hub.mcp_endpoint", "from callboard.mcp.tools import bind_tools"),
        ("callboard.cli.team", "from callboard.runner.team import Team\nfrom callboard.hub.options import HubOptions"),
    ],
)
def test_the_checker_lets_imports_that_go_down_pass(module: str, source: str) -> None:
    assert check({module: source}) == []
