"""common.throttling.AnnotatorThrottle: REST framework's two annotator limits, checked together.

It must answer exactly as ``ParticipantThrottle`` then ``AddressThrottle`` checked one by one (REST
framework's way, which records a request with every limit that allows it, even when another refuses);
hypothesis drives both with the same crowd of participants sharing addresses, at the same clock. On
the embedded default's memory cache the stored histories are REST framework's own lists and must be
equal too; on Redis (the full stack, where these tests also run, and tests/integration/
test_annotator_limits_redis.py, which insists on Redis) they are sorted sets written by one script.
"""

from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.test import RequestFactory, override_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.throttling import SimpleRateThrottle

from common.throttling import AddressThrottle, AnnotatorThrottle, ParticipantThrottle, _redis_of_cache

VIEW = SimpleNamespace(throttle_scope="vote")


def request_of(participant: int, address: int):
    request = RequestFactory().post("/api/votes/", REMOTE_ADDR=f"10.0.0.{address}")
    request.annotator_key = f"p{participant}"
    return request


def one_by_one(request):
    waits = []
    for throttle_class in (ParticipantThrottle, AddressThrottle):
        throttle = throttle_class()
        if not throttle.allow_request(request, VIEW):
            waits.append(throttle.wait())
    return (not waits, max(waits) if waits else None)


def together(request):
    throttle = AnnotatorThrottle()
    allowed = throttle.allow_request(request, VIEW)
    return (allowed, throttle.wait())


def replay(check, requests, clock, monkeypatch):
    cache.clear()
    answers = []
    for (participant, address), now in zip(requests, clock, strict=True):
        monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self, now=now: now)
        answers.append(check(request_of(participant, address)))
    stored = {key: cache.get(key) for key in _keys(requests)}
    return answers, stored


def _keys(requests):
    keys = set()
    for participant, address in requests:
        keys.add(f"throttle_vote.participant_annotator-p{participant}")
        keys.add(f"throttle_vote.address_10.0.0.{address}")
    return sorted(keys)


CROWDS = {
    "requests": st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)), min_size=1, max_size=40),
    "gaps": st.lists(st.floats(0, 25, allow_nan=False), min_size=40, max_size=40),
    "participant_limit": st.integers(1, 5),
    "address_limit": st.integers(1, 8),
}


@settings(max_examples=60, deadline=None)
@given(**CROWDS)
def test_answers_and_histories_equal_the_two_throttles_checked_one_by_one(
    requests, gaps, participant_limit, address_limit
):
    answered, expected = check_both_ways(requests, gaps, participant_limit, address_limit)
    assert answered[0] == expected[0]
    if _redis_of_cache() is None:  # REST framework's lists; on Redis the script's sorted sets
        assert answered[1] == expected[1]
    assert any(allowed for allowed, _ in expected[0])


def check_both_ways(requests, gaps, participant_limit, address_limit):
    framework = dict(django_settings.REST_FRAMEWORK)
    framework["DEFAULT_THROTTLE_RATES"] = {
        **framework["DEFAULT_THROTTLE_RATES"],
        "vote.participant": f"{participant_limit}/min",
        "vote.address": f"{address_limit}/min",
    }
    clock = [1_000_000.0 + sum(gaps[: index + 1]) for index in range(len(requests))]
    with override_settings(REST_FRAMEWORK=framework):
        with pytest.MonkeyPatch.context() as patch:
            expected = replay(one_by_one, requests, clock, patch)
        with pytest.MonkeyPatch.context() as patch:
            answered = replay(together, requests, clock, patch)
    return answered, expected


def test_a_limit_set_to_off_is_not_read_or_written(rates, monkeypatch):
    monkeypatch.setattr("common.throttling._redis_of_cache", lambda: None)  # the lists' way
    rates(None, "2/min")
    asked = []
    monkeypatch.setattr(cache, "get_many", lambda keys: asked.append(list(keys)) or {})
    assert together(request_of(1, 1)) == (True, None)
    assert asked == [["throttle_vote.address_10.0.0.1"]]


def test_one_read_and_one_write_per_request(rates, monkeypatch):
    monkeypatch.setattr("common.throttling._redis_of_cache", lambda: None)  # the lists' way
    rates("5/min", "9/min")
    cache.clear()
    calls, depth = [], [0]

    def spy(name, original):
        def call(*args, **kwargs):
            if depth[0] == 0:  # the throttle's own calls, not the backend's inside get_many
                calls.append(name)
            depth[0] += 1
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1

        return call

    for name in ("get", "set", "get_many", "set_many"):
        monkeypatch.setattr(cache, name, spy(name, getattr(cache, name)))
    assert together(request_of(1, 1)) == (True, None)
    assert calls == ["get_many", "set_many"]
