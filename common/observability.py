"""Prometheus figures of the running platform: request latency, ballot close duration, queue lag.

Where each figure is measured, and why there:

- **Request latency** (``yardstick_request_duration_seconds{view, method}``): a histogram observed by
  ``RequestLatencyMiddleware``, the outermost middleware, labelled by the URL pattern's name (a fixed
  set, never the path) and the method. Per request it costs two clock reads and one observation in
  memory (or in a memory-mapped file in multi-process mode): no database, no network.
- **Ballot close duration** (``yardstick_ballot_close_duration_seconds{outcome}``): observed by the
  close task (``collection/tasks.py``) in whichever process runs it, a Celery worker or, in the embedded
  default, the web process.
- **Queue lag** (``yardstick_queue_lag_seconds``): read at scrape time from the Redis broker, as the age
  of the oldest message waiting in the default queue. Every message carries the time it was sent (a
  header added by ``stamp_sent_time`` when it is published); the oldest one sits at the tail of the
  queue's Redis list, which workers pop from. One round trip (``LLEN`` and ``LINDEX`` in a pipeline),
  bounded by ``BROKER_TIMEOUT_SECONDS``; a broker that does not answer makes the lag NaN and
  ``yardstick_queue_lag_known`` 0, and the scrape still answers.

Across processes (gunicorn workers, Celery pool processes), prometheus_client's multi-process mode
keeps each process's values in memory-mapped files under ``PROMETHEUS_MULTIPROC_DIR``, which the
settings set to ``METRICS_DIR/<host name>`` before prometheus_client is imported; a scrape adds up the
files of every host under ``METRICS_DIR`` (``MetricsDirectoryCollector``), so web and worker containers
that share that directory are reported together.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import time
from glob import glob
from pathlib import Path

import redis
from celery.signals import before_task_publish
from django.conf import settings
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.values import ValueClass
from redis.backoff import NoBackoff
from redis.retry import Retry

logger = logging.getLogger(__name__)

# Header every Celery message carries: the time (Unix seconds) it was first published.
SENT_AT_HEADER = "yardstick_sent_at"
# Methods reported by name; anything else a client invents is "other" (a label's values must stay few).
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_VIEW = "<unmatched>"  # a path no URL pattern matched (a 404 before any view)

REQUEST_SECONDS = Histogram(
    "yardstick_request_duration_seconds",
    "Time from the request's arrival at Django to its response, by URL pattern name and method.",
    ["view", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=None,  # served by scrape_registry(), never by the library's global registry
)
BALLOT_CLOSE_SECONDS = Histogram(
    "yardstick_ballot_close_duration_seconds",
    "Time the ballot close task took, by outcome: closed (it closed the ballot), already_closed "
    "(a repeated message found it closed), not_due (neither fully voted nor past its deadline: an "
    "exclusion lowered its count after the vote that asked), missing (no such ballot).",
    ["outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0),
    registry=None,
)
OWN_METRICS = (REQUEST_SECONDS, BALLOT_CLOSE_SECONDS)


def multiprocess_mode() -> bool:
    """Whether this process writes its values to files that every process's scrape adds up."""
    return bool(getattr(ValueClass, "_multiprocess", False))


if settings.METRICS_DIR and not multiprocess_mode():
    logger.warning(
        "METRICS_DIR is set but prometheus_client was imported before the settings set "
        "PROMETHEUS_MULTIPROC_DIR: this process's figures reach only its own scrapes"
    )


