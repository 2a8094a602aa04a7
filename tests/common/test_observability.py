"""The figures that cross processes: queue lag from a real Redis broker, histograms from many processes."""

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from celery import Celery
from prometheus_client.parser import text_string_to_metric_families

from common.observability import SENT_AT_HEADER, MetricsDirectoryCollector, QueueLagCollector, queue_state

REPO_ROOT = Path(__file__).resolve().parents[2]


def samples_of(collector) -> dict:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


@pytest.fixture
def broker(redis_url, settings):
    """The test Redis as the broker, its default queue emptied before and after."""
    client = redis.Redis.from_url(redis_url)
    client.delete("celery")
    settings.CELERY_BROKER_URL = redis_url
    app = Celery("observability-test", broker=redis_url)
    yield app
    client.delete("celery")
    app.close()


@pytest.mark.integration  # a real Redis broker (REDIS_URL)
def test_the_lag_is_the_age_of_the_oldest_waiting_message(broker, redis_url):
    assert queue_state(url=redis_url, queue="celery") == (0, 0.0)
    sent = time.time()
    broker.send_task("scoring.ballot_close", args=[1], headers={SENT_AT_HEADER: sent - 30.0})
    broker.send_task("scoring.ballot_close", args=[2])  # stamped now by the publish signal

    length, lag = queue_state(url=redis_url, queue="celery", now=sent + 2.5)

    assert length == 2
    assert lag == pytest.approx(32.5, abs=1e-3)


@pytest.mark.integration  # a real Redis broker (REDIS_URL)
def test_a_message_published_now_has_a_lag_near_zero(broker, redis_url):
    broker.send_task("scoring.ballot_close", args=[1])

    samples = samples_of(QueueLagCollector())

    assert samples[("yardstick_queue_lag_known", (("queue", "celery"),))] == 1.0
    assert samples[("yardstick_queue_length", (("queue", "celery"),))] == 1.0
    assert 0.0 <= samples[("yardstick_queue_lag_seconds", (("queue", "celery"),))] < 2.0


@pytest.mark.integration  # a real Redis broker (REDIS_URL)
def test_a_message_without_a_sent_time_has_an_unknown_lag(broker, redis_url):
    redis.Redis.from_url(redis_url).lpush("celery", b'{"body": "", "headers": {}}')

    length, lag = queue_state(url=redis_url, queue="celery")

    assert length == 1
    assert math.isnan(lag)


OBSERVE = """
import django
django.setup()
from common.observability import BALLOT_CLOSE_SECONDS, multiprocess_mode
assert multiprocess_mode()
for seconds in {durations}:
    BALLOT_CLOSE_SECONDS.labels("closed").observe(seconds)
"""


def test_a_scrape_adds_up_every_process_of_every_host(tmp_path):
    # Two "hosts" (containers), each with its own directory under METRICS_DIR, and processes that
    # observe close durations there; the scrape reads the files of all of them.
    durations = {("host-a", 0): [0.2, 3.0], ("host-a", 1): [0.7], ("host-b", 0): [45.0, 0.04, 1.5]}
    for (host, _), observed in durations.items():
        env = {
            **os.environ,
            "METRICS_DIR": str(tmp_path),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / host),  # what the settings set on that host
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        (tmp_path / host).mkdir(exist_ok=True)
        subprocess.run(
            [sys.executable, "-c", OBSERVE.format(durations=observed)],
            cwd=REPO_ROOT,
            env=env,
            check=True,
            timeout=120,
        )

    samples = samples_of(MetricsDirectoryCollector(str(tmp_path)))

    every = [seconds for observed in durations.values() for seconds in observed]
    closed = (("outcome", "closed"),)
    assert samples[("yardstick_ballot_close_duration_seconds_count", closed)] == 6
    assert samples[("yardstick_ballot_close_duration_seconds_sum", closed)] == pytest.approx(sum(every))
    assert samples[("yardstick_ballot_close_duration_seconds_bucket", (("le", "1.0"), *closed))] == 3
    assert samples[("yardstick_ballot_close_duration_seconds_bucket", (("le", "30.0"), *closed))] == 5
    assert samples[("yardstick_ballot_close_duration_seconds_bucket", (("le", "+Inf"), *closed))] == 6


def test_the_text_of_a_multi_process_scrape_parses(tmp_path):
    env = {
        **os.environ,
        "METRICS_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "METRICS_TOKEN": "t",
        "YARDSTICK_DATA_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'var' / 'empty.sqlite3'}",  # no tables: database_up 0
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    script = OBSERVE.format(durations=[0.3]) + (
        "from django.test import Client\n"
        "print(Client().get('/metrics', headers={'Authorization': 'Bearer t'}).content.decode())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, check=True, timeout=120, capture_output=True
    )

    families = {family.name for family in text_string_to_metric_families(result.stdout.decode())}
    assert {"yardstick_ballot_close_duration_seconds", "yardstick_database_up"} <= families
    assert [path.parent.parent for path in tmp_path.glob("*/histogram_*.db")] == [tmp_path]
