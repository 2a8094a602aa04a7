"""The annotator limits on Redis (one script, sorted sets) answer as REST framework's two throttles."""

import pytest
from django.core.cache import cache
from hypothesis import given, settings

from common.throttling import AnnotatorThrottle, _redis_of_cache
from tests.common.test_annotator_throttle import CROWDS, VIEW, check_both_ways, request_of

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def on_redis():
    assert _redis_of_cache() is not None, "the full stack's cache is Redis (REDIS_URL)"


@settings(max_examples=80, deadline=None)
@given(**CROWDS)
def test_the_script_answers_as_the_two_throttles_checked_one_by_one(
    requests, gaps, participant_limit, address_limit
):
    answered, expected = check_both_ways(requests, gaps, participant_limit, address_limit)
    assert answered[0] == expected[0]
    assert any(allowed for allowed, _ in expected[0])


def test_one_round_trip_per_request(rates, monkeypatch):
    rates("5/min", "9/min")
    cache.clear()
    client = _redis_of_cache()
    sent = []
    original = client.evalsha
    monkeypatch.setattr(client, "evalsha", lambda *args: sent.append(args[0]) or original(*args))
    AnnotatorThrottle._scripts.clear()
    for _ in range(3):
        throttle = AnnotatorThrottle()
        assert throttle.allow_request(request_of(1, 1), VIEW)
    assert len(sent) == 3


def test_the_wait_is_the_oldest_requests_time_to_leave_the_window(rates, monkeypatch):
    # Hand-worked: 2 per minute for the participant; requests at t = 0 and t = 10 fill it; at t = 30 the
    # third is refused and must wait until the first leaves at t = 60: 30 s, over one slot (2 - 2 + 1).
    rates("2/min", None)
    cache.clear()
    from rest_framework.throttling import SimpleRateThrottle

    answers = []
    for now in (1000.0, 1010.0, 1030.0):
        monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self, now=now: now)
        throttle = AnnotatorThrottle()
        answers.append((throttle.allow_request(request_of(7, 1), VIEW), throttle.wait()))
    assert answers == [(True, None), (True, None), (False, 30.0)]


def test_a_limit_set_to_off_is_not_sent_to_redis(rates, monkeypatch):
    rates(None, "2/min")
    cache.clear()
    client = _redis_of_cache()
    keys = []
    original = client.evalsha
    monkeypatch.setattr(
        client, "evalsha", lambda sha, count, *rest: keys.append(rest[:count]) or original(sha, count, *rest)
    )
    AnnotatorThrottle._scripts.clear()
    assert AnnotatorThrottle().allow_request(request_of(1, 1), VIEW)
    assert keys == [(cache.make_key("throttle_vote.address_10.0.0.1:times"),)]
