"""Words mean one thing (ARCHITECTURE.md, "Layers and folders"): no two classes of the package
share a name, so a class name found in a traceback, a log or a review names one class."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import callboard

PACKAGE = Path(callboard.__file__).parent


def class_names(source: str) -> list[str]:
    """Every class defined in ``source``, wherever (also one inside a function)."""
    return [node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)]


def shared_names(sources: dict[str, str]) -> dict[str, list[str]]:
    """Each class name defined more than once, with where (module paths, sorted)."""
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path, source in sources.items():
        for name in class_names(source):
            where[name].append(path)
    return {name: sorted(paths) for name, paths in where.items() if len(paths) > 1}


def test_no_two_classes_share_a_name() -> None:
    sources = {str(path.relative_to(PACKAGE)): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}
    assert len(sources) > 100, "the package was not found"
    assert shared_names(sources) == {}


def test_the_check_finds_a_name_defined_twice() -> None:
    sources = {
        "a.py": "class Presence:\n    pass\n",
        "b.py": "def f():\n    class Presence: ...\n",
        "c.py": "class C: ...",
    }
    assert shared_names(sources) == {"Presence": ["a.py", "b.py"]}
