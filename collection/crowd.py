"""Crowd platforms' conventions: an exit and a code for each outcome, the platform's parameters, and
what the consent page promises (comparisons, minutes, pay).

A participant leaves with a completion code: the study's ``completion_code`` when they completed their
work, its ``no_work_code`` when there was none for them (nothing left to judge when they arrived, or a
wait for work longer than the study's ``max_wait_seconds``), its ``screened_out_code`` when they were
excluded (``collection.exclusion``). With ``participant_codes`` each
participant also gets a code of their own per outcome: ``HMAC-SHA256(key = the study's participant
secret, message = "<annotator id>:<outcome>")``, its first 50 bits in base32, as ``XXXXX-XXXXX``.
It is stable (the same annotator and outcome give the same code), cannot be made without the secret,
and needs no row: the exports compute it again beside each annotator, so a researcher matches the code
a participant pasted into the platform.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from urllib.parse import urlencode, urlsplit, urlunsplit

import numpy as np
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db.models import Count, Max, Q
from django.utils import timezone
from django.utils.translation import gettext

from collection.models import Annotator, Study, Vote
from collection.studies import study_plan
from common.errors import ServiceError
from scoring.agreement import median_by_group
from scoring.quality import judged


class Outcome:
    """How a participant leaves the study; each outcome has its code."""

    COMPLETED = "completed"
    NO_WORK = "no_work"
    SCREENED_OUT = "screened_out"  # excluded from the study (collection/exclusion.py)


OUTCOMES = (Outcome.COMPLETED, Outcome.NO_WORK, Outcome.SCREENED_OUT)


def outcome_code(*, study: Study, outcome: str) -> str:
    """The study-wide completion code of an outcome."""
    if outcome == Outcome.SCREENED_OUT:
        return study.screened_out_code
    return study.completion_code if outcome == Outcome.COMPLETED else study.no_work_code


def participant_code(*, study: Study, annotator_id: int, outcome: str) -> str:
    """The annotator's own code for ``outcome``: HMAC-SHA256 of "<id>:<outcome>", 50 bits in base32."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
    digest = hmac.new(
        study.participant_secret.encode(), f"{annotator_id}:{outcome}".encode(), hashlib.sha256
    ).digest()
    text = base64.b32encode(digest).decode()[:10]
    return f"{text[:5]}-{text[5:]}"


@dataclass(frozen=True)
class Exit:
    """What the page of a leaving participant shows: the outcome, its code, the participant's own code,
    and for a worker sent by MTurk the form that submits their assignment (``mturk_submit_action``)."""

    outcome: str
    code: str
    personal_code: str
    mturk_action: str = ""
    mturk_assignment_id: str = ""


# MTurk's ExternalQuestion: the worker's page ends by posting a form with the ``assignmentId`` (and any
# other fields, which the requester reads in the results) to ``<turkSubmitTo>/mturk/externalSubmit``.
# turkSubmitTo comes in the link, so anyone can write one: the form goes only to MTurk's own hosts (the
# production site and the sandbox), which the Content-Security-Policy's form-action also names.
MTURK_SUBMIT_HOSTS = ("www.mturk.com", "workersandbox.mturk.com")
MTURK_SUBMIT_PATH = "/mturk/externalSubmit"
# The assignmentId of a HIT's preview, before the worker accepts it: nothing to submit.
MTURK_PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"


def mturk_submit_action(annotator: Annotator | None) -> str:
    """Where the exit's form submits the annotator's MTurk assignment, or "" (not from MTurk, a preview,
    or a turkSubmitTo that is not one of MTurk's hosts). MTurk sends the host (``https://www.mturk.com``);
    a link that already carries the path is taken too."""
    if annotator is None or annotator.mturk_assignment_id in ("", MTURK_PREVIEW_ASSIGNMENT):
        return ""
    parts = urlsplit(annotator.mturk_submit_to)
    if (
        parts.scheme != "https"
        or parts.netloc not in MTURK_SUBMIT_HOSTS
        or parts.path.rstrip("/") not in ("", MTURK_SUBMIT_PATH)
        or parts.query
        or parts.fragment
    ):
        return ""
    return f"https://{parts.netloc}{MTURK_SUBMIT_PATH}"


def study_exit(*, study: Study, annotator: Annotator | None, outcome: str) -> Exit:
    personal = ""
    if study.participant_codes and annotator is not None:
        personal = participant_code(study=study, annotator_id=annotator.pk, outcome=outcome)
    action = mturk_submit_action(annotator)
    return Exit(
        outcome=outcome,
        code=outcome_code(study=study, outcome=outcome),
        personal_code=personal,
        mturk_action=action,
        mturk_assignment_id=annotator.mturk_assignment_id if action else "",
    )


