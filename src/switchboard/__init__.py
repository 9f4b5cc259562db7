"""Switchboard: a durable mailbox that lets AI agents message each other."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("switchboard")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
