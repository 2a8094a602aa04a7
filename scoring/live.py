"""The live view of a running study: how fast it is voted, when its ballots and the study should end,
who is voting, how the checks go, and the top of the last closed ballot.

Every figure comes from a summary, never from the votes themselves, so that a refresh costs the same
at the first vote and the millionth: the ballots' counters (``BallotCounter``), the annotators' rows,
the check answers' count, the last closed ballot's ``ItemScore`` rows, and a per-study series of
samples of the votes recorded (``LiveSample``, at most one a minute, taken on read and by Celery beat).
Two figures cost more and are kept in Django's cache: the plan (frozen once the study has started) and
the quality flags, judged on every vote once per closed ballot. The whole view is cached for
``LIVE_CACHE_SECONDS``, so that many researchers polling cost one read per study in that time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import NormalDist

from django.core.cache import cache
from django.db.models import Count, Q, Sum
from django.utils import timezone

from collection.models import Annotator, Assignment, Ballot, BallotCounter, CheckAnswer, ItemScore, Study
from collection.studies import study_plan
from common.errors import ServiceError
from common.numbers import percent_done
from scoring.models import LiveSample
from scoring.selectors import annotator_figures

LIVE_SAMPLE_SECONDS = 60  # one sample a minute at most (the unique constraint's unit)
LIVE_SAMPLES_KEPT_MINUTES = 24 * 60  # the series keeps the last day
LIVE_SERIES_POINTS = 240  # at most this many samples in one answer: the day thinned evenly
LIVE_RATE_WINDOW_SECONDS = 10 * 60  # the current rate: votes over the last ten minutes
LIVE_RATE_MIN_SECONDS = 30  # a rate over less time than this is noise: none is given
LIVE_TOP = 10  # the top items shown from the last closed ballot
LIVE_CACHE_SECONDS = 5  # one computation per study in this time, however many researchers poll
LIVE_INTERVAL_LEVEL = 0.95
PLAN_CACHE_SECONDS = 3600
FLAGS_CACHE_SECONDS = 24 * 3600  # judged again at the next close, or after a day
LIVE_CACHE_KEY = "live:{}"


@dataclass(frozen=True)
class Rate:
    """Votes per second over the window from ``since`` to ``until``; None when the window is too short."""

    votes_per_second: float | None
    since: datetime | None
    until: datetime
    votes: int


def study_votes_recorded(*, study: Study) -> int:
    """Votes recorded in every ballot of the study: the sum of its counters' parts (one query)."""
    total = BallotCounter.objects.filter(ballot__study=study).aggregate(total=Sum("votes"))["total"]
    return int(total or 0)


def live_sample_take(*, study: Study, now: datetime | None = None, votes: int | None = None) -> None:
    """Record the study's votes at this minute unless a sample of this minute exists (the unique
    constraint decides between writers); drop samples older than ``LIVE_SAMPLES_KEPT_MINUTES``."""
    now = now or timezone.now()
    minute = now.replace(second=0, microsecond=0)
    if votes is None:
        votes = study_votes_recorded(study=study)
    LiveSample.objects.bulk_create(
        [LiveSample(study=study, minute=minute, at=now, votes=votes)], ignore_conflicts=True
    )
    oldest_kept = minute - timedelta(minutes=LIVE_SAMPLES_KEPT_MINUTES)
    LiveSample.objects.filter(study=study, minute__lt=oldest_kept).delete()


def live_samples_take(*, now: datetime | None = None) -> int:
    """Celery beat: a sample of every running study. Returns how many studies were sampled."""
    now = now or timezone.now()
    studies = list(Study.objects.filter(status=Study.Status.RUNNING))
    for study in studies:
        live_sample_take(study=study, now=now)
    return len(studies)


def vote_rate(*, samples: list[LiveSample], now: datetime, votes_now: int) -> Rate:
    """The current rate: (votes now − votes at the oldest sample of the last ``LIVE_RATE_WINDOW_SECONDS``)
    / the seconds between them; None without a sample at least ``LIVE_RATE_MIN_SECONDS`` old."""
    window_start = now - timedelta(seconds=LIVE_RATE_WINDOW_SECONDS)
    in_window = [sample for sample in samples if window_start <= sample.at < now]
    if in_window:
        first = in_window[0]
        elapsed = (now - first.at).total_seconds()
        if elapsed >= LIVE_RATE_MIN_SECONDS:
            return Rate(max(0, votes_now - first.votes) / elapsed, first.at, now, votes_now - first.votes)
    return Rate(None, None, now, 0)


