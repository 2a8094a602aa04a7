"""Shared helpers for the benchmark scripts: median timing and a description of the machine."""

from __future__ import annotations

import os
import platform
import statistics
import time
from datetime import date


def median_seconds(function, *, runs: int = 5, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``function()`` over ``runs`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        function()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def machine() -> str:
    """CPU model, logical cores, Python and numpy versions, and today's date."""
    import numpy
    import scipy

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
        f"numpy {numpy.__version__}, scipy {scipy.__version__}, {date.today().isoformat()}"
    )
