"""One module per coding CLI a runner can drive, behind ``base.Adapter``.

``adapter_for("claude")`` or ``adapter_for("generic:python3 agent.py")``: the adapter a
``--cli`` value names. CLI modules load lazily: only the one a runner uses.
"""

from __future__ import annotations

import importlib

from callboard.errors import BadRequest
from callboard.runner.adapters.base import Adapter

# --cli name -> (module under runner.adapters, its adapter class)
CLI_MODULES = {
    "claude": ("claude", "ClaudeAdapter"),
    "codex": ("codex", "CodexAdapter"),
    "copilot": ("copilot", "CopilotAdapter"),
    "gemini": ("gemini", "GeminiAdapter"),
    "cursor": ("cursor", "CursorAdapter"),
}
CLI_NAMES = (*CLI_MODULES, "generic:CMD")


def adapter_for(spec: str) -> Adapter:
    """The adapter ``--cli spec`` names; BadRequest with the choices for anything else."""
    spec = spec.strip()
    if spec.startswith("generic:"):
        from callboard.runner.adapters.generic import GenericAdapter, parse_command

        return GenericAdapter(parse_command(spec.removeprefix("generic:")))
    if spec not in CLI_MODULES:
        raise BadRequest(f"--cli must be one of {', '.join(CLI_NAMES)}, not {spec!r}.")
    module_name, class_name = CLI_MODULES[spec]
    try:
        module = importlib.import_module(f"callboard.runner.adapters.{module_name}")
        adapter_class = getattr(module, class_name)
    except (ImportError, AttributeError):
        raise BadRequest(f"--cli {spec} is not available yet in this build of Callboard.") from None
    return adapter_class()
