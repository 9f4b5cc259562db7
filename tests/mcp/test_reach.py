"""The faces reach the mailbox through the Client interface only: the MCP tools know no
particular coding CLI (the push into Claude Code sessions is the client's, handed in where the
CLI opens it), and the hub calls the service, never its store."""

from __future__ import annotations

import ast
from pathlib import Path

import switchboard

PACKAGE = Path(switchboard.__file__).parent


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_mcp_tools_import_nothing_of_claude_code() -> None:
    for path in sorted((PACKAGE / "mcp").rglob("*.py")):
        found = [name for name in imported(path) if name.startswith("switchboard.integrations")]
        assert not found, (path.name, found)


def test_the_hub_does_not_reach_into_the_services_store() -> None:
    for path in sorted((PACKAGE / "hub").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "store":
                inner = node.value
                owner = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
                assert owner != "service", f"{path.name}:{node.lineno} reaches into service.store"