def wilson_interval(wins: float, appearances: int, level: float = LIVE_INTERVAL_LEVEL) -> list[float] | None:
    """The Wilson score interval of a proportion wins / appearances (Wilson 1927, Eq. 2 of Brown, Cai
    and DasGupta 2001), [low, high]; None without an appearance.

    Written here because a tie counts half a win (Eq. 1), and scipy's binomial interval wants whole
    successes.
    """
    if appearances <= 0:
        return None
    z = NormalDist().inv_cdf(
        0.5 + level / 2
    )  # the standard library's: scipy.stats would weigh on every web process
    share = wins / appearances
    spread = z * math.sqrt(share * (1 - share) / appearances + z * z / (4 * appearances * appearances))
    centre = share + z * z / (2 * appearances)
    scale = 1 + z * z / appearances
    return [max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)]


def study_live(*, study: Study, now: datetime | None = None, use_cache: bool = True) -> dict:
    """The live view of ``study`` as a JSON-ready dict (see ``scoring.live`` and the API's
    ``LiveSerializer``); cached ``LIVE_CACHE_SECONDS`` per study unless ``use_cache`` is False."""
    key = LIVE_CACHE_KEY.format(study.pk)
    if use_cache:
        try:
            stored = cache.get(key)
        except Exception:  # the cache (Redis) is away: compute it, as bounded as ever
            stored = None
        if stored is not None:
            return stored
    live = _study_live(study=study, now=now or timezone.now())
    if use_cache:
        try:
            cache.set(key, live, LIVE_CACHE_SECONDS)
        except Exception:
            pass  # a courtesy only; the next read computes it again
    return live


def _study_live(*, study: Study, now: datetime) -> dict:
    ballots = list(Ballot.objects.filter(study=study).order_by("number"))  # at most MAX_BALLOTS rows
    votes_now = sum(ballot.votes_recorded for ballot in ballots)
    running = study.status == Study.Status.RUNNING
    samples = _samples(study=study)
    if running and (not samples or samples[-1].minute < now.replace(second=0, microsecond=0)):
        live_sample_take(study=study, now=now, votes=votes_now)
        samples = _samples(study=study)
    rate = vote_rate(samples=samples, now=now, votes_now=votes_now)
    per_second = rate.votes_per_second

    planned = _planned_comparisons(study)
    rows = []
    remaining_before = 0  # comparisons still to vote in the ballots up to this one
    for number in range(1, study.ballot_count + 1):
        ballot = ballots[number - 1] if number <= len(ballots) else None
        comparisons = ballot.comparison_count if ballot else (planned[number - 1] if planned else None)
        votes = ballot.votes_recorded if ballot else 0
        status = ballot.status if ballot else "planned"
        remaining = (
            0 if status == Ballot.Status.CLOSED or comparisons is None else max(0, comparisons - votes)
        )
        remaining_before += remaining
        closed_at = ballot.closed_at if ballot else None
        rows.append(
            {
                "number": number,
                "status": status,
                "comparisons": comparisons,
                "votes": votes,
                "percent": percent_done(votes, comparisons) if comparisons else 0,
                "opened_at": ballot.opened_at if ballot else None,
                "closed_at": closed_at,
                "duration_seconds": (closed_at - ballot.opened_at).total_seconds() if closed_at else None,
                "close_seconds": ballot.close_seconds if ballot else None,
                "expected_end": _expected(
                    now,
                    remaining_before,
                    per_second,
                    running and status != "closed" and comparisons is not None,
                ),
            }
        )
    known = all(row["comparisons"] is not None for row in rows)
    study_remaining = remaining_before if known else None
    last_closed = next(
        (ballot for ballot in reversed(ballots) if ballot.status == Ballot.Status.CLOSED), None
    )
    return {
        "study": study.slug,
        "status": study.status,
        "now": now,
        "votes": votes_now,
        "series": _thinned(samples),
        "rate": {
            "votes_per_minute": per_second * 60 if per_second is not None else None,
            "since": rate.since,
            "votes": rate.votes,
            "window_seconds": LIVE_RATE_WINDOW_SECONDS,
        },
        "ballots": rows,
        "remaining_comparisons": study_remaining,
        "expected_end": _expected(now, study_remaining or 0, per_second, running and known),
        "annotators": _annotators(study=study, now=now, last_closed=last_closed),
        "checks": _checks(study=study),
        "top": _top(last_closed),
    }


