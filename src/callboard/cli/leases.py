"""lease: advisory claims on paths of a repository (``leases.py``), so that two agents do not edit
the same files without knowing it.

``callboard lease PATH…`` takes one (it is ``lease take``); ``list``, ``renew``, ``release`` and
``check`` go with it. Paths are taken relative to the working folder and stored relative to the
repository's root; the repository is named by its normalised remote (else this machine and its
root), so two clones on two machines are the same. ``check`` is read-only: exit 1 when another
agent holds one of the paths exclusively (``--staged``: the files ``git commit`` would take).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from callboard.cli import render
from callboard.cli.app import DbOption, JsonOption, app, open_client
from callboard.coord.repository import git, repository_of, scope_of
from callboard.errors import BadRequest
from callboard.identity import machine_name
from callboard.leases import TTL_DEFAULT_SECONDS, Lease
from callboard.requests import LeaseCheck, LeaseRelease, LeaseRenewal, LeaseRequest


class _TakeByDefault(TyperGroup):
    """``lease PATH…`` is ``lease take PATH…``: a first word that is no subcommand is a path."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: typer's own click Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["take", *args]
        return super().parse_args(ctx, args)


lease_app = typer.Typer(
    cls=_TakeByDefault,
    help="Advisory leases on paths of this repository: lease PATH…, list, renew, release, check.",
    no_args_is_help=True,
)
app.add_typer(lease_app, name="lease")

PathsArgument = Annotated[list[str], typer.Argument(metavar="FILES", help="Paths or globs, from this folder.")]


class Here:
    """The repository the working folder is in, and paths as its root sees them."""

    def __init__(self) -> None:
        repository = repository_of(Path.cwd())
        if repository is None:
            raise BadRequest("not in a git repository: a lease names paths of one (run it inside the repository).")
        self.root = Path(repository.root)
        self.scope = scope_of(repository, machine_name(os.environ))

    def relative(self, given: str) -> str:
        """``given`` (from the working folder, or the root if absolute) relative to the root."""
        path = Path(given)
        full = path if path.is_absolute() else Path.cwd() / path
        try:
            inside = os.path.relpath(full.resolve() if full.exists() else full, self.root.resolve())
        except ValueError:
            inside = given
        return inside + ("/" if given.endswith("/") or (full.is_dir() and not inside.endswith("/")) else "")


@lease_app.command("take")
def lease_take(
    paths: PathsArgument,
    ttl: Annotated[float, typer.Option("--ttl", metavar="S", help="Seconds until it ends (renew to keep it).")] = (
        TTL_DEFAULT_SECONDS
    ),
    shared: Annotated[bool, typer.Option("--shared", help="Others may hold it too (a reader's lease).")] = False,
    reason: Annotated[Optional[str], typer.Option("--reason", metavar="WHY", help="Why, for the others.")] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Take a lease on paths (a folder covers what is under it): granted, with its conflicts listed."""
    here = Here()
    request = LeaseRequest(
        scope=here.scope, patterns=[here.relative(p) for p in paths], ttl=ttl, shared=shared, reason=reason
    )
    with open_client(db) as client:
        taken = client.take_lease(request)

    def human() -> None:
        lease = taken.lease
        kind = "shared" if lease.shared else "exclusive"
        render.console.print(
            f"lease {render.peer(lease.id)} ({kind}) on {render.peer(', '.join(lease.patterns))} "
            f"until {render.when(lease.expires_at)}"
        )
        for other in taken.conflicts:
            sys.stderr.write(f"conflict: {_line(other)}\n")

    render.emit(taken, as_json, human)


@lease_app.command("list")
def lease_list(
    every: Annotated[bool, typer.Option("--all", help="Every agent's, not only yours.")] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Active leases: yours (--all: the workspace's), in every repository."""
    with open_client(db) as client:
        leases = client.list_leases(every=every)
    render.emit(leases, as_json, lambda: _table(leases))


@lease_app.command("renew")
def lease_renew(
    ids: Annotated[Optional[list[str]], typer.Argument(metavar="[ID...]", help="Default: all of yours.")] = None,
    ttl: Annotated[float, typer.Option("--ttl", metavar="S", help="Seconds from now.")] = TTL_DEFAULT_SECONDS,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Keep your leases for another --ttl seconds."""
    with open_client(db) as client:
        renewed = client.renew_leases(LeaseRenewal(ids=ids or [], ttl=ttl))
    render.emit(renewed, as_json, lambda: _table(renewed))


@lease_app.command("release")
def lease_release(
    targets: Annotated[
        Optional[list[str]], typer.Argument(metavar="[ID|FILES]", help="Default: all of yours here.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Release another agent's lease by id (a person).")] = False,
    reason: Annotated[Optional[str], typer.Option("--reason", metavar="WHY", help="Why (--force: required).")] = None,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Release leases: yours by id or by path; --force ID --reason R releases another's (audited)."""
    given = targets or []
    ids = [t for t in given if _is_id(t)]
    paths = [t for t in given if not _is_id(t)]
    here = Here() if paths or not force else None
    request = LeaseRelease(
        ids=ids,
        patterns=[here.relative(p) for p in paths] if here else [],
        scope=here.scope if here and not ids else None,
        force=force,
        reason=reason,
    )
    with open_client(db) as client:
        released = client.release_leases(request)
    render.emit(
        {"released": released},
        as_json,
        lambda: render.console.print(f"released {render.counted(len(released), 'lease')}"),
    )


@lease_app.command("check")
def lease_check(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="[FILES]", help="Paths to check.")] = None,
    staged: Annotated[bool, typer.Option("--staged", help="The files staged for the next commit.")] = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Whether another agent holds any of these paths exclusively (read-only): exit 1 if so."""
    here = Here()
    wanted = [here.relative(p) for p in paths or []]
    if staged:
        names = git(here.root, "diff", "--cached", "--name-only", "-z") or ""
        wanted += [name for name in names.split("\0") if name]
    if not wanted:
        document: dict[str, Any] = {"paths": [], "blocking": []}
        render.emit(document, as_json, lambda: render.console.print("nothing to check"))
        return
    with open_client(db) as client:
        blocking = client.check_leases(LeaseCheck(scope=here.scope, paths=wanted))
    document = {"paths": wanted, "blocking": render.jsonable(blocking)}

    def human() -> None:
        if not blocking:
            render.console.print(f"no other agent holds {render.counted(len(wanted), 'path')} exclusively")
        for other in blocking:
            sys.stderr.write(f"held: {_line(other)}\n")

    render.emit(document, as_json, human)
    if blocking:
        raise typer.Exit(1)


def _is_id(text: str) -> bool:
    return len(text) == 36 and text.count("-") == 4 and all(c in "0123456789abcdef-" for c in text.lower())


def _line(lease: Lease) -> str:
    why = f" ({lease.reason})" if lease.reason else ""
    kind = "shared" if lease.shared else "exclusive"
    return f"{lease.agent} holds {', '.join(lease.patterns)} ({kind}, lease {lease.id}){why}"


def _table(leases: list[Lease]) -> None:
    if not leases:
        render.console.print("no active leases")
        return
    grid = render.table("id", "agent", "paths", "kind", "until", "repository")
    for lease in leases:
        grid.add_row(
            render.peer(lease.id),
            render.peer(lease.agent),
            render.peer(", ".join(lease.patterns)),
            "shared" if lease.shared else "exclusive",
            render.when(lease.expires_at),
            render.peer(lease.scope),
        )
    render.console.print(grid)
