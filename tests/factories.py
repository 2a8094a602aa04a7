"""Builders for test data, through the services (so tests exercise the real rules)."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
from django.db import connection
from django.test import TestCase

from collection.models import Study
from collection.services import (
    annotator_consent,
    annotator_for,
    comparison_next_for,
    items_generate,
    study_start,
    tokens_import,
    vote_record,
)

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


def vote_until(study: Study, *, voters: list, choose=None, max_votes: int | None = None, rng=None) -> int:
    """Round-robin votes by ``voters`` until the study finishes (or ``max_votes``); returns the count.

    No annotator judges a pair of items twice, so a small crowd can run out of pairs: with the default
    ``make_study`` plan a pair appears at most 4 times over its ballots, and 5 voters always finish.

    ``choose(comparison) -> "left" | "right" | "tie"``; default: the item with the lower index wins.
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
            with committed_callbacks():
                vote_record(
                    annotator=annotator,
                    assignment_id=result.assignment.pk,
                    choice=choose(result.assignment.comparison),
                )
            votes += 1
            progressed = True
        study.refresh_from_db(fields=["status"])
        if not progressed or study.status == Study.Status.FINISHED:
            break
    return votes