def _samples(*, study: Study) -> list[LiveSample]:
    # Bounded: at most one a minute for LIVE_SAMPLES_KEPT_MINUTES (older ones are dropped as new come).
    return list(LiveSample.objects.filter(study=study).order_by("minute")[: LIVE_SAMPLES_KEPT_MINUTES + 1])


def _thinned(samples: list[LiveSample]) -> list[dict]:
    """At most ``LIVE_SERIES_POINTS`` samples, evenly spaced, always with the latest."""
    step = max(1, math.ceil(len(samples) / LIVE_SERIES_POINTS))
    kept = samples[::-1][::step][::-1]
    return [{"at": sample.at, "votes": sample.votes} for sample in kept]


def _expected(now: datetime, remaining: int, per_second: float | None, applies: bool) -> datetime | None:
    """now + remaining / rate; None when it does not apply or the rate is unknown or zero."""
    if not applies:
        return None
    if remaining == 0:
        return now
    if not per_second:
        return None
    return now + timedelta(seconds=remaining / per_second)


def _planned_comparisons(study: Study) -> tuple[int, ...] | None:
    """The plan's comparisons per ballot (frozen once the study started), cached; None without a plan."""
    key = f"live-plan:{study.pk}:{study.settings_version}:{study.status}"
    try:
        stored = cache.get(key)
    except Exception:
        stored = None
    if stored is not None:
        return tuple(stored)
    try:
        comparisons = tuple(study_plan(study=study).comparisons)
    except ServiceError:
        return None
    try:
        cache.set(key, list(comparisons), PLAN_CACHE_SECONDS)
    except Exception:
        pass
    return comparisons


def _annotators(*, study: Study, now: datetime, last_closed: Ballot | None) -> dict:
    counts = Annotator.objects.filter(study=study).aggregate(
        total=Count("pk"),
        finished=Count("pk", filter=Q(finished_at__isnull=False)),
        excluded=Count("pk", filter=Q(excluded_at__isnull=False)),
    )
    # A voting annotator always holds one: each vote's answer leases the next comparison.
    active = Assignment.objects.filter(
        ballot__study=study, status=Assignment.Status.ACTIVE, expires_at__gt=now
    ).count()
    flagged, flags_judged_at = _flagged(study=study, last_closed=last_closed)
    return {**counts, "active": active, "flagged": flagged, "flags_judged_at": flags_judged_at}


def _flagged(*, study: Study, last_closed: Ballot | None) -> tuple[int | None, datetime | None]:
    """How many annotators the quality thresholds flag, judged on every vote once per closed ballot
    (as the exclusion rule is) and cached until the next close (or a day); (None, None) before the first close."""
    if last_closed is None:
        return None, None
    key = f"live-flags:{study.pk}:{last_closed.number}:{study.settings_version}"
    try:
        stored = cache.get(key)
    except Exception:
        stored = None
    if stored is None:
        stored = (int(annotator_figures(study=study).flagged.sum()), timezone.now())
        try:
            cache.set(key, stored, FLAGS_CACHE_SECONDS)
        except Exception:
            pass
    return stored


def _checks(*, study: Study) -> dict:
    counts = CheckAnswer.objects.filter(annotator__study=study).aggregate(
        answered=Count("pk"), correct=Count("pk", filter=Q(correct=True))
    )
    answered = counts["answered"]
    return {
        "rate": study.check_rate,
        "answered": answered,
        "correct": counts["correct"],
        "accuracy": counts["correct"] / answered if answered else None,
    }


def _top(last_closed: Ballot | None) -> dict | None:
    """The ``LIVE_TOP`` items of the last closed ballot by ȳ(k), with their win ratio x(k) and its 95%
    Wilson interval over their appearances in that ballot."""
    if last_closed is None:
        return None
    scores = (
        ItemScore.objects.filter(ballot=last_closed, score__isnull=False)
        .select_related("item__area", "item__token_a", "item__token_b")
        .order_by("-score", "item__index")[:LIVE_TOP]
    )
    return {
        "ballot": last_closed.number,
        "closed_at": last_closed.closed_at,
        "level": LIVE_INTERVAL_LEVEL,
        "items": [
            {
                "item": score.item_id,
                "tokens": [score.item.token_a.text, score.item.token_b.text],
                "area": score.item.area.name,
                "score": score.score,
                "win_ratio": score.win_ratio,
                "appearances": score.appearances,
                "interval": wilson_interval(score.wins + score.ties / 2, score.appearances),
            }
            for score in scores
        ],
    }
