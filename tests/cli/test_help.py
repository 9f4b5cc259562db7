"""Help and version: ``callboard --version``; ``-h`` is ``--help`` on every command and group; help
names each value by what it is (SECONDS, FILE, NAME), never by its Python type.

The help of every command is read in this process (the real entry point, ``main.run_command``:
some sixty commands, each a subprocess would cost seconds); ``--version`` and ``-h`` run as the
real ``callboard`` command too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from callboard.cli.main import ALL_MODULES, command_for, run_command
from tests.support.cli_runner import CLI

ROOT = Path(__file__).parents[2]

# What typer writes for a value with no metavar of its own (older typer: TEXT, INTEGER, …; newer:
# <str>, <int>, …): the Python type, which tells a user nothing. ``<path or url>`` and choices
# (``<user|project>``) are fine.
PYTHON_TYPES = re.compile(
    r"<(?:str|int|float|bool|path|file|dir|datetime|uuid|list\[[^>]*\]|tuple\[[^>]*\])>"
    r"|(?:^|\s)-[-\w]+ (?:TEXT|INTEGER|FLOAT|BOOLEAN|PATH|FILENAME|DIRECTORY)\b"
    r"|^\s+(?:TEXT|INTEGER|FLOAT|BOOLEAN|PATH)\b"
    r"|\b(?:TEXT|INTEGER|FLOAT|BOOLEAN|PATH)(?:\.\.\.)?\s*$",
    re.MULTILINE,
)


def command_paths() -> list[tuple[str, ...]]:
    """Every command and group of the app, as the words that name it (the root as ())."""
    found: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, (*path, name))

    walk(command_for([]), ())
    assert {p[0] for p in found if p} >= {"send", "read", "install", "up", "team"}
    return found


def help_of(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    try:
        run_command(args)
    except SystemExit as done:
        assert done.code in (0, None), (args, done.code, capsys.readouterr())
    out, err = capsys.readouterr()
    assert err == "", (args, err)
    return out


PATHS = command_paths()


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "callboard")
def test_h_is_help_and_help_shows_no_python_types(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]):
    full = help_of([*path, "--help"], capsys)
    assert full.startswith(f"Usage: callboard {' '.join(path)}".rstrip()), full
    assert help_of([*path, "-h"], capsys) == full
    shown = PYTHON_TYPES.findall(full)
    assert not shown, f"'callboard {' '.join(path)} --help' names a value by its type: {shown}\n{full}"


# The commands without --json, as the README names them (its "Every command takes `--json`" line).
NO_JSON = {"up", "mcp", "run", "demo"}


def test_every_command_takes_json_but_the_four_the_readme_names():
    commands = [p for p in PATHS if p and not hasattr(_command(p), "commands")]
    without = {" ".join(p) for p in commands if "--json" not in _options(_command(p))}
    assert without == NO_JSON
    readme = (ROOT / "README.md").read_text()
    line = next(p for p in readme.split("\n\n") if p.startswith("Every command takes `--json`"))
    assert all(f"`{name}`" in line for name in NO_JSON) and "but for four" in line, line


def _options(command: object) -> set[str]:
    return {name for param in command.params for name in getattr(param, "opts", [])}  # type: ignore[attr-defined]


def _command(path: tuple[str, ...] | list[str]) -> object:
    command: object = command_for([])
    for word in path:
        command = command.commands[word]  # type: ignore[attr-defined]
    return command


def test_the_walk_saw_every_module():
    """A command module that failed to register would shrink the walk to nothing worth checking."""
    assert len(ALL_MODULES) > 10 and len(PATHS) > 50


@pytest.mark.e2e
def test_version_and_h_as_the_real_command(tmp_path: Path):
    cli = CLI(tmp_path)
    proc = cli.run("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"callboard {version('callboard')}\n"
    for args in (["-h"], ["send", "-h"], ["channel", "-h"], ["task", "update", "-h"]):
        proc = cli.run(*args, agent="alice")
        assert proc.returncode == 0, (args, proc.stderr)
        assert proc.stdout.startswith(f"Usage: callboard {' '.join(args[:-1])}".rstrip()), proc.stdout
    hook = cli.run("hook", "-h")
    assert hook.returncode == 0 and hook.stdout.startswith("usage: callboard hook"), hook


@pytest.mark.e2e
def test_version_loads_no_command(tmp_path: Path):
    """``callboard --version`` answers before typer, rich, pydantic or a command module loads."""
    cli = CLI(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "callboard", "--version"],
        env=cli.env(),
        cwd=cli.workdir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("callboard "), proc
    modules = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)", proc.stderr, re.M))
    heavy = {m for m in modules if m.split(".")[0] in ("typer", "click", "rich", "pydantic", "httpx")}
    assert not heavy and "callboard.cli.app" not in modules, sorted(heavy)


# --- what the documents name exists ---------------------------------------------------------------

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_TYPER = {"hook"}  # `callboard hook` answers before typer loads (integrations/hooks/entry.py)
OPTION = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


SHELL_OPERATOR = re.compile(r"\s(?:\|\|?|&&|;|>|<|\))")


def _mentions() -> list[tuple[str, bool]]:
    """Each place the documents show a command: a code span or shell line with ``callboard …`` in
    it (from that word on: it must name a command), and a table's first column, which names one
    when its first word is a command (``send TO MESSAGE [--subject S]``; else an address, a CLI…)."""
    found: list[tuple[str, bool]] = []
    for document in DOCUMENTS:
        text = document.read_text()
        spans = re.findall(r"`([^`\n]*\bcallboard [^`\n]*)`", text)
        for block in re.findall(r"^```(?:bash|sh)[^\n]*\n(.*?)^```", text, re.M | re.S):
            spans += [line.split(" #")[0] for line in block.splitlines() if not line.lstrip().startswith("#")]
        for span in spans:
            # A command ends where the shell's next operator begins (a pipe, &&, ;, a redirection).
            found += [
                (SHELL_OPERATOR.split(m.group(1))[0], True)
                for m in re.finditer(r"\bcallboard ([a-z].*?)(?=\bcallboard |$)", span)
            ]
        found += [(row, False) for row in re.findall(r"^\| `([a-z][^`]*)` \|", text, re.M)]
    return found


def test_every_command_and_option_the_documents_name_exists():
    root = command_for([])
    wrong: list[str] = []
    for mention, strict in _mentions():
        for shown in mention.split(" / "):  # `install CLIENT` / `uninstall CLIENT`
            words, command, path = shown.split(), root, []
            for word in words:
                name = word.split("/")[0]  # `channel create/join/leave`
                if not hasattr(command, "commands") or name not in command.commands:
                    break
                command, path = command.commands[name], [*path, name]
            if not path:
                if strict and words[0] not in NOT_TYPER:
                    wrong.append(f"no command: {shown!r}")
                continue
            if hasattr(command, "commands"):
                continue
            options = _options(command) | {"--help", "-h"}
            wrong += [f"{' '.join(path)} has no {o}: {shown!r}" for o in OPTION.findall(shown) if o not in options]
    assert not wrong, "\n".join(sorted(set(wrong)))
