"""N annotators against a running Yardstick, each in a closed loop, as the voting page's script does.

Each annotator has its own cookies: it opens ``/s/<slug>/?participant=<id>``, consents (the form, with
its CSRF token), then repeats ``GET /api/studies/<slug>/next/`` and ``POST /api/votes/`` with the
``X-CSRFToken`` header, as ``static/collection/vote.js`` does; when a vote's answer carries the next
comparison (a ``next`` object), that one is voted on without asking ``GET next``. A vote whose answer did not arrive (a
network error or a 5xx) is sent again, as the page's plain-form fallback does: the server records a
vote once per assignment. A 204 is waited out (``Retry-After``, at most ``poll_seconds``: annotators
check faster than the page's 30 s so that a recovery is seen to the second); a 503 or 429 likewise.

Choices follow a Bradley-Terry crowd: every item has a hidden relatedness drawn from its tokens, and
each annotator picks the left item with probability σ(k·(s_left - s_right)), so annotators disagree.

Every request is recorded (time, endpoint, status or exception, latency) for the report.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx

ENDPOINTS = ("join", "next", "vote")
STOP_GRACE_SECONDS = 5.0  # after the run's end, how long a request in flight may still finish


@dataclass
class LoadConfig:
    base_url: str
    slug: str
    annotators: int = 50
    seconds: float = 30.0
    think_ms: float = 0.0  # mean think time (exponential) between a comparison and its vote
    poll_seconds: float = 1.0
    request_timeout: float = 30.0
    resend_attempts: int = 10
    participant_prefix: str = "load"
    steepness: float = 4.0  # k of σ(k·Δs): larger, the crowd agrees more
    seed: int = 0


@dataclass
class Sample:
    at: float  # seconds since the recorder started, when the request ended
    endpoint: str
    outcome: str  # the HTTP status ("201") or the exception's class name
    seconds: float


@dataclass
class Recorder:
    started: float = field(default_factory=time.monotonic)
    started_wall: datetime = field(default_factory=lambda: datetime.now(UTC))
    samples: list[Sample] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.started

    def wall(self, at: float) -> datetime:
        """The wall-clock time of ``at`` seconds into the run (to compare with database timestamps)."""
        return self.started_wall + timedelta(seconds=at)

    def record(self, endpoint: str, outcome: str, seconds: float) -> None:
        self.samples.append(Sample(self.now(), endpoint, outcome, seconds))

    def event(self, what: str) -> float:
        at = self.now()
        self.events.append((at, what))
        return at

    def window(self, start: float = 0.0, end: float = math.inf) -> list[Sample]:
        return [s for s in self.samples if start <= s.at < end]

    def first(self, endpoint: str, outcome: str, after: float) -> float | None:
        """When the first ``endpoint`` request answered ``outcome`` after ``after`` (None: never)."""
        times = [
            s.at for s in self.samples if s.endpoint == endpoint and s.outcome == outcome and s.at >= after
        ]
        return min(times) if times else None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, math.ceil(q / 100 * len(ordered)) - 1)
    return ordered[rank]


def summarize(samples: list[Sample], seconds: float) -> dict:
    """Votes per second, and per endpoint: requests, outcomes, latency percentiles (ms)."""
    report = {
        "seconds": round(seconds, 1),
        "votes_created": sum(1 for s in samples if s.endpoint == "vote" and s.outcome == "201"),
        "endpoints": {},
    }
    report["votes_per_second"] = round(report["votes_created"] / seconds, 1) if seconds else None
    for endpoint in ENDPOINTS:
        chosen = [s for s in samples if s.endpoint == endpoint]
        if not chosen:
            continue
        latencies = [s.seconds * 1000 for s in chosen]
        report["endpoints"][endpoint] = {
            "requests": len(chosen),
            "outcomes": dict(sorted(Counter(s.outcome for s in chosen).items())),
            "p50_ms": round(percentile(latencies, 50), 1),
            "p90_ms": round(percentile(latencies, 90), 1),
            "p99_ms": round(percentile(latencies, 99), 1),
            "max_ms": round(max(latencies), 1),
        }
    outcomes = Counter(s.outcome for s in samples)
    report["status_5xx"] = {k: v for k, v in sorted(outcomes.items()) if k.isdigit() and k.startswith("5")}
    report["network_errors"] = {k: v for k, v in sorted(outcomes.items()) if not k.isdigit()}
    return report


def hidden_relatedness(tokens: list[str]) -> float:
    """An item's relatedness for the simulated crowd: a stable number in [0, 1) from its tokens."""
    return zlib.crc32("|".join(sorted(tokens)).encode()) / 2**32


