"""Every error code the program can print is listed in the README's Errors section.

The codes are collected from the source itself: each error class's ``code``, each code a face
writes by name (the CLI's ``_report``, the hub's ``error_response``/``error_document``, its table
of HTTP refusals), and each other ``code = "…"`` assignment. An error raised as one of the four
families (``NotFound``, ``Refused``, ``Invalid``, ``Unavailable``) has no code of its own and
would print ``error``: none is raised so.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
SOURCE = ROOT / "src" / "callboard"
FACE_WRITERS = {"_report", "error_response", "error_document"}  # each takes the code first
FAMILIES = {"CallboardError", "NotFound", "Refused", "Invalid", "Unavailable"}
CODE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


def _named_code(target: ast.expr) -> bool:
    return (isinstance(target, ast.Name) and target.id == "code") or (
        isinstance(target, ast.Attribute) and target.attr == "code"
    )


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def codes_in(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if _named_code(target):
                    found.add(_string(node.value) or "")
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    found |= {
                        _string(v) or "" for t, v in zip(target.elts, node.value.elts, strict=False) if _named_code(t)
                    }
                elif isinstance(target, ast.Name) and target.id == "_HTTP_CODES" and isinstance(node.value, ast.Dict):
                    found |= {_string(v) or "" for v in node.value.values}
        elif isinstance(node, ast.AnnAssign) and node.target is not None and _named_code(node.target):
            found.add(_string(node.value) or "")
        elif isinstance(node, ast.Call) and node.args:
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in FACE_WRITERS:
                found.add(_string(node.args[0]) or "")
    return {code for code in found if code}


def family_raises(tree: ast.AST) -> list[int]:
    """Lines that raise one of the families itself (its code would be ``error``)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and isinstance(node.exc.func, ast.Name)
        and node.exc.func.id in FAMILIES
    ]


def source_trees() -> dict[Path, ast.AST]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted(SOURCE.rglob("*.py"))}


def errors_section() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("### Errors")
    return readme[start : readme.index("\n#", start + 1)]


def test_every_code_the_program_can_print_is_in_the_readmes_errors_section():
    codes: set[str] = set()
    for tree in source_trees().values():
        codes |= codes_in(tree)
    codes.discard("error")  # the base class's: only a class without a code of its own shows it (below)
    assert {"bad_request", "usage", "internal", "not_found", "hub_unavailable", "runner_running"} <= codes, codes
    assert all(CODE.match(code) for code in codes), sorted(codes)
    section = errors_section()
    missing = sorted(code for code in codes if f"`{code}`" not in section)
    assert not missing, f"codes the program can print that the README's Errors section does not list: {missing}"


def test_no_error_is_raised_as_a_bare_family():
    found = {
        str(path.relative_to(ROOT)): lines for path, tree in source_trees().items() if (lines := family_raises(tree))
    }
    assert not found, f"raised without a code of its own (it would print 'error'): {found}"
