"""What the request-latency middleware adds to a request, in one process and in multi-process mode.

    python benchmarks/bench_observability.py [--requests 1000] [--runs 5]

Sends ``--requests`` GET /healthz/ through Django's test client (the whole middleware stack, the view
and its ``SELECT 1`` on a fresh SQLite database), with ``RequestLatencyMiddleware`` first in
``MIDDLEWARE`` and without it, and reports the median per request of each and their difference.
Baseline: the request without the middleware. The same is run again in a child process with
``PROMETHEUS_MULTIPROC_DIR`` set (gunicorn's case: each observation written to a memory-mapped file).
The middleware's own cost is also timed alone around a view that does nothing, which is the figure
that matters next to a vote (tens of milliseconds today, BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(requests: int, runs: int) -> dict:
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client, RequestFactory, override_settings
    from django.urls import resolve

    from benchmarks._timing import median_seconds
    from common.observability import RequestLatencyMiddleware, multiprocess_mode

    call_command("migrate", verbosity=0)
    client = Client()

    def burst():
        for _ in range(requests):
            client.get("/healthz/")

    from django.conf import settings

    with_middleware = median_seconds(burst, runs=runs) / requests
    without = [m for m in settings.MIDDLEWARE if m != "common.observability.RequestLatencyMiddleware"]
    with override_settings(MIDDLEWARE=without):
        client = Client()
        without_middleware = median_seconds(burst, runs=runs) / requests

    request = RequestFactory().get("/healthz/")
    request.resolver_match = resolve("/healthz/")
    middleware = RequestLatencyMiddleware(lambda request: None)

    def bare():
        for _ in range(requests):
            middleware(request)

    def nothing():
        for _ in range(requests):
            (lambda request: None)(request)

    alone = (median_seconds(bare, runs=runs) - median_seconds(nothing, runs=runs)) / requests
    return {
        "multiprocess": multiprocess_mode(),
        "with": with_middleware,
        "without": without_middleware,
        "alone": alone,
    }


def report(figures: dict) -> None:
    mode = "multi-process (mmap files)" if figures["multiprocess"] else "one process (in memory)"
    print(
        f"{mode}: /healthz/ {figures['without'] * 1e6:.0f} µs without the middleware (baseline), "
        f"{figures['with'] * 1e6:.0f} µs with it (ratio {figures['with'] / figures['without']:.3f}); "
        f"the middleware alone: {figures['alone'] * 1e6:.1f} µs per request"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    if args.child:
        print(json.dumps(measure(args.requests, args.runs)))
        return

    from benchmarks._timing import machine

    print(machine())
    for multiprocess in (False, True):
        with tempfile.TemporaryDirectory(prefix="bench-observability-") as data_dir:
            env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
            env["YARDSTICK_DATA_DIR"] = data_dir
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)
            env.pop("METRICS_DIR", None)
            if multiprocess:
                env["METRICS_DIR"] = str(Path(data_dir) / "metrics")
            argv = [sys.executable, __file__, "--child", f"--requests={args.requests}", f"--runs={args.runs}"]
            output = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
            report(json.loads(output.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