class Annotator:
    """One simulated annotator with its own cookies and its own random choices."""

    def __init__(self, number: int, config: LoadConfig, recorder: Recorder, stop: asyncio.Event):
        self.config = config
        self.recorder = recorder
        self.stop = stop
        self.participant = f"{config.participant_prefix}-{number}"
        self.random = random.Random(f"{config.seed}-{number}")
        self.client = httpx.AsyncClient(
            base_url=config.base_url, timeout=config.request_timeout, follow_redirects=False
        )
        self.finished = False

    async def request(self, endpoint: str, method: str, url: str, **kwargs) -> httpx.Response | None:
        """The response, or None after a network error (recorded as the exception's class name)."""
        started = time.monotonic()
        try:
            response = await self.client.request(method, url, **kwargs)
        except httpx.HTTPError as error:
            self.recorder.record(endpoint, type(error).__name__, time.monotonic() - started)
            return None
        self.recorder.record(endpoint, str(response.status_code), time.monotonic() - started)
        return response

    async def pause(self, response: httpx.Response | None) -> None:
        """Waits as the server asks (Retry-After), at most poll_seconds, or until the run stops."""
        wait = self.config.poll_seconds
        if response is not None and response.headers.get("Retry-After", "").isdigit():
            wait = min(wait, max(0.1, float(response.headers["Retry-After"])))
        wait *= 0.5 + self.random.random()  # spread the retries of many annotators
        try:
            await asyncio.wait_for(self.stop.wait(), timeout=wait)
        except TimeoutError:
            pass

    def csrf_headers(self) -> dict[str, str]:
        return {"X-CSRFToken": self.client.cookies.get("csrftoken", ""), "Accept": "application/json"}

    async def join(self) -> bool:
        entry = f"/s/{self.config.slug}/"
        while not self.stop.is_set():
            page = await self.request("join", "GET", entry, params={"participant": self.participant})
            if page is not None and page.status_code == 200 and "csrftoken" in self.client.cookies:
                form = {
                    "consent": "yes",
                    "participant": self.participant,
                    "csrfmiddlewaretoken": self.client.cookies["csrftoken"],
                }
                consent = await self.request("join", "POST", entry, data=form)
                if consent is not None and consent.status_code == 302:
                    return True
                page = consent
            await self.pause(page)
        return False

    def choose(self, comparison: dict) -> str:
        left = hidden_relatedness(comparison["left"]["tokens"])
        right = hidden_relatedness(comparison["right"]["tokens"])
        p_left = 1 / (1 + math.exp(-self.config.steepness * (left - right)))
        return "left" if self.random.random() < p_left else "right"

    async def vote(self, assignment: int, choice: str, client_ms: int) -> dict | None:
        """Sends the vote until an answer says what became of it (resending is safe); returns the next
        comparison when the vote's answer carries one (its ``next``), else None."""
        body = {"assignment": assignment, "choice": choice, "client_response_ms": client_ms}
        for _ in range(self.config.resend_attempts):
            response = await self.request(
                "vote", "POST", "/api/votes/", json=body, headers=self.csrf_headers()
            )
            if response is not None and response.status_code < 500 and response.status_code != 429:
                # 201 stored, 200 already stored, 409 lease expired or ballot closed, 4xx refused
                return next_of_vote(response)
            await self.pause(response)
            if self.stop.is_set():
                return None
        return None

    async def play(self) -> None:
        try:
            if await self.join():
                await self.judge()
        finally:
            await self.client.aclose()

    async def judge(self) -> None:
        """The closed loop after consent: a comparison, a vote, and so on until the run stops."""
        next_url = f"/api/studies/{self.config.slug}/next/"
        comparison = None
        while not self.stop.is_set():
            if comparison is None:
                comparison = await self.next_comparison(next_url)
                if comparison is None:
                    if self.finished:
                        return
                    continue
            shown = time.monotonic()
            if self.config.think_ms > 0:
                think = self.random.expovariate(1000 / self.config.think_ms)
                try:
                    await asyncio.wait_for(self.stop.wait(), timeout=think)
                    return
                except TimeoutError:
                    pass
            client_ms = max(1, int((time.monotonic() - shown) * 1000))
            comparison = await self.vote(comparison["assignment"], self.choose(comparison), client_ms)

    async def next_comparison(self, next_url: str) -> dict | None:
        """``GET next``: the comparison, or None after waiting as the answer asks (``finished`` set when
        the study is over)."""
        response = await self.request("next", "GET", next_url, headers={"Accept": "application/json"})
        if response is None or response.status_code != 200:
            if response is not None and response.headers.get("X-Yardstick-Reason") == "finished":
                self.finished = True
                return None
            if response is not None and response.status_code == 403:
                await self.join()  # the session was lost: consent again
                return None
            await self.pause(response)
            return None
        return response.json()


def next_of_vote(response: httpx.Response) -> dict | None:
    """The next comparison carried by a vote's answer (``next``), if the server sends one; None sends
    the annotator to ``GET next``, as the voting page does without it."""
    try:
        body = response.json()
    except ValueError:
        return None
    following = body.get("next") if isinstance(body, dict) else None
    return following if isinstance(following, dict) and "assignment" in following else None


async def run_load(config: LoadConfig, recorder: Recorder | None = None, stop: asyncio.Event | None = None):
    """Plays ``config.annotators`` annotators for ``config.seconds`` (or until ``stop`` is set, or every
    annotator has been told the study is finished); returns (recorder, annotators finished)."""
    recorder = recorder or Recorder()
    stop = stop or asyncio.Event()
    players = [Annotator(number, config, recorder, stop) for number in range(config.annotators)]
    tasks = [asyncio.create_task(player.play()) for player in players]
    await asyncio.wait(tasks, timeout=config.seconds)
    stop.set()
    _, unfinished = await asyncio.wait(tasks, timeout=STOP_GRACE_SECONDS)
    for task in unfinished:  # a request still waiting for its answer: not recorded
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()
    return recorder, sum(player.finished for player in players)
