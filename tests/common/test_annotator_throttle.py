"""common.throttling.AnnotatorThrottle: REST framework's two annotator limits, checked together.

It must answer exactly as ``ParticipantThrottle`` then ``AddressThrottle`` checked one by one (REST
framework's way, which records a request with every limit that allows it, even when another refuses);
hypothesis drives both with the same crowd of participants sharing addresses, at the same clock. On
the embedded default's memory cache the stored histories are REST framework's own lists and must be
equal too; on Redis (the full stack, where these tests also run, and tests/integration/
test_annotator_limits_redis.py, which insists on Redis) each process decides on its own windows and
shares them through Redis's sorted sets in batches; within one process the answers are the same.
"""

import os
import threading
import time
from types import SimpleNamespace

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.test import RequestFactory, override_settings
from hypothesis import event, given, settings
from hypothesis import strategies as st
from rest_framework.throttling import SimpleRateThrottle

from common.throttling import (
    AddressThrottle,
    AnnotatorThrottle,
    ParticipantThrottle,
    _redis_of_cache,
    _SharedWindows,
    reset_shared_windows,
)

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
    reset_shared_windows()
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
    monkeypatch.setattr("common.throttling._redis_of_cache", lambda backend=None: None)  # the lists' way
    rates(None, "2/min")
    asked = []
    monkeypatch.setattr(cache, "get_many", lambda keys: asked.append(list(keys)) or {})
    assert together(request_of(1, 1)) == (True, None)
    assert asked == [["throttle_vote.address_10.0.0.1"]]


def test_one_read_and_one_write_per_request(rates, monkeypatch):
    monkeypatch.setattr("common.throttling._redis_of_cache", lambda backend=None: None)  # the lists' way
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


class FakeRedisScript:
    """The sharing script's effect (``_SHARE_WINDOWS_LUA``) on dicts of sorted sets, for the windows'
    bookkeeping without a server; tests/integration/test_annotator_limits_redis.py runs the real one."""

    def __init__(self):
        self.sets: dict[str, dict[str, float]] = {}
        self.calls = 0

    def __call__(self, keys, args):
        self.calls += 1
        time.sleep(0.002)  # a round trip's wait, in which the process's other threads decide
        answers, at = [], 0
        for key in keys:
            start, _seconds, limit, wanted, count = (
                float(args[at]),
                args[at + 1],
                int(args[at + 2]),
                args[at + 3] == 1,
                int(args[at + 4]),
            )
            at += 5
            entries = {member: time for member, time in self.sets.get(key, {}).items() if time > start}
            for _ in range(count):
                entries[args[at + 1]] = float(args[at])
                at += 2
            self.sets[key] = entries
            times = sorted(entries.values())
            if times and not wanted and 2 * len(times) < limit:  # under half the limit: the count
                answers.append([len(times), repr(times[-1])])
            else:
                answers.append([repr(time) for time in times[-limit:]])
        return answers


