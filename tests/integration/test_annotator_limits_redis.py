"""The annotator limits on Redis: REST framework's histories live in Redis, so every web process (here,
fresh throttles with nothing of their own) counts against the same limit."""

import pytest
import redis
from django.core.cache import cache
from django.test import RequestFactory

from common.throttling import page_wait_seconds

pytestmark = pytest.mark.integration


def request_of(participant: int):
    request = RequestFactory().post("/api/votes/", REMOTE_ADDR="10.0.0.1")
    request.annotator_key = f"p{participant}"
    return request


def test_the_counts_live_in_redis_for_the_length_of_their_window(rates, redis_url):
    rates("3/min", None)
    answers = [page_wait_seconds(request_of(4), "vote") for _ in range(4)]

    assert answers[:3] == [None, None, None]
    assert 59 <= answers[3] <= 60
    key = cache.make_key("throttle_vote.participant_annotator-p4")
    assert redis.Redis.from_url(redis_url).ttl(key) in (59, 60)
