"""The console entry point: run a command; turn every failure into one clear line.

Errors a user can act on print ``error: <code>: <sentence>`` (or, with ``--json``, a JSON
object on stdout) and exit 2. No traceback is shown unless SWITCHBOARD_DEBUG is set.
"""

from __future__ import annotations

import json
import os
import sys

EXIT_USER_ERROR = 2
EXIT_INTERNAL = 1


def _report(code: str, message: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        sys.stderr.write(f"error: {code}: {message}\n")


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        # Hooks run on every prompt and tool call: they start before typer and the commands load,
        # and never fail their host (see switchboard.hooks.entry).
        from switchboard.hooks.entry import run

        sys.exit(run(args[1:]))
    _run_command(args)


def _run_command(args: list[str]) -> None:
    import typer

    # Importing the command modules registers their commands on the app.
    from switchboard.cli import (  # noqa: F401
        audit,
        channels,
        demo,
        directory,
        hub,
        import_inbox,
        install,
        mcp_config,
        mcp_server,
        messaging,
    )
    from switchboard.cli.app import app
    from switchboard.errors import SwitchboardError

    as_json = "--json" in args
    try:
        # Outside standalone mode click hands back a command's typer.Exit code instead of exiting.
        code = app(args=args, prog_name="switchboard", standalone_mode=False)
        if isinstance(code, int) and code != 0:
            sys.exit(code)
    except SwitchboardError as error:
        _report(error.code, error.message, as_json)
        sys.exit(EXIT_USER_ERROR)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except typer.TyperException as error:  # usage errors: unknown option, missing argument…
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare 'switchboard channel': its help
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
        if os.environ.get("SWITCHBOARD_DEBUG"):
            raise
        _report("internal", f"{type(error).__name__}: {error} (set SWITCHBOARD_DEBUG=1 for a traceback)", as_json)
        sys.exit(EXIT_INTERNAL)
