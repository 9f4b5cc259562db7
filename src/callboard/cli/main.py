"""The console entry point: run a command; turn every failure into one clear line.

Errors a user can act on print ``error: <code>: <sentence>`` (or, with ``--json``, a JSON
object on stdout) and exit 2. No traceback is shown unless CALLBOARD_DEBUG is set.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typer loads only when a command needs it (tests/cli/test_warm.py)
    from typer.core import TyperGroup

EXIT_USER_ERROR = 2
EXIT_INTERNAL = 1

# The module that registers each top-level command: a command loads only its own module, not all
# of them (tests/cli/test_lean_start.py checks this table against the app).
COMMAND_MODULES = {
    "send": "messaging",
    "reply": "messaging",
    "read": "messaging",
    "inbox": "messaging",
    "ack": "messaging",
    "status": "messaging",
    "audit": "audit",
    "demo": "demo",
    "whoami": "directory",
    "who": "directory",
    "agent": "directory",
    "session": "directory",
    "workspace": "directory",
    "up": "hub",
    "login": "hub",
    "logout": "hub",
    "token": "hub",
    "import-inbox": "import_inbox",
    "mcp-config": "mcp_config",
    "install": "install",
    "uninstall": "install",
    "mcp": "mcp_server",
    "channel": "channels",
    "task": "tasks",
    "delegate": "tasks",
    "coordinate": "rounds",
    "round": "rounds",
    "handoff": "handoff",
    "lease": "leases",
    "run": "runner",
    "runner": "runner",
    "team": "team",
}
# Modules that add subcommands to another module's command group, loaded with it (agent
# add-remote / remove-remote are remotes', on directory's agent group).
SUBCOMMAND_MODULES = {"directory": ("remotes",)}
ALL_MODULES = tuple(
    dict.fromkeys([*COMMAND_MODULES.values(), *(m for more in SUBCOMMAND_MODULES.values() for m in more)])
)


def _report(code: str, message: str, as_json: bool) -> None:
    if as_json:
        import json

        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        # The message may quote what others chose (a name, a hub's or an outside agent's words):
        # one line, its control and bidirectional characters escaped, as every face shows them.
        from callboard.fence import one_line

        sys.stderr.write(f"error: {one_line(code)}: {one_line(message)}\n")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:  # before typer and the commands load: a version check is instant
        from callboard import __version__

        sys.stdout.write(f"callboard {__version__}\n")
        return
    from callboard.cli import warm_client

    # The everyday commands and the hooks go to the warm server (started on first use) when it
    # runs: this process then loads nothing of the package beyond the thin client.
    if (code := warm_client.run(args)) is not None:
        sys.exit(code)
    run_command(args)


def run_command(args: list[str]) -> None:
    """Run one command in this process (the warm server's fork runs it for a thin client)."""
    if args[:1] == ["hook"]:
        # Hooks run on every prompt and tool call: they start before typer and the commands load,
        # and never fail their host (see callboard.integrations.hooks.entry).
        from callboard.integrations.hooks.entry import run

        sys.exit(run(args[1:]))
    run_typer_command(args)


_built: tuple[frozenset[str], TyperGroup] | None = None  # the click group, and the modules it was built from


def command_for(args: list[str]) -> TyperGroup:
    """The click command that runs ``args``; importing a command module registers its commands on
    the app, so a known command loads only its own module (typer builds every registered one).
    Built once per set of loaded modules: the warm server builds it with all of them before it
    forks; a process that runs several commands (tests) rebuilds it when one loads another module."""
    global _built
    import importlib

    import typer.main

    from callboard.cli.app import app, plain_metavars

    module = COMMAND_MODULES.get(args[0]) if args else None
    wanted = ALL_MODULES if module is None else (module, *SUBCOMMAND_MODULES.get(module, ()))
    for module in wanted:
        importlib.import_module(f"callboard.cli.{module}")
    loaded = frozenset(m for m in ALL_MODULES if f"callboard.cli.{m}" in sys.modules)
    if _built is None or _built[0] != loaded:
        # Always the group (get_command would make an app of one registered command that command).
        _built = (loaded, plain_metavars(typer.main.get_group(app)))
    return _built[1]


def run_typer_command(args: list[str]) -> None:
    import typer

    from callboard.errors import CallboardError

    as_json = "--json" in args
    try:
        # Outside standalone mode click hands back a command's typer.Exit code instead of exiting.
        code = command_for(args).main(args=args, prog_name="callboard", standalone_mode=False)
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except CallboardError as error:
        _report(error.code, error.message, as_json)
        sys.exit(EXIT_USER_ERROR)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except typer.TyperException as error:  # usage errors: unknown option, missing argument…
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare 'callboard channel': its help
            sys.stderr.write(error.format_message() + "\n")
            sys.exit(EXIT_USER_ERROR)
        context = getattr(error, "ctx", None)
        message = error.format_message().rstrip()
        message += "" if message.endswith((".", "?", "!")) else "."
        hint = f" Try '{context.command_path} --help'." if context is not None else ""
        _report("usage", message + hint, as_json)
        sys.exit(EXIT_USER_ERROR)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as error:
        if os.environ.get("CALLBOARD_DEBUG"):
            raise
        _report("internal", f"{type(error).__name__}: {error} (set CALLBOARD_DEBUG=1 for a traceback)", as_json)
        sys.exit(EXIT_INTERNAL)
