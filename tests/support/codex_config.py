"""Codex's config.toml for a mock model, with nothing that leaves the machine (no plugin sync,
analytics, feedback or telemetry), and how a value is written as a TOML string."""

from __future__ import annotations

import json

from tests.support.mock_model import MockModel


def toml_string(value: object) -> str:
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def offline_config(model: MockModel) -> str:
    """Codex's config.toml for the mock model, with nothing that leaves the machine."""
    return f"""\
model = "mock-model"
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = "{model.url}/v1"
wire_api = "responses"
env_key = "MOCK_MODEL_API_KEY"

# Nothing leaves the machine: no plugin sync (git and HTTPS to public hosts), no analytics,
# no metrics or traces.
[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"
"""
