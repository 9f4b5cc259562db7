"""up, login, logout, token …: serving the store as a hub, and the credentials to reach one."""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from callboard.address import parse_name
from callboard.cli import render
from callboard.cli.app import AsAdminOption, DbOption, JsonOption, app
from callboard.cli.waiting import saying_after
from callboard.client.hub import HubClient
from callboard.client.opening import admin_client
from callboard.client.opening import open_client as client_for
from callboard.config import Settings, clear_login, hub_urls, kept_login, save_login
from callboard.errors import BadRequest, HubUnavailable
from callboard.limits import DEFAULT_WINDOW_SECONDS
from callboard.tokens import TokenInfo

token_app = typer.Typer(help="Hub credentials: create, list and revoke tokens.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@app.command()
def up(
    host: Annotated[
        str,
        typer.Option("--host", help="The address to listen on (0.0.0.0 for other machines: needs TLS, or --insecure)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port (0 picks a free one).")] = 8465,
    rate_limit: Annotated[
        float, typer.Option("--rate-limit", help="Requests per second per credential; 0 for none.")
    ] = 2000.0,
    tls_cert: Annotated[
        Optional[Path], typer.Option("--tls-cert", help="Serve HTTPS with this certificate (PEM; with --tls-key).")
    ] = None,
    tls_key: Annotated[Optional[Path], typer.Option("--tls-key", help="The certificate's private key (PEM).")] = None,
    liveness_seconds: Annotated[
        float,
        typer.Option(
            "--liveness-seconds",
            help="A session is live while it reports within this many seconds; a machine is down when none of its sessions did.",
        ),
    ] = DEFAULT_WINDOW_SECONDS,
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Serve plain HTTP beyond loopback anyway (tokens and mail in clear).")
    ] = False,
    max_streams: Annotated[
        int,
        typer.Option(
            "--max-streams",
            help="SSE streams and waiting reads (read/surface with wait) one token may hold open at once.",
        ),
    ] = 4000,
    public_url: Annotated[
        Optional[str],
        typer.Option(
            "--public-url", help="The hub's URL as A2A callers reach it (agent cards); else each request's Host."
        ),
    ] = None,
    a2a_compat_0_3: Annotated[
        bool, typer.Option("--a2a-compat-0-3", help="Also answer A2A 0.3 clients on the A2A endpoints.")
    ] = False,
    allow_private_webhooks: Annotated[
        bool,
        typer.Option(
            "--allow-private-webhooks", help="Let A2A push notifications go to loopback and private addresses."
        ),
    ] = False,
    allow_private_remotes: Annotated[
        bool,
        typer.Option(
            "--allow-private-remotes",
            help="Let outside A2A agents live on private addresses (always allowed on a loopback hub).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Serve this machine's store as a hub: REST /v1, SSE, long-poll; other machines log in to it."""
    from callboard.hub.options import HubOptions, check_options, hub_url, listen
    from callboard.hub.store_claim import claim_store

    if not 0 <= port <= 65535:
        raise BadRequest(f"port {port} is not a port number (0-65535).")
    options = HubOptions(
        host=host,
        port=port,
        rate_limit=rate_limit,
        tls_cert=tls_cert,
        tls_key=tls_key,
        insecure=insecure,
        liveness_seconds=liveness_seconds,
        max_streams=max_streams,
        public_url=public_url,
        a2a_compat_0_3=a2a_compat_0_3,
        allow_private_webhooks=allow_private_webhooks,
        allow_private_remotes=allow_private_remotes,
    )
    # Bad options, a taken port, a store another hub serves: said at once, before the hub loads.
    check_options(options)
    listener = listen(options.host, options.port)
    settings = Settings.load(db=db, fall_back=False)
    url = hub_url(listener.getsockname(), options.tls_cert is not None)
    claim = claim_store(settings.db_path, url) if settings.db_url is None else None  # PostgreSQL takes replicas
    with saying_after("starting the hub…"):  # its imports take seconds on a slow machine
        from callboard.hub.server import serve  # the hub's imports cost start-up time elsewhere
    serve(settings, options, listener, claim)


@app.command()
def login(
    url: Annotated[
        str,
        typer.Argument(
            help="The hub's address, e.g. https://build-box:8465; several replicas of one hub: comma-separated."
        ),
    ],
    token: Annotated[
        Optional[str],
        typer.Option(
            "--token",
            help="A token from 'callboard token create'; '-' reads it from standard input. Without it: "
            "CALLBOARD_TOKEN, else standard input when piped, else a hidden prompt.",
        ),
    ] = None,
    ca_cert: Annotated[
        Optional[Path],
        typer.Option("--ca-cert", help="A CA file (PEM) that signed the hub's certificate, if not a public CA."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Use a hub from this machine: every command then goes there (saved 0600 in the config file).

    The login in use before is kept: 'callboard login' its address again goes back, with the
    token kept for it (as for any hub this machine logged in to before)."""
    urls = hub_urls(url)
    for one in urls:
        if not one.startswith(("http://", "https://")):
            raise BadRequest(f"{one!r} is not a hub address: use http://HOST:PORT (several replicas: comma-separated).")
    url = ",".join(urls)
    settings = Settings.load()
    kept = (
        kept_login(settings.home, url) if token is None and not os.environ.get("CALLBOARD_TOKEN", "").strip() else None
    )
    token = kept.token if kept is not None and kept.token else _login_token(token)
    saved_ca = str(ca_cert.expanduser().resolve()) if ca_cert is not None else (kept.ca_cert if kept else None)
    client = HubClient(url, token, ca_cert=saved_ca or settings.ca_cert)  # CALLBOARD_CA_CERT without --ca-cert
    try:
        tokens = client.list_tokens()  # proves the address, the certificate and the token before saving them
    finally:
        client.close()
    before = settings.hub
    path = save_login(settings.home, url, token, saved_ca)
    mine = tokens[0] if len(tokens) == 1 else None
    result = {
        "hub": url,
        "config": str(path),
        "token_kind": mine.kind if mine else None,
        "ca_cert": saved_ca,
        "kept_token": kept is not None,
        "previous_hub": before if before != url else None,
    }

    def human() -> None:
        how = "with the token kept for it" if kept is not None else f"saved in {path}"
        render.console.print(f"logged in to {url} [dim]({how})[/]")
        if before is not None and before != url:
            render.console.print(f"[dim]the login to {before} is kept: 'callboard login {before}' goes back[/]")

    render.emit(result, as_json, human)


def _login_token(given: str | None) -> str:
    """The token to log in with, from where it does not show in shell history or ``ps``: standard
    input (``--token -``, or a pipe), CALLBOARD_TOKEN, or a prompt that does not echo it."""
    if given is None:
        given = os.environ.get("CALLBOARD_TOKEN", "").strip() or ("-" if not sys.stdin.isatty() else None)
    if given is None:
        given = getpass.getpass("token (not shown): ")
    elif given == "-":
        given = sys.stdin.read()
    words = given.split()
    if len(words) != 1:
        what = "the token is one word; what was given has several" if words else "no token given"
        raise BadRequest(
            f"{what}: pipe it in (callboard login URL --token - < token-file), set CALLBOARD_TOKEN, "
            "or run login in a terminal to be asked for it."
        )
    return words[0]


@app.command()
def logout(as_json: JsonOption = False) -> None:
    """Forget the hub in use, and its token: commands use this machine's embedded store again."""
    settings = Settings.load()
    path = clear_login(settings.home, settings.hub)
    render.emit(
        {"hub": None, "forgot": settings.hub, "config": str(path)},
        as_json,
        lambda: render.console.print(
            f"logged out of {settings.hub}; using the embedded store" if settings.hub else "using the embedded store"
        ),
    )


@contextmanager
def _hub_client(db: str | None, as_admin: bool) -> Iterator[HubClient]:
    settings = Settings.load(db=db)
    client = admin_client(settings) if as_admin else client_for(settings)
    try:
        if not isinstance(client, HubClient):
            raise HubUnavailable(
                "tokens belong to a hub: start one with 'callboard up', or 'callboard login URL' (it asks for the token)."
            )
        yield client
    finally:
        client.close()


def _issuer_for(login: HubClient, workspace: str, db: str | None) -> HubClient:
    """Who issues a token for ``workspace``: this machine's login, or, when the login's token
    belongs to another workspace and this is the hub's own machine (its first 'up' kept the
    admin token, for this very hub), the kept admin token, as --as-admin would, said on stderr.

    The hub's rule stands: a user token never mints tokens for another workspace over the wire.
    Only the machine that already holds the admin token (0600, beside the login) uses it, and
    the person sees that it did."""
    settings = Settings.load(db=db)
    kept = settings.admin_token is not None and settings.admin_hub in settings.hub_urls
    named = parse_name(workspace, "workspace name")
    if not kept or named in {w.name for w in login.list_workspaces()}:
        return login  # the login's own workspace (or no admin token here: the hub says what it allows)
    sys.stderr.write(
        f"note: this machine's login cannot create tokens for workspace {workspace}; using the hub's "
        "admin token this machine keeps (as --as-admin does).\n"
    )
    return admin_client(settings)


def _print_token(token: TokenInfo, console: Console = render.console) -> None:
    scope = "every workspace" if token.kind == "admin" else f"workspace {token.workspace}"
    who = f" as {token.agent}" if token.agent else ""
    revoked = f" [red]revoked {render.when(token.revoked_at)}[/]" if token.revoked_at else ""
    console.print(f"{token.id}  {token.kind}{who} in {scope}{revoked}")


@token_app.command("create")
def token_create(
    agent: Annotated[Optional[str], typer.Option("--agent", help="An agent token: acts as this agent only.")] = None,
    workspace: Annotated[
        Optional[str], typer.Option("--workspace", help="The workspace (admin tokens only choose).")
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Another admin token (with --as-admin).")] = False,
    label: Annotated[Optional[str], typer.Option("--label", help="A note to tell tokens apart.")] = None,
    as_admin: AsAdminOption = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Create a token: a user token (any agent of a workspace) or, with --agent, an agent token. Shown once."""
    kind = "admin" if admin else ("agent" if agent else "user")
    with _hub_client(db, as_admin) as login:
        client = login if workspace is None or as_admin or admin else _issuer_for(login, workspace, db)
        try:
            issued = client.create_token(agent=agent, workspace=workspace, kind=kind, label=label)
        finally:
            if client is not login:
                client.close()

    def human() -> None:
        # The token alone on standard output, the rest on standard error: 'token create >
        # token.txt' writes a file that 'login --token - < token.txt' takes as it is.
        _print_token(issued, render.err_console)
        render.err_console.print("token (shown once):")
        sys.stdout.write(issued.token + "\n")
        sys.stdout.flush()
        ca = r" \[--ca-cert CA_FILE]" if client.url.startswith("https://") else ""  # its CA, if not a public one
        # Piped in or pasted at its prompt: a token on a command line stays in shell history and ps.
        render.err_console.print(
            f"[dim]on the other machine: callboard login {client.url}{ca} --token - < token-file "
            "(or paste it when asked)[/]"
        )

    render.emit(issued, as_json, human)


@token_app.command("list")
def token_list(as_json: JsonOption = False, as_admin: AsAdminOption = False, db: DbOption = None) -> None:
    """Tokens this credential may see (never their secrets)."""
    with _hub_client(db, as_admin) as client:
        tokens = client.list_tokens()

    def human() -> None:
        for token in tokens:
            _print_token(token)

    render.emit(tokens, as_json, human)


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="The id 'token list' shows.")],
    as_admin: AsAdminOption = False,
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Revoke a token: the hub refuses it from now on."""
    with _hub_client(db, as_admin) as client:
        token = client.revoke_token(token_id)
    render.emit(token, as_json, lambda: _print_token(token))
