"""common.throttling: REST framework's throttles, scoped by view and kind, counted in the cache, and let
through while the cache does not answer."""

from types import SimpleNamespace

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.test import RequestFactory
from rest_framework.throttling import SimpleRateThrottle

from common import throttling
from common.throttling import AddressThrottle, ParticipantThrottle, page_wait_seconds

VIEW = SimpleNamespace(throttle_scope="vote")


def request_of(participant: int | None, address: int):
    request = RequestFactory().post("/api/votes/", REMOTE_ADDR=f"10.0.0.{address}")
    request.user = AnonymousUser()
    request.annotator_key = None if participant is None else f"p{participant}"
    return request


def at(monkeypatch, now: float) -> None:
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: now)


def test_the_wait_is_the_oldest_requests_time_to_leave_the_window(rates, monkeypatch):
    # Hand-worked: 2 per minute for the participant; requests at t = 1000 and 1010 fill it; at t = 1030
    # the third is refused and must wait until the first leaves at t = 1060: 30 s.
    rates("2/min", None)
    answers = []
    for now in (1000.0, 1010.0, 1030.0):
        at(monkeypatch, now)
        throttle = ParticipantThrottle()
        allowed = throttle.allow_request(request_of(7, 1), VIEW)
        answers.append((allowed, None if allowed else throttle.wait()))
    assert answers == [(True, None), (True, None), (False, 30.0)]


def test_the_page_waits_as_long_as_the_longest_refusal_and_every_allowing_limit_counts(rates, monkeypatch):
    # 1 a minute per participant, 3 per address. At t = 1000 both allow; at 1020 the participant's limit
    # refuses (40 s to wait) and the address's counts it; at 1030 a second participant of the address
    # is allowed, and the address now holds 3: at 1040 the first participant is refused by both.
    rates("1/min", "3/min")
    waits = []
    for now, participant in ((1000.0, 1), (1020.0, 1), (1030.0, 2), (1040.0, 1)):
        at(monkeypatch, now)
        waits.append(page_wait_seconds(request_of(participant, 1), "vote"))
    assert waits == [None, 40, None, 20]


def test_a_limit_set_to_off_is_not_read_or_written(rates, monkeypatch):
    rates(None, "2/min")
    asked = []
    original = cache.get
    monkeypatch.setattr(cache, "get", lambda key, *rest: asked.append(key) or original(key, *rest))
    assert page_wait_seconds(request_of(1, 1), "vote") is None
    assert asked == ["throttle_vote.address_10.0.0.1"]


def test_the_participant_is_the_user_then_the_session_then_the_annotator_cookie_then_the_address():
    throttle = ParticipantThrottle()
    request = request_of(3, 9)
    assert throttle.identity(request) == "annotator-p3"
    request.session = SimpleNamespace(session_key="s-1")
    assert throttle.identity(request) == "session-s-1"
    request.user = SimpleNamespace(is_authenticated=True, pk=12)
    assert throttle.identity(request) == "user-12"
    assert throttle.identity(request_of(None, 9)) == "address-10.0.0.9"


def test_behind_one_trusted_proxy_the_address_is_the_one_it_appended(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    assert AddressThrottle().identity(request) == "203.0.113.7"
    assert throttling.login_client_address(request) == "203.0.113.7"


class CacheDown(Exception):
    pass


def test_while_the_cache_raises_requests_pass_and_it_is_asked_again_after_the_retry_time(
    rates, monkeypatch, caplog
):
    rates("1/min", None)
    asked = []

    def down(key, *rest):
        asked.append(key)
        raise CacheDown("Redis is restarting")

    monkeypatch.setattr(cache, "get", down)
    clock = [100.0]
    monkeypatch.setattr(throttling.time, "monotonic", lambda: clock[0])
    answers = [page_wait_seconds(request_of(1, 1), "vote") for _ in range(3)]
    assert (answers, len(asked)) == ([None, None, None], 1)  # asked once, then left alone
    assert "the cache does not answer" in caplog.text
    clock[0] += throttling.CACHE_RETRY_SECONDS
    assert page_wait_seconds(request_of(1, 1), "vote") is None
    assert len(asked) == 2


@pytest.mark.parametrize("kind", ["participant", "address"])
def test_a_view_without_a_scope_is_not_limited(kind):
    throttle = {"participant": ParticipantThrottle, "address": AddressThrottle}[kind]()
    assert throttle.allow_request(request_of(1, 1), SimpleNamespace()) is True
