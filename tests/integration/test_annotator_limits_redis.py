"""The annotator limits on Redis: each process decides on its own windows and shares them through
Redis's sorted sets in batches; within a process they answer as REST framework's two throttles."""

import pytest
import redis
from django.core.cache import cache
from hypothesis import given, settings
from rest_framework.throttling import SimpleRateThrottle

from common import throttling
from common.throttling import AnnotatorThrottle, _redis_of_cache
from tests.common.test_annotator_throttle import CROWDS, VIEW, check_both_ways, request_of

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def on_redis():
    assert _redis_of_cache() is not None, "the full stack's cache is Redis (REDIS_URL)"


@settings(max_examples=80, deadline=None)
@given(**CROWDS)
def test_within_a_process_the_answers_are_the_two_throttles_checked_one_by_one(
    requests, gaps, participant_limit, address_limit
):
    answered, expected = check_both_ways(requests, gaps, participant_limit, address_limit)
    assert answered[0] == expected[0]
    assert any(allowed for allowed, _ in expected[0])


def evalsha_calls(monkeypatch) -> list[tuple]:
    """Records the keys of each script the limits send to Redis (a round trip each)."""
    client = _redis_of_cache()
    sent = []
    original = client.evalsha
    monkeypatch.setattr(
        client, "evalsha", lambda sha, count, *rest: sent.append(rest[:count]) or original(sha, count, *rest)
    )
    AnnotatorThrottle._scripts.clear()
    return sent


def test_a_round_trip_per_share_interval_not_per_request(rates, monkeypatch, settings):
    rates("50/min", "90/min")
    settings.RATE_LIMIT_SHARE_SECONDS = 60
    sent = evalsha_calls(monkeypatch)
    for participant in range(20):
        assert AnnotatorThrottle().allow_request(request_of(participant, 1), VIEW)
    assert len(sent) == 1  # the first request's: the process had never shared its windows

    settings.RATE_LIMIT_SHARE_SECONDS = 0
    for participant in range(3):
        assert AnnotatorThrottle().allow_request(request_of(participant, 1), VIEW)
    assert len(sent) == 4
    # The 19 requests decided since the first round trip, and these 3, are all in Redis now.
    client = _redis_of_cache()
    address = cache.make_key("throttle_vote.address_10.0.0.1:times")
    assert client.zcard(address) == 23


class Process:
    """One web process's annotator limits: its own windows, the shared Redis."""

    def __init__(self):
        self.windows = throttling._SharedWindows()

    def ask(self, participant: int, address: int = 1) -> tuple[bool, float | None]:
        saved = throttling._shared_windows
        throttling._shared_windows = self.windows
        try:
            throttle = AnnotatorThrottle()
            return throttle.allow_request(request_of(participant, address), VIEW), throttle.wait()
        finally:
            throttling._shared_windows = saved


def at(monkeypatch, now: float) -> None:
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: now)


def test_a_process_refuses_what_another_allowed_once_it_has_shared(rates, monkeypatch, settings):
    # Hand-worked, 3 per minute for the participant, every request shared as it is decided (interval 0):
    # - A allows t = 1000, 1001, 1002.
    # - B had never heard of the participant: at 1003 it decides on its own empty window and allows,
    #   the one request over the limit the batching admits here; its flush reads back the newest three.
    # - At 1004 B refuses. Redis holds 1000 to 1003, so a place opens when two have left, at 1061:
    #   57 s (REST framework's own history, all four, would have said no wait at all).
    # - At 1061 the window (1001, 1061] holds 1002 and 1003: B allows; at 1061.5 it holds three again.
    # - A last read Redis at 1002. At 1063.5 its window is empty and it allows; its flush reads back
    #   1061 (B's) and 1063.5; at 1064 it allows the third, and at 1065 it refuses: on its own count it
    #   would have held two.
    rates("3/min", None)
    settings.RATE_LIMIT_SHARE_SECONDS = 0
    a, b = Process(), Process()
    steps = [(a, 1000.0), (a, 1001.0), (a, 1002.0), (b, 1003.0), (b, 1004.0), (b, 1061.0), (b, 1061.5)]
    steps += [(a, 1063.5), (a, 1064.0), (a, 1065.0)]
    answers = []
    for process, now in steps:
        at(monkeypatch, now)
        answers.append(process.ask(7))
    assert answers == [(True, None)] * 4 + [(False, 57.0), (True, None), (False, 0.5)] + [
        (True, None),
        (True, None),
        (False, pytest.approx(56.0)),
    ]


