"""Builders for test data, through the services (so tests exercise the real rules)."""

from __future__ import annotations

import contextlib
import itertools
from datetime import timedelta

import numpy as np
from django.db import connection
from django.test import TestCase

from collection.identity import annotator_consent, annotator_for
from collection.lifecycle import study_start
from collection.models import Assignment, Study
from collection.pools import items_generate, tokens_import
from collection.voting import comparison_next_for, vote_record

_counter = itertools.count(1)


def committed_callbacks():
    """Runs the ``transaction.on_commit`` callbacks (the ballot-closing task) as a real commit would.

    Inside a test wrapped in a transaction nothing commits, so they are captured and run at once; in a
    transactional test they run at the real commit.
    """
    if connection.in_atomic_block:
        return TestCase.captureOnCommitCallbacks(execute=True)
    return contextlib.nullcontext()


def tokens_csv(area_sizes: dict[str, int]) -> str:
    """A tokens file with ``n`` tokens named ``<area>-<i>`` per area."""
    lines = ["token,area,rare"]
    for area, size in area_sizes.items():
        lines += [f"{area.lower()}-{i},{area},{int(i == 0)}" for i in range(size)]
    return "\n".join(lines) + "\n"


def make_study(
    *,
    tokens: int = 6,
    areas: int = 1,
    start: bool = True,
    ballot_count: int = 3,
    keep_fraction: float = 0.5,
    appearances: int = 4,
    **fields,
) -> Study:
    """A study with ``areas`` areas of ``tokens`` tokens each and all their pairs as items.

    6 tokens in one area give 15 items; with n_b = 3, α = 0.5, M = 4: ballots of 15, 8, 4 items and
    30 + 16 + 8 = 54 comparisons.
    """
    number = next(_counter)
    fields.setdefault("votes_per_annotator_per_ballot", None)
    study = Study.objects.create(
        name=f"Study {number}",
        slug=f"study-{number}",
        ballot_count=ballot_count,
        keep_fraction=keep_fraction,
        appearances=appearances,
        **fields,
    )
    tokens_import(study=study, data=tokens_csv({f"Area{a}": tokens for a in range(areas)}))
    items_generate(study=study)
    if start:
        study_start(study=study)
        study.refresh_from_db()
    return study


def annotators(study: Study, count: int, prefix: str = "p") -> list:
    return [
        annotator_consent(annotator=annotator_for(study=study, participant_id=f"{prefix}{i}"))
        for i in range(count)
    ]


def vote_until(
    study: Study, *, voters: list, choose=None, max_votes: int | None = None, rng=None, respond=None
) -> int:
    """Round-robin votes by ``voters`` until the study finishes (or ``max_votes``); returns the count.

    No annotator judges a pair of items twice, so a small crowd can run out of pairs: with the default
    ``make_study`` plan a pair appears at most 4 times over its ballots, and 5 voters always finish.

    ``choose(comparison) -> "left" | "right" | "tie"``; default: the item with the lower index wins.
    ``respond(annotator) -> milliseconds``: how long after its lease each vote is recorded (its
    ``response_ms``); default: at once.
    """
    rng = rng or np.random.default_rng(0)
    index_of = dict(study.items.values_list("id", "index"))
    if choose is None:

        def choose(comparison):
            return (
                "left" if index_of[comparison.left_item_id] < index_of[comparison.right_item_id] else "right"
            )

    votes = 0
    while max_votes is None or votes < max_votes:
        progressed = False
        for annotator in voters:
            if max_votes is not None and votes >= max_votes:
                break
            result = comparison_next_for(annotator=annotator)
            if result.assignment is None:
                continue
            moment = None
            if respond is not None:
                moment = result.assignment.issued_at + timedelta(milliseconds=respond(annotator))
            with committed_callbacks():
                vote_record(
                    annotator=annotator,
                    assignment_id=result.assignment.pk,
                    choice=choose(result.assignment.comparison),
                    now=moment,
                )
            votes += 1
            progressed = True
        study.refresh_from_db(fields=["status"])
        if not progressed or study.status == Study.Status.FINISHED:
            break
    return votes


def disagreeing_crowd(study: Study, *, seed: int = 0, careless_every: int = 4, biased_every: int = 5):
    """``choose`` for ``vote_until``: a crowd that disagrees, as a real one does.

    The items' true order is their index (lower = more related). Each annotator perceives the gap
    between the two items through their own noise (a standard deviation drawn between 1 and 8 index
    steps), so close pairs split the crowd; every ``careless_every``-th annotator clicks at random, and
    every ``biased_every``-th picks the left side three times in four whatever it shows. Ties are called
    on near-equal pairs when the study allows them.
    """
    rng = np.random.default_rng(seed)
    index_of = dict(study.items.values_list("id", "index"))
    kinds: dict[int, tuple[str, float]] = {}

    def kind_of(annotator_id: int) -> tuple[str, float]:
        if annotator_id not in kinds:
            number = len(kinds) + 1
            kind = (
                "careless"
                if number % careless_every == 0
                else "biased"
                if number % biased_every == 0
                else "honest"
            )
            kinds[annotator_id] = (kind, float(rng.uniform(1.0, 8.0)))
        return kinds[annotator_id]

    def choose(comparison):
        annotator_id = (
            Assignment.objects.filter(comparison=comparison)
            .order_by("-pk")
            .values_list("annotator", flat=True)
        )[0]
        kind, noise = kind_of(annotator_id)
        if kind == "careless":
            return "left" if rng.random() < 0.5 else "right"
        if kind == "biased" and rng.random() < 0.75:
            return "left"
        perceived = (
            index_of[comparison.right_item_id] - index_of[comparison.left_item_id] + rng.normal(0, noise)
        )
        if study.allow_ties and abs(perceived) < 0.5:
            return "tie"
        return "left" if perceived > 0 else "right"

    return choose


class QualityCrowd:
    """A simulated crowd with the bad annotators quality control must find, for ``vote_until``.

    ``kinds`` maps an annotator's id to one of:

    * ``"good"``: sees the items' true order (lower index = more related) through a little noise
      (0.5 index steps), answers in 2.5 to 9 s;
    * ``"speeder"``: clicks at random in 0.2 to 0.9 s;
    * ``"left"`` / ``"right"``: always picks that side, whatever it shows, at a normal speed;
    * ``"random"``: clicks at random at a normal speed.

    Use ``choose=crowd.choose, respond=crowd.respond``.
    """

    KINDS = ("good", "speeder", "left", "right", "random")

    def __init__(self, study: Study, kinds: dict[int, str], *, seed: int = 0):
        assert set(kinds.values()) <= set(self.KINDS)
        self.kinds = kinds
        self.rng = np.random.default_rng(seed)
        self.index_of = dict(study.items.values_list("id", "index"))

    def respond(self, annotator) -> int:
        if self.kinds[annotator.pk] == "speeder":
            return int(self.rng.integers(200, 900))
        return int(self.rng.integers(2500, 9000))

    def choose(self, comparison) -> str:
        annotator_id = (
            Assignment.objects.filter(comparison=comparison, status=Assignment.Status.ACTIVE)
            .values_list("annotator", flat=True)
            .get()
        )
        kind = self.kinds[annotator_id]
        if kind in ("left", "right"):
            return kind
        if kind in ("speeder", "random"):
            return "left" if self.rng.random() < 0.5 else "right"
        gap = self.index_of[comparison.right_item_id] - self.index_of[comparison.left_item_id]
        return "left" if gap + self.rng.normal(0, 0.5) > 0 else "right"