class TimesAlwaysScript(FakeRedisScript):
    """The sharing script as it was before counts: every key's times, on every flush."""

    def __call__(self, keys, args):
        at, forced = 0, list(args)
        for _ in keys:
            forced[at + 3] = 1
            at += 5 + 2 * int(args[at + 4])
        return super().__call__(keys, forced)


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["p1", "p2"]),
            st.sampled_from([0.0, 0.5, 2.0, 7.5, 30.0, 59.0]) | st.floats(0, 70),
            st.integers(0, 5).map(lambda draw: draw == 0),  # a flush after one request in six
        ),
        min_size=1,
        max_size=80,
    ),
    limit=st.integers(2, 12),
)
def test_a_count_from_redis_decides_as_the_times_would(steps, limit):
    """One process's requests over two participants (limit in 60 s), with a flush after some of them:
    deciding on Redis's counts (and on the times, read then, where a count would refuse) gives every
    request the answer and the wait that deciding on the times of every flush gives; and it reads the
    times back only for a request that the count would refuse."""
    counting, timing = _SharedWindows(), _SharedWindows()
    counts, times = FakeRedisScript(), TimesAlwaysScript()
    now, fetched, allowed_after_fetch = 1000.0, 0, 0
    for index, (participant, gap, flush) in enumerate(steps):
        now += gap
        checks = [(participant, 60, limit)]
        calls = counts.calls
        window = counting._windows.get(participant)
        stale = window is not None and window.counted and window.counted_in(now - 60)
        refused_by_count = stale and window.count(now) >= limit
        by_count = counting.decide(
            checks, now, f"m{index}", lambda keys, now=now: counting.flush(counts, now, keys)
        )
        by_times = timing.decide(
            checks, now, f"m{index}", lambda keys, now=now: timing.flush(times, now, keys)
        )
        allowed, history = by_times[0]
        assert by_count == [(allowed, history)]
        assert counts.calls == calls + int(bool(refused_by_count))
        fetched += counts.calls - calls
        allowed_after_fetch += counts.calls > calls and allowed
        if flush:
            counting.flush(counts, now)
            timing.flush(times, now)
    # A read of the times also sends what the process has not sent yet, so the two may hold different
    # requests until both have sent everything, and different ones that have left the window (which
    # Redis trims at the key's next write, and expires): then the requests within the window are the same.
    counting.flush(counts, now)
    timing.flush(times, now)

    def within_the_window(sets):
        kept = {key: {m: at for m, at in entries.items() if at > now - 60} for key, entries in sets.items()}
        return {key: entries for key, entries in kept.items() if entries}

    assert within_the_window(counts.sets) == within_the_window(times.sets)
    event("a request the count would refuse", fetched > 0)
    event("one that the times allowed", allowed_after_fetch > 0)


def test_the_windows_keep_a_bounded_number_of_keys_and_send_only_those_kept():
    windows = _SharedWindows(keys_kept=3)
    for number in range(5):
        windows.check([(f"key-{number}", 60, 10)], now=100.0 + number, member=f"m{number}")
    script = FakeRedisScript()
    windows.flush(script, now=110.0)
    assert sorted(script.sets) == ["key-2", "key-3", "key-4"]


def test_threads_deciding_while_one_flushes_send_every_allowed_request_once():
    # 8 threads, each 400 requests over 4 participants (limit 30 in 60 s) and one address (limit 500),
    # the clock advancing 0.05 s per request; a flush after every 25th. Whatever the interleaving, what
    # the fake Redis holds is exactly the requests allowed, per key, and no window ever allowed more
    # than its limit in this one process.
    windows = _SharedWindows()
    script = FakeRedisScript()
    allowed: dict[str, list[float]] = {}
    lock = threading.Lock()

    def annotator_crowd(thread: int):
        for step in range(400):
            now = 1000.0 + step * 0.05
            checks = [(f"participant-{(thread + step) % 4}", 60, 30), ("address", 60, 500)]
            answers = windows.decide(
                checks, now, f"{thread}:{step}", lambda keys, now=now: windows.flush(script, now, wanted=keys)
            )
            with lock:
                for (key, _, _), (ok, _) in zip(checks, answers, strict=True):
                    if ok:
                        allowed.setdefault(key, []).append(now)
            if step % 25 == 24:
                windows.flush(script, now=now)

    threads = [threading.Thread(target=annotator_crowd, args=(thread,)) for thread in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    windows.flush(script, now=1000.0 + 399 * 0.05)
    assert {key: len(entries) for key, entries in script.sets.items()} == {
        key: len(times) for key, times in allowed.items()
    }
    assert all(len(times) <= 30 for key, times in allowed.items() if key.startswith("participant"))
    assert len(allowed["address"]) == 500


def test_a_history_entry_names_the_process_that_counted_it_also_in_a_forked_child():
    """Two processes of one host (gunicorn's workers, forked from one master with the token drawn
    before the fork) never write the same entry: each entry carries the process id of the one that
    counted it, read again in a forked child, and its count of requests."""
    from common import throttling

    parent = [throttling._member() for _ in range(3)]
    assert len(set(parent)) == 3
    assert {member.rsplit(":", 1)[0] for member in parent} == {f"{throttling._HOST}:{os.getpid()}"}

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report its first entries, then leave at once (no test teardown)
        try:
            os.write(write, " ".join(throttling._member() for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_members = pipe.read().split()
    os.waitpid(child, 0)
    assert {member.rsplit(":", 1)[0] for member in child_members} == {f"{throttling._HOST}:{child}"}
    assert not set(child_members) & set(parent)