def test_within_one_process_the_count_is_exact_whatever_the_interval(rates, monkeypatch, settings):
    rates("4/min", "6/min")
    settings.RATE_LIMIT_SHARE_SECONDS = 60
    process = Process()
    answers = []
    for step in range(10):
        at(monkeypatch, 2000.0 + step)
        answers.append(process.ask(participant=step % 2)[0])
    # Each participant has 4 a minute, the address 6: the first 6 requests pass (3 each), then none.
    assert answers == [True] * 6 + [False] * 4


def test_while_redis_is_down_each_process_still_counts_and_sends_them_later(rates, monkeypatch, settings):
    rates("2/min", None)
    settings.RATE_LIMIT_SHARE_SECONDS = 0
    client = _redis_of_cache()
    AnnotatorThrottle._scripts.clear()
    original = client.evalsha

    def down(*args):
        raise redis.ConnectionError("Redis is restarting")

    monkeypatch.setattr(client, "evalsha", down)
    process = Process()
    answers = []
    for now in (3000.0, 3001.0, 3002.0):
        at(monkeypatch, now)
        answers.append(process.ask(9)[0])
    assert answers == [True, True, False]  # refused by the process's own count
    monkeypatch.setattr(client, "evalsha", original)
    monkeypatch.setattr(throttling, "_cache_down_until", 0.0)  # the retry time has passed
    other = Process()
    at(monkeypatch, 3003.0)
    assert other.ask(8)[0] is True  # another participant's request: this process shares nothing yet
    at(monkeypatch, 3004.0)
    assert process.ask(9)[0] is False  # and the first process sends its two at its next flush
    key = cache.make_key("throttle_vote.participant_annotator-p9:times")
    assert client.zcard(key) == 2


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
    keys = evalsha_calls(monkeypatch)
    assert AnnotatorThrottle().allow_request(request_of(1, 1), VIEW)
    assert keys == [(cache.make_key("throttle_vote.address_10.0.0.1:times"),)]


def test_a_window_past_its_limit_still_says_how_long_to_wait(rates, monkeypatch):
    # Hand-worked: 2 per minute; what other processes sent arrived with a flush, and the window at
    # t = 1060 holds 4 requests (1020, 1030, 1040, 1050). A place opens when the second newest, 1040,
    # leaves at 1100: 40 s. (REST framework's wait gives none past the limit: 2 - 4 + 1 < 1 slot.)
    rates("2/min", None)
    at(monkeypatch, 1060.0)
    monkeypatch.setattr(
        throttling._shared_windows,
        "check",
        lambda checks, now, member: [(False, [1050.0, 1040.0, 1030.0, 1020.0])],
    )
    throttle = AnnotatorThrottle()
    assert throttle.allow_request(request_of(3, 1), VIEW) is False
    assert throttle.wait() == 40.0


def test_under_half_its_limit_redis_answers_a_count_and_from_half_on_the_times(rates, monkeypatch, settings):
    # 10 a minute, every request shared as it is decided: after 4 the window holds 4 (under 5: a count
    # and the newest time); after the 5th, 5 (half: the times).
    rates("10/min", None)
    settings.RATE_LIMIT_SHARE_SECONDS = 0
    process = Process()
    key = cache.make_key("throttle_vote.participant_annotator-p4:times")
    for step in range(4):
        at(monkeypatch, 1000.0 + step)
        assert process.ask(4)[0] is True
    window = process.windows._windows[key]
    assert (window.counted, window.newest, window.known) == (4, 1003.0, [])
    at(monkeypatch, 1004.0)
    assert process.ask(4)[0] is True
    assert (window.counted, window.known) == (None, [1000.0, 1001.0, 1002.0, 1003.0, 1004.0])


