"""The faces reach the mailbox through the Client interface only: the hub calls the service,
never its store. (That the MCP tools import no integration, so know no particular coding CLI, is
the import check's: tests/test_layers.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import callboard

PACKAGE = Path(callboard.__file__).parent


def test_the_hub_does_not_reach_into_the_services_store() -> None:
    for path in sorted((PACKAGE / "hub").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "store":
                inner = node.value
                owner = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
                assert owner != "service", f"{path.name}:{node.lineno} reaches into service.store"
