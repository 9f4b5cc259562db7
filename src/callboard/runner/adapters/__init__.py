"""One module per coding CLI a runner can drive, behind ``base.Adapter``.

``adapter_for("claude")`` or ``adapter_for("generic:python3 agent.py")``: the adapter a
``--cli`` value names. The CLIs are the rows of the one table (``integrations/agent_clis.py``);
each has its module here, named after its row, holding its ``ADAPTER`` class. CLI modules load
lazily: only the one a runner uses.
"""

from __future__ import annotations

import importlib

from callboard.errors import BadRequest
from callboard.integrations.agent_clis import AGENT_CLIS, BY_NAME
from callboard.runner.adapters.base import Adapter

CLI_NAMES = (*(cli.name for cli in AGENT_CLIS), "generic:CMD")


def adapter_for(spec: str) -> Adapter:
    """The adapter ``--cli spec`` names; BadRequest with the choices for anything else."""
    spec = spec.strip()
    if spec.startswith("generic:"):
        from callboard.runner.adapters.generic import GenericAdapter, parse_command

        return GenericAdapter(parse_command(spec.removeprefix("generic:")))
    if spec not in BY_NAME:
        raise BadRequest(f"--cli must be one of {', '.join(CLI_NAMES)}, not {spec!r}.")
    try:
        module = importlib.import_module(f"callboard.runner.adapters.{spec}")
        adapter_class = module.ADAPTER
    except (ImportError, AttributeError):
        raise BadRequest(f"--cli {spec} is not available yet in this build of Callboard.") from None
    return adapter_class()