def completion_url(study: Study, code: str | None = None) -> str:
    """The crowd platform's completion URL, with ``?cc=<code>`` added when it has no query of its own.

    ``code`` is the outcome's code (``outcome_code``), the completion code by default.
    """
    url = study.completion_redirect_url
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.query:
        return url
    return urlunsplit(parts._replace(query=urlencode({"cc": code or study.completion_code})))


# --- waiting for work ----------------------------------------------------------------------------


def annotator_waited_seconds(*, annotator: Annotator, now: datetime | None = None) -> float:
    """Seconds since the annotator last had work: their latest vote, else their consent.

    Read only when there is no comparison for them, so the vote's path carries no extra write.
    """
    now = now or timezone.now()
    last_vote = Vote.objects.filter(annotator_id=annotator.pk).aggregate(last=Max("created_at"))["last"]
    consented = Annotator.objects.values_list("consented_at", flat=True).get(pk=annotator.pk)
    since = max((moment for moment in (last_vote, consented) if moment is not None), default=now)
    return max(0.0, (now - since).total_seconds())


# --- the platform's parameters -------------------------------------------------------------------

# Query parameter -> Annotator field. The participant id itself (PROLIFIC_PID, workerId) is the
# annotator's participant_id (collection/views.py, PARTICIPANT_PARAMETERS).
PLATFORM_PARAMETERS = {
    "STUDY_ID": "prolific_study_id",
    "SESSION_ID": "prolific_session_id",
    "hitId": "mturk_hit_id",
    "assignmentId": "mturk_assignment_id",
    "turkSubmitTo": "mturk_submit_to",
}
MAX_PLATFORM_ID_LENGTH = 128
MAX_SUBMIT_URL_LENGTH = 200
_SUBMIT_URL = URLValidator(schemes=["https"])


def platform_parameters(data) -> tuple[dict[str, str], str]:
    """({query parameter: value} of the platform's parameters in ``data``, "" or why they are refused)."""
    values = {name: data.get(name, "").strip() for name in PLATFORM_PARAMETERS}
    values = {name: value for name, value in values.items() if value}
    for name, value in values.items():
        limit = MAX_SUBMIT_URL_LENGTH if name == "turkSubmitTo" else MAX_PLATFORM_ID_LENGTH
        if not value.isprintable():
            return values, gettext(
                "This link is not valid: its %(parameter)s holds control characters, which no crowd "
                "platform sends. Open the link you were given, unchanged."
            ) % {"parameter": name}
        if len(value) > limit:
            return values, gettext(
                "This link is not valid: its %(parameter)s is %(length)s characters long, and crowd "
                "platforms send at most %(maximum)s. Open the link you were given, unchanged."
            ) % {"parameter": name, "length": f"{len(value):,}", "maximum": limit}
        if name == "turkSubmitTo":
            try:
                _SUBMIT_URL(value)
            except ValidationError:
                return values, gettext(
                    "This link is not valid: its turkSubmitTo is not an https address, as MTurk sends. "
                    "Open the link you were given, unchanged."
                )
    return values, ""


def annotator_platform_record(*, annotator: Annotator, parameters: dict[str, str]) -> None:
    """Store the platform's parameters (checked by ``platform_parameters``) that the annotator lacks or
    that changed (a participant returning in a new session); one UPDATE, none when nothing changed."""
    changed = {
        PLATFORM_PARAMETERS[name]: value
        for name, value in parameters.items()
        if getattr(annotator, PLATFORM_PARAMETERS[name]) != value
    }
    if changed:
        Annotator.objects.filter(pk=annotator.pk).update(**changed)
        for field, value in changed.items():
            setattr(annotator, field, value)


# --- what the consent page promises --------------------------------------------------------------

# The latest votes the estimate reads: enough for a stable median, and a bounded read on a public page.
MEDIAN_VOTES = 1000
# Annotators in good standing among those votes before the estimate replaces the study's prior: the
# median of fewer people's medians is one or two people's habit (one speeder moved it 20×).
MIN_MEASURED_ANNOTATORS = 5


@dataclass(frozen=True)
class Expectations:
    """What taking part asks of a participant, at most: comparisons, minutes, and the pay for them."""

    comparisons: int
    seconds_per_comparison: float
    measured: bool  # the seconds are measured from the crowd's votes, not the study's estimate
    minutes: int
    pay: float | None
    currency: str
    min_judgements: int  # judgements before the participant may press Finish (0: at any time)
    finish_reachable: bool  # whether one participant can make that many (``finish_reachable``)


