"""The official MCP conformance suite (``@modelcontextprotocol/conformance``) against the hub's
``/mcp``, for the scenarios that apply to a server with our own tools, in both protocol eras.

A real ``callboard up`` runs as a subprocess; the CLI (run by its pinned Node 22, see
tests/support/mcp_conformance_cli.py) speaks to it through ``HeaderProxy``, because the CLI cannot send the bearer
token every hub request needs (it takes only ``--url``). Each scenario runs as one CLI call with
``--expected-failures baseline.yml``; a scenario passes when the CLI's verdict is a pass, which
means every check either succeeded or is listed in the baseline (and no listed check succeeds).

The scenarios left out need the reference "everything server" fixtures (tools named
test_image_content, test_tool_with_progress, …, static resources, prompts) or features we do
not offer (logging, completions, resource subscriptions, sampling, elicitation, tasks).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.hub.conftest import FAILURE_IN_LOG, Hub
from tests.support.header_proxy import HeaderProxy
from tests.support.mcp_conformance_cli import ConformanceCli, ensure_conformance_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]  # the first run installs Node and the CLI

BASELINE = Path(__file__).with_name("baseline.yml")
HANDSHAKE = "2025-11-25"  # initialize, Mcp-Session-Id: what current agent CLIs speak
SESSIONLESS = "2026-07-28"  # server/discover, per-request _meta
BOTH = (HANDSHAKE, SESSIONLESS)
SCENARIO_TIMEOUT_MS = 30_000
CLI_TIMEOUT = 120.0
AGENT = "conformance"

# scenario: (the protocol eras it runs in, why it applies to us)
SCENARIOS: dict[str, tuple[tuple[str, ...], str]] = {
    "server-initialize": ((HANDSHAKE,), "the initialize handshake: result shape and a visible-ASCII session id"),
    "server-session-lifecycle": ((HANDSHAKE,), "initialized accepted, DELETE ends the session, then 404 on it"),
    "server-stateless": ((SESSIONLESS,), "server/discover, per-request _meta validation, version and method errors"),
    "ping": ((HANDSHAKE,), "ping is answered (the sessionless era has no ping)"),
    "tools-list": (BOTH, "our eight tools: valid definitions and names, the same order every time"),
    # These two call the reference server's test_simple_text and test_error_handling, which we
    # have not got: what they check is the shape of our "Unknown tool" answer (and the wire schema).
    "tools-call-simple-text": (BOTH, "a tools/call round trip: a result with text content, schema-valid"),
    "tools-call-error": (BOTH, "a failing call is a result with isError and a message, not a transport error"),
    "server-sse-multiple-streams": (BOTH, "concurrent POSTs each get their own working SSE response stream"),
    "resources-list": (BOTH, "clients list resources at startup: we have none, the empty list must be valid"),
    "prompts-list": (BOTH, "clients list prompts at startup: we have none, the empty list must be valid"),
    "sep-2164-resource-not-found": ((SESSIONLESS,), "resources/read of an unknown URI gets the not-found error"),
    "dns-rebinding-protection": (BOTH, "a foreign Host/Origin is refused with 4xx, a loopback one accepted"),
    "http-header-validation": ((SESSIONLESS,), "Mcp-Method / Mcp-Name headers checked against the body (-32020)"),
    "caching": ((SESSIONLESS,), "list results carry valid cache hints"),
}
CASES = [(era, scenario) for scenario, (eras, _) in SCENARIOS.items() for era in eras]
FAILING = ("FAILURE", "WARNING")  # what the CLI's baseline check counts as a failure
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # the CLI colours its output whatever NO_COLOR says


@dataclass
class Target:
    hub: Hub
    proxy: HeaderProxy
    url: str  # the proxy's /mcp


@pytest.fixture(scope="module")
def conformance() -> ConformanceCli:
    return ensure_conformance_cli()


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    hub = Hub(tmp_path_factory.mktemp("conformance-hub"), rate_limit=0)
    try:
        hub.start()
        token = hub.issue(agent=AGENT)["token"]  # an agent token: no agent header needed
        upstream = urlsplit(hub.url)
        assert upstream.hostname and upstream.port, hub.url
        with HeaderProxy(upstream.hostname, upstream.port, {"Authorization": f"Bearer {token}"}) as proxy:
            yield Target(hub, proxy, f"http://127.0.0.1:{proxy.port}/mcp")
    finally:
        hub.close()


@pytest.mark.parametrize(("era", "scenario"), CASES, ids=[f"{era}-{scenario}" for era, scenario in CASES])
def test_conformance_scenario_passes(
    conformance: ConformanceCli, target: Target, tmp_path: Path, era: str, scenario: str
) -> None:
    results = tmp_path / "results"
    log_from, requests_before = target.hub.log_size(), target.proxy.requests
    argv = conformance.argv(
        "server",
        "--url",
        target.url,
        "--scenario",
        scenario,
        "--spec-version",
        era,
        "--expected-failures",
        str(BASELINE),
        "--timeout",
        str(SCENARIO_TIMEOUT_MS),
        "-o",
        str(results),
    )
    try:
        done = subprocess.run(
            argv,
            cwd=tmp_path,
            env=conformance.env(),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"conformance {scenario} ({era}) ran over {CLI_TIMEOUT:g} s:\n{timeout.stdout}\n{timeout.stderr}")

    found = sorted(results.glob(f"server-{scenario}-*/checks.json"))
    assert len(found) == 1, f"expected one checks.json for {scenario} under {results}:\n{cli_output(done)}"
    checks: list[dict[str, Any]] = json.loads(found[0].read_text())
    if done.returncode != 0:
        pytest.fail(failure_report(era, scenario, done, checks, found[0]), pytrace=False)
    assert any(check["status"] == "SUCCESS" for check in checks), f"no check succeeded:\n{cli_output(done)}"
    assert target.proxy.requests > requests_before, "the CLI sent no request through the proxy"

    log = target.hub.log_text(log_from)
    assert not any(marker in log for marker in FAILURE_IN_LOG), f"the hub logged an error:\n{log[-4000:]}"


def baseline_entries() -> set[str]:
    """The entries of baseline.yml: a flat YAML list of strings under ``server:``."""
    entries = set()
    for line in BASELINE.read_text().splitlines():
        item = line.split("#", 1)[0].strip()
        if item.startswith("- "):
            entries.add(item[2:].strip().strip("'\""))
    return entries


def failure_report(
    era: str, scenario: str, done: subprocess.CompletedProcess[str], checks: list[dict[str, Any]], path: Path
) -> str:
    """Every failing check not in the baseline, and every baselined check that now passes."""
    baseline = baseline_entries()
    lines = [f"MCP conformance scenario {scenario} at {era} failed (CLI exit {done.returncode}); checks in {path}"]
    for check in checks:
        entry = f"{scenario}:{check['id']}"
        if check["status"] in FAILING and entry not in baseline and scenario not in baseline:
            lines.append(f"  FAILED {check['id']} [{check['status']}]: {check.get('errorMessage', '')}")
            lines.append(f"    check: {check.get('description', '')}")
            lines.append(f"    details: {json.dumps(check.get('details'))[:2000]}")
        elif check["status"] == "SUCCESS" and entry in baseline:
            lines.append(f"  STALE baseline entry {entry}: the check passes now; remove it from {BASELINE.name}")
    lines.append(cli_output(done))
    return "\n".join(lines)


def cli_output(done: subprocess.CompletedProcess[str]) -> str:
    stdout, stderr = (ANSI_ESCAPE.sub("", text) for text in (done.stdout, done.stderr))
    return f"--- CLI stdout (tail)\n{stdout[-3000:]}\n--- CLI stderr (tail)\n{stderr[-3000:]}"
