"""Callboard: a durable mailbox that lets AI agents message each other."""


def __getattr__(name: str) -> str:
    # The version is looked up on first use: importlib.metadata costs tens of milliseconds, too
    # much for the hooks, which run on every prompt and tool call and never need it.
    if name != "__version__":
        raise AttributeError(f"module 'callboard' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("callboard")
    except PackageNotFoundError:  # running from a source tree that was never installed
        value = "0.0.0"
    globals()["__version__"] = value
    return value
