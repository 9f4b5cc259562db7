"""A hub over TLS: ``up --tls-cert/--tls-key`` serves HTTPS with a certificate signed by a CA of
our own (made here with the ``openssl`` command); every client verifies it, with ``--ca-cert``
or ``CALLBOARD_CA_CERT``, and refuses it without. Plain HTTP beyond loopback is refused unless
``--insecure`` asks for it. Everything listens and connects on loopback only."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from callboard.client.hub import HubClient
from callboard.errors import BadRequest, HubUnavailable
from callboard.integrations.hooks import hub_probe
from callboard.requests import SendRequest
from tests.hub.conftest import CLI, Hub, expect_error, unique
from tests.integrations.hooks.conftest import AGENT, Hooks
from tests.support.cli_runner import texts

UNVERIFIED = "certificate could not be verified"


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA's certificate: what clients are given
    cert: Path  # the hub's certificate, for 127.0.0.1 and localhost, signed by the CA
    key: Path
    other_key: Path  # a key that is not the certificate's


def _openssl(*args: str | Path, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"openssl {' '.join(map(str, args))}:\n{proc.stderr}"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    folder = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=callboard test CA",
             "-keyout", "ca.key", "-out", "ca.pem", cwd=folder)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
             "-keyout", "hub.key", "-out", "hub.csr", cwd=folder)  # fmt: skip
    (folder / "hub.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    _openssl("x509", "-req", "-in", "hub.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "hub.ext", "-out", "hub.pem", cwd=folder)  # fmt: skip
    return Certificates(folder / "ca.pem", folder / "hub.pem", folder / "hub.key", folder / "ca.key")


@pytest.fixture(scope="module")
def tls_hub(tmp_path_factory: pytest.TempPathFactory, certificates: Certificates) -> Iterator[Hub]:
    hub = Hub(
        tmp_path_factory.mktemp("tls-hub"),
        args=["--tls-cert", str(certificates.cert), "--tls-key", str(certificates.key)],
    )
    try:
        yield hub.start()
    finally:
        hub.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listens(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def expect_unverified(proc: subprocess.CompletedProcess[str]) -> None:
    line = expect_error(proc, "hub_unavailable", as_json=False)
    assert isinstance(line, str) and UNVERIFIED in line and "--ca-cert" in line, line


# --- serving ---------------------------------------------------------------------------------------


def test_the_hub_serves_https_and_says_so(tls_hub: Hub) -> None:
    assert tls_hub.url.startswith("https://127.0.0.1:"), tls_hub.output


def test_plain_http_beyond_loopback_is_refused_before_anything_listens(cli: CLI) -> None:
    port = free_port()
    for host in ("0.0.0.0", "::"):
        proc = cli.run("up", "--host", host, "--port", port, timeout=20)
        line = expect_error(proc, "bad_request", as_json=False)
        assert "--tls-cert" in line and "--tls-key" in line and "--insecure" in line, line
        assert not listens(port)
    assert not cli.default_db.exists(), "nothing is written before the checks"


def test_insecure_serves_plain_http_beyond_loopback_with_a_warning(tmp_path: Path) -> None:
    hub = Hub(tmp_path / "insecure", args=["--host", "0.0.0.0", "--insecure"])
    try:
        hub.start()
        assert hub.url.startswith("http://0.0.0.0:"), hub.output
        assert "WARNING" in hub.log_text() and "plain HTTP" in hub.log_text()
    finally:
        hub.close()


def test_tls_needs_a_certificate_and_its_own_key(cli: CLI, certificates: Certificates) -> None:
    port = free_port()
    for args in (
        ["--tls-cert", certificates.cert],
        ["--tls-key", certificates.key],
        ["--tls-cert", certificates.cert, "--tls-key", certificates.other_key],  # not its key
        ["--tls-cert", cli.root / "absent.pem", "--tls-key", certificates.key],
        ["--tls-cert", certificates.key, "--tls-key", certificates.key],  # not a certificate
    ):
        proc = cli.run("up", "--port", port, *args, timeout=20)
        line = expect_error(proc, "bad_request", as_json=False)
        assert "--tls-cert" in line or "TLS certificate" in line, line
        assert not listens(port)


# --- the command line ----------------------------------------------------------------------------


def test_a_cli_without_the_ca_is_refused_and_with_it_sends_and_reads(
    tls_hub: Hub, certificates: Certificates, make_cli
) -> None:
    workspace, alice, bob = unique("tls"), unique("alice"), unique("bob")
    admin = HubClient(tls_hub.url, tls_hub.admin_token, ca_cert=str(certificates.ca))
    try:
        issued = admin.create_token(kind="user", workspace=workspace).token
    finally:
        admin.close()
    machine: CLI = make_cli("other")

    expect_unverified(machine.run("login", tls_hub.url, "--token", issued))
    assert not machine.config_path.exists(), "a refused login saves nothing"

    logged = machine.run_json("login", tls_hub.url, "--token", issued, "--ca-cert", certificates.ca)
    assert logged["ca_cert"] == str(certificates.ca.resolve())
    assert machine.config_path.stat().st_mode & 0o777 == 0o600
    assert f'ca_cert = "{certificates.ca.resolve()}"' in machine.config_path.read_text()

    sent = machine.run_json("send", bob, "over TLS", agent=alice)
    got = machine.run_json("read", agent=bob)
    assert texts(got) == ["over TLS"] and got["items"][0]["message"]["id"] == sent["message_id"]

    machine.run_json("logout")
    assert "ca_cert" not in machine.config_path.read_text(), "logout forgets the CA with the hub"


def test_callboard_ca_cert_gives_the_ca(tls_hub: Hub, certificates: Certificates, make_cli) -> None:
    machine: CLI = make_cli("env")
    with_ca = {"CALLBOARD_CA_CERT": str(certificates.ca)}
    machine.run_json("login", tls_hub.url, "--token", tls_hub.admin_token, env=with_ca)
    assert "ca_cert" not in machine.config_path.read_text(), "the variable is not saved"
    agent, workspace = unique("env"), {"CALLBOARD_WORKSPACE": unique("tls")}
    machine.run_json("send", agent, "by the variable", agent=agent, env={**with_ca, **workspace})
    expect_unverified(machine.run("read", agent=agent, env=workspace))
    got = machine.run_json("read", agent=agent, env={**with_ca, **workspace})
    assert texts(got) == ["by the variable"]


def test_an_unreadable_ca_file_is_a_clear_error(tls_hub: Hub, cli: CLI) -> None:
    proc = cli.run("login", tls_hub.url, "--token", tls_hub.admin_token, "--ca-cert", cli.root / "absent.pem")
    line = expect_error(proc, "bad_request", as_json=False)
    assert "absent.pem" in line and "--ca-cert" in line, line


# --- HubClient and the hooks' probe ----------------------------------------------------------------


def test_hubclient_verifies_the_certificate(tls_hub: Hub, certificates: Certificates) -> None:
    workspace, agent = unique("tls"), unique("direct")
    trusting = HubClient(tls_hub.url, tls_hub.admin_token, agent, workspace, ca_cert=str(certificates.ca))
    doubting = HubClient(tls_hub.url, tls_hub.admin_token, agent, workspace)
    try:
        trusting.send(SendRequest(to=agent, text="to myself"))
        assert [i.message.text for i in trusting.read().items] == ["to myself"]
        with pytest.raises(HubUnavailable, match=UNVERIFIED):
            doubting.read()
    finally:
        trusting.close()
        doubting.close()
    with pytest.raises(BadRequest, match="cannot be read"):
        HubClient(tls_hub.url, tls_hub.admin_token, ca_cert=str(certificates.cert.with_name("absent.pem")))


def test_the_hooks_probe_verifies_the_certificate(tls_hub: Hub, certificates: Certificates, tmp_path: Path) -> None:
    workspace, agent = unique("tls"), unique("probed")
    ca = str(certificates.ca)
    assert hub_probe.may_have_mail(tls_hub.url, tls_hub.admin_token, agent, workspace, ca_cert=ca) is False
    assert hub_probe.may_have_mail(tls_hub.url, tls_hub.admin_token, agent, workspace) is True  # "maybe"
    sender = HubClient(tls_hub.url, tls_hub.admin_token, unique("sender"), workspace, ca_cert=ca)
    try:
        sender.send(SendRequest(to=agent, text="for the probe"))
    finally:
        sender.close()
    assert hub_probe.may_have_mail(tls_hub.url, tls_hub.admin_token, agent, workspace, ca_cert=ca) is True

    hooks = Hooks(CLI(tmp_path / "hooks-machine"))
    try:
        env = {
            "CALLBOARD_HUB": tls_hub.url,
            "CALLBOARD_TOKEN": tls_hub.admin_token,
            "CALLBOARD_WORKSPACE": workspace,
        }
        proc = hooks.run("prompt", env=env)  # no CA: the hook runs on and exits 0
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        sender = HubClient(tls_hub.url, tls_hub.admin_token, unique("sender"), workspace, ca_cert=ca)
        try:
            sender.send(SendRequest(to=AGENT, text="urgent for the hook", urgent=True))
        finally:
            sender.close()
        answer = hooks.context("prompt", env={**env, "CALLBOARD_CA_CERT": ca})
        assert answer is not None and "urgent for the hook" in answer["hookSpecificOutput"]["additionalContext"]
    finally:
        hooks.close()
