"""What every benchmark here shares: the failure type, percentiles, and the closing report."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any


def callboard_argv() -> list[str]:
    """The installed ``callboard`` command beside this Python, as a user runs it (else ``-m``)."""
    script = Path(sys.executable).parent / "callboard"
    return [str(script)] if script.exists() else [sys.executable, "-m", "callboard"]


class BenchFailure(Exception):
    """A measurement could not be made or its result is wrong."""


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linearly interpolated between the nearest ranks."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p99": percentile(values, 99), "max": max(values), "n": len(values)}


def median_of(rounds: Sequence[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def ms(value: float) -> str:
    return f"{value:.3f} ms"


def report(figures: dict[str, object], failures: list[str], params: Any, began: float) -> int:
    """Print the total time and, as the last line, every figure as one JSON object; the exit status."""
    print(f"\ntotal time {time.monotonic() - began:.1f} s; {'all checks passed' if not failures else 'FAILED'}")
    figures["ok"] = not failures
    if failures:
        figures["failures"] = failures
    figures["params"] = asdict(params)
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}))
    return 0 if not failures else 1