def counted_four_then_six_unshared(rates, monkeypatch, settings, *, participant: int, after: float):
    """10 a minute for the participant: four requests at t = 1000 to 1003, each shared as it is decided
    (Redis answers a count of 4, newest 1003), then six from ``after`` a second apart that stay in the
    process (the interval is a minute). The process, to ask again."""
    rates("10/min", None)
    settings.RATE_LIMIT_SHARE_SECONDS = 0
    process = Process()
    for step in range(4):
        at(monkeypatch, 1000.0 + step)
        assert process.ask(participant)[0] is True
    settings.RATE_LIMIT_SHARE_SECONDS = 60
    for step in range(6):
        at(monkeypatch, after + step)
        assert process.ask(participant)[0] is True
    window = process.windows._windows[
        cache.make_key(f"throttle_vote.participant_annotator-p{participant}:times")
    ]
    assert (window.counted, window.newest) == (4, 1003.0)
    return process


def test_a_count_that_would_refuse_is_decided_again_on_the_times(rates, monkeypatch, settings):
    # Hand-worked, 10 a minute. Four requests at t = 1000 to 1003, each shared: Redis answers a count of
    # 4, newest 1003. Then six at 1050 to 1055, not shared (the interval is a minute): 4 + 6.
    # - At 1061.5 the count says 10, a refusal; but 1000 and 1001 have left the window (1001.5, 1061.5]:
    #   the times, read then, say 8 (1002, 1003, 1050 to 1055), and the request is allowed, as REST
    #   framework's window would allow it. One round trip, which also sends the six.
    # - At 1062 the window (1002, 1062] holds 8 (1002 has left, 1061.5 came), known from the times:
    #   allowed, no round trip; at 1062.5, 9: allowed.
    # - At 1062.6 it holds 10 (1003 to 1062.5): refused, no round trip; a place opens when the oldest,
    #   1003, leaves at 1063: 0.4 s.
    process = counted_four_then_six_unshared(rates, monkeypatch, settings, participant=5, after=1050.0)
    sent = evalsha_calls(monkeypatch)
    at(monkeypatch, 1061.5)
    assert process.ask(5) == (True, None)
    assert len(sent) == 1
    key = cache.make_key("throttle_vote.participant_annotator-p5:times")
    assert _redis_of_cache().zcard(key) == 8  # the six went with the times' round trip
    at(monkeypatch, 1062.0)
    assert process.ask(5) == (True, None)
    at(monkeypatch, 1062.5)
    assert process.ask(5) == (True, None)
    at(monkeypatch, 1062.6)
    assert process.ask(5) == (False, pytest.approx(0.4))
    assert len(sent) == 1


def test_a_count_that_the_times_confirm_is_refused_with_the_times_wait(rates, monkeypatch, settings):
    # Hand-worked, 10 a minute: a count of 4 (1000 to 1003), then six not shared at 1010 to 1015. At
    # 1016 the count says 10, and the times, read then, say 10 too: refused; a place opens when the
    # oldest, 1000, leaves at 1060: 44 s.
    process = counted_four_then_six_unshared(rates, monkeypatch, settings, participant=6, after=1010.0)
    sent = evalsha_calls(monkeypatch)
    at(monkeypatch, 1016.0)
    assert process.ask(6) == (False, 44.0)
    assert len(sent) == 1


def test_a_count_that_cannot_be_checked_refuses_with_a_wait_never_too_short(rates, monkeypatch, settings):
    # As above at 1061.5, but Redis does not answer: the count decides (10: refused), and the wait takes
    # the four counted requests to be as new as the newest, 1003: a place opens at 1063, 1.5 s on. At
    # 1063.5 the count has left the window with its newest, and the six of this process are in it.
    process = counted_four_then_six_unshared(rates, monkeypatch, settings, participant=7, after=1050.0)
    client = _redis_of_cache()
    AnnotatorThrottle._scripts.clear()

    def down(*args):
        raise redis.ConnectionError("Redis is restarting")

    monkeypatch.setattr(client, "evalsha", down)
    monkeypatch.setattr(throttling, "_cache_down_until", 0.0)  # restored after: the limits' retry time
    at(monkeypatch, 1061.5)
    assert process.ask(7) == (False, 1.5)
    at(monkeypatch, 1063.5)  # the newest counted, 1003, has left: the count with it; 6 of this process's
    assert process.ask(7) == (True, None)