class RequestLatencyMiddleware:
    """Observes each request's duration in ``REQUEST_SECONDS`` (first in ``MIDDLEWARE``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        method = request.method if request.method in KNOWN_METHODS else "other"
        REQUEST_SECONDS.labels(match.view_name if match else UNMATCHED_VIEW, method).observe(elapsed)
        return response


@before_task_publish.connect(dispatch_uid="yardstick-stamp-sent-time")
def stamp_sent_time(headers=None, **kwargs) -> None:
    """Stamps a message with the time it is published (kept if it is published again)."""
    if headers is not None:
        headers.setdefault(SENT_AT_HEADER, time.time())


# --- scrape time --------------------------------------------------------------------------------


class MetricsDirectoryCollector:
    """Every process's values under ``METRICS_DIR``: one directory per host, each process's files in it."""

    def __init__(self, root: str):
        self.root = root

    def collect(self):
        files = glob(str(Path(self.root) / "*" / "*.db"))
        return MultiProcessCollector.merge(files, accumulate=True)


_redis_clients: dict[str, redis.Redis] = {}


def _broker_client(url: str) -> redis.Redis:
    """A client per broker URL and process, with the broker timeouts and no retry."""
    client = _redis_clients.get(url)
    if client is None:
        timeout = settings.BROKER_TIMEOUT_SECONDS
        client = redis.Redis.from_url(
            url, socket_connect_timeout=timeout, socket_timeout=timeout, retry=Retry(NoBackoff(), 0)
        )
        _redis_clients[url] = client
    return client


def queue_state(*, url: str, queue: str, now: float | None = None) -> tuple[int, float] | None:
    """(messages waiting, age in seconds of the oldest) in a Redis broker's queue; None if unreachable.

    The age is 0 for an empty queue and NaN when the oldest message has no sent time (published by a
    version that did not stamp it).
    """
    try:
        with _broker_client(url).pipeline(transaction=False) as pipeline:
            length, oldest = pipeline.llen(queue).lindex(queue, -1).execute()
    except (redis.RedisError, OSError) as exc:
        logger.warning("queue lag unknown: the broker did not answer (%s)", exc)
        return None
    if not oldest:
        return int(length), 0.0
    try:
        sent_at = float(json.loads(oldest)["headers"][SENT_AT_HEADER])
    except (ValueError, KeyError, TypeError):
        return int(length), math.nan
    return int(length), max(0.0, (time.time() if now is None else now) - sent_at)


class QueueLagCollector:
    """The default queue's length and the age of its oldest message, read when Prometheus scrapes."""

    def collect(self):
        from celery import current_app

        url = settings.CELERY_BROKER_URL or ""
        if not url.startswith(("redis://", "rediss://", "unix://")):
            return []  # no Redis broker (the embedded default runs tasks eagerly): nothing ever waits
        queue = current_app.conf.task_default_queue
        state = queue_state(url=url, queue=queue)
        known = GaugeMetricFamily(
            "yardstick_queue_lag_known", "1 if the broker answered this scrape, else 0.", labels=["queue"]
        )
        known.add_metric([queue], 0.0 if state is None else 1.0)
        lag = GaugeMetricFamily(
            "yardstick_queue_lag_seconds",
            "Age of the oldest message waiting in the queue (0 when empty, NaN when unknown).",
            labels=["queue"],
        )
        lag.add_metric([queue], math.nan if state is None else state[1])
        length = GaugeMetricFamily(
            "yardstick_queue_length", "Messages waiting in the queue (NaN when unknown).", labels=["queue"]
        )
        length.add_metric([queue], math.nan if state is None else float(state[0]))
        return [known, lag, length]


def scrape_registry(*collectors) -> CollectorRegistry:
    """A registry of this module's figures (every process's, in multi-process mode) and ``collectors``."""
    registry = CollectorRegistry(auto_describe=False)
    if settings.METRICS_DIR and multiprocess_mode():
        registry.register(MetricsDirectoryCollector(settings.METRICS_DIR))
    else:
        for metric in OWN_METRICS:
            registry.register(metric)
    registry.register(QueueLagCollector())
    for collector in collectors:
        registry.register(collector)
    return registry


def bearer_token_problem(authorization: str, expected: str) -> tuple[int, str] | None:
    """(status, reason) if an ``Authorization`` header does not carry the expected bearer token."""
    if not expected:
        return 403, "the metrics endpoint is off: set METRICS_TOKEN to turn it on\n"
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return 401, "send the header 'Authorization: Bearer <METRICS_TOKEN>'\n"
    if not hmac.compare_digest(token.strip().encode(), expected.encode()):
        return 403, "the bearer token is not METRICS_TOKEN\n"
    return None