def median_of_medians(annotator_ids, response_ms) -> tuple[float, int]:
    """(the median over annotators of each one's median response time in ms, the number of annotators).

    ``annotator_ids`` and ``response_ms`` are parallel, one entry per vote. NaN and 0 without votes. One
    annotator's times, however many and however fast, move the result by at most one annotator's rank.
    """
    annotator_ids = np.asarray(annotator_ids, dtype=np.int64)
    if not annotator_ids.size:
        return math.nan, 0
    _, group = np.unique(annotator_ids, return_inverse=True)
    people = int(group.max()) + 1
    return float(np.median(median_by_group(group, response_ms, people))), people


def _fast_flagged(*, study: Study, annotator_ids) -> set[int]:
    """The annotators among ``annotator_ids`` whom quality control flags as fast: at least
    ``scoring.quality.MIN_OBSERVATIONS`` votes in the study, more than ``quality_max_fast_share`` of them
    under ``quality_fast_ms`` (the rule of the results page, ``scoring.selectors.annotator_figures``),
    counted over all their votes. None without the study's speed check."""
    if study.quality_fast_ms is None or study.quality_max_fast_share is None or not annotator_ids:
        return set()
    counts = (
        Vote.objects.filter(annotator_id__in=annotator_ids)
        .values("annotator_id")
        .annotate(votes=Count("pk"), fast=Count("pk", filter=Q(response_ms__lt=study.quality_fast_ms)))
        .values_list("annotator_id", "votes", "fast")
    )
    return {
        annotator_id
        for annotator_id, votes, fast in counts
        if judged(votes) and fast / votes > study.quality_max_fast_share
    }


def measured_seconds_per_comparison(*, study: Study) -> float | None:
    """Seconds per comparison measured from the crowd: the median over annotators of each one's median
    server-measured ``response_ms``, over the latest ``MEDIAN_VOTES`` votes of annotators in good
    standing (not excluded, not simulated, not flagged fast by quality control). None, so that the
    study's ``seconds_per_comparison`` stands, until ``MIN_MEASURED_ANNOTATORS`` such annotators voted."""
    latest = np.array(
        Vote.objects.filter(
            ballot__study=study, annotator__excluded_at__isnull=True, annotator__simulated=False
        )
        .order_by("-pk")
        .values_list("annotator_id", "response_ms")[:MEDIAN_VOTES],
        dtype=np.int64,
    ).reshape(-1, 2)
    flagged = _fast_flagged(study=study, annotator_ids=sorted(set(latest[:, 0].tolist())))
    kept = latest[~np.isin(latest[:, 0], list(flagged))] if flagged else latest
    milliseconds, people = median_of_medians(kept[:, 0], kept[:, 1])
    return milliseconds / 1000.0 if people >= MIN_MEASURED_ANNOTATORS else None


@lru_cache(maxsize=256)
def _comparisons_at_most(study_id: int, settings_version: str) -> int | None:
    study = Study.objects.get(pk=study_id)
    try:
        plan = study_plan(study=study)
    except ServiceError:
        return None
    cap = study.votes_per_annotator_per_ballot
    return sum(min(cap, count) if cap else count for count in plan.comparisons)


def comparisons_at_most(*, study: Study) -> int | None:
    """The most comparisons one participant can make: Σ_k min(cap, C_k) (C_k: ballot k's comparisons in the
    plan; Σ_k C_k without a cap). None when the study has no plan yet. Kept per ``settings_version``
    (each save makes a new one), so that a voting page does not compute the plan again."""
    return _comparisons_at_most(study.pk, str(study.settings_version))


def finish_reachable(*, study: Study) -> bool:
    """Whether a participant can make the study's ``min_judgements`` before the comparisons run out for
    them; otherwise Finish is never offered nor promised (their cap's exits end their session)."""
    most = comparisons_at_most(study=study)
    return not study.min_judgements or (most is not None and study.min_judgements < most)


def study_expectations(*, study: Study) -> Expectations | None:
    """At most Σ_k min(cap, C_k) comparisons (C_k: ballot k's comparisons in the plan; Σ_k C_k without
    a cap), at the crowd's measured seconds per comparison (``measured_seconds_per_comparison``; the
    study's ``seconds_per_comparison`` until enough annotators voted); minutes rounded up; pay =
    minutes / 60 × ``pay_per_hour``. None when the study has no plan yet."""
    comparisons = comparisons_at_most(study=study)
    if comparisons is None:
        return None
    seconds = measured_seconds_per_comparison(study=study)
    measured = seconds is not None
    if seconds is None:
        seconds = float(study.seconds_per_comparison)
    minutes = math.ceil(comparisons * seconds / 60)
    pay = round(minutes / 60 * study.pay_per_hour, 2) if study.pay_per_hour else None
    return Expectations(
        comparisons=comparisons,
        seconds_per_comparison=seconds,
        measured=measured,
        minutes=minutes,
        pay=pay,
        currency=study.pay_currency,
        min_judgements=study.min_judgements,
        finish_reachable=finish_reachable(study=study),
    )
