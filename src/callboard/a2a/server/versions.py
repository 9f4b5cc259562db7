"""The A2A version a request speaks, and the answer to one this hub does not speak.

An A2A 1.0 client names its version in the ``A2A-Version`` header; a request without one is
A2A 0.3 (the spec's reading of a missing header), and 0.3's JSON-RPC methods have names of
their own (``message/send``, ``tasks/get``). The hub speaks 1.0, and 0.3 too when it runs with
``up --a2a-compat-0-3``. A request in a version it does not speak gets A2A's
VersionNotSupportedError (JSON-RPC -32009; HTTP+JSON 400 FAILED_PRECONDITION) saying which
version the hub speaks and what to do, instead of the SDK's bare "Method not found" (a 0.3
method name) or its "Expected version '1.0'" (which never names the flag).
"""

from __future__ import annotations

from a2a.utils.errors import VersionNotSupportedError

VERSION_HEADER = b"a2a-version"  # as ASGI names it
SPOKEN = "1.0"
COMPAT = "0.3"
COMPAT_FLAG = "callboard up --a2a-compat-0-3"

# A2A 0.3's JSON-RPC methods, and what each is called in 1.0.
OLD_METHODS = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}
NEW_METHODS = frozenset(OLD_METHODS.values()) | {"ListTasks"}


def version_refusal(
    header: str | None, *, compat: bool, rpc_method: str | None = None
) -> VersionNotSupportedError | None:
    """Why a request naming ``header`` (None: no A2A-Version) is in a version this hub does not
    speak; None when it speaks it, or when the SDK is the one to answer (its 0.3 routes; a
    JSON-RPC body it cannot parse, or a method of no version). ``rpc_method``: the JSON-RPC
    method called ("" for a body without one); None over HTTP+JSON."""
    method = rpc_method
    if method is not None and method not in OLD_METHODS and method not in NEW_METHODS:
        return None  # not JSON-RPC of any version: the SDK's parse error or "Method not found"
    if method in OLD_METHODS:  # a 0.3 method name: a 0.3 request, whatever its header says
        if compat:
            return None
        return _refused(
            COMPAT,
            f"'{method}' is an A2A 0.3 method and this hub speaks A2A 1.0 "
            f"('{OLD_METHODS[method]}', with the header 'A2A-Version: 1.0'). {_let_in(compat)}",
            compat,
        )
    if header is None:
        if compat and method not in NEW_METHODS:
            return None  # a 0.3 request over HTTP+JSON: the SDK's 0.3 routes answer it
        named = f"'{method}' is A2A 1.0, but the" if method in NEW_METHODS else "The"
        return _refused(
            COMPAT,
            f"{named} request has no A2A-Version header, which A2A reads as version 0.3; this hub "
            f"speaks A2A {_spoken(compat)}: send 'A2A-Version: 1.0'. {_let_in(compat)}",
            compat,
        )
    if _major(header) == _major(SPOKEN) or (compat and _major_minor(header) == COMPAT):
        return None
    return _refused(
        header,
        f"A2A version '{header}' is not supported: this hub speaks A2A {_spoken(compat)} "
        f"(send 'A2A-Version: 1.0'). {_let_in(compat)}",
        compat,
    )


def _refused(requested: str, message: str, compat: bool) -> VersionNotSupportedError:
    supported = f"{SPOKEN}, {COMPAT}" if compat else SPOKEN
    return VersionNotSupportedError(message=message.strip(), data={"requested": requested, "supported": supported})


def _let_in(compat: bool) -> str:
    return "" if compat else f"An A2A 0.3 client gets in when the hub runs with '{COMPAT_FLAG}'."


def _spoken(compat: bool) -> str:
    return f"{SPOKEN} and {COMPAT}" if compat else SPOKEN


def _major(version: str) -> str:
    return version.split(".", 1)[0].strip()


def _major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2]).strip()
