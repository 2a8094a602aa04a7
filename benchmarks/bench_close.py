"""The close of every ballot of the demo-sized study (990 items, n_b = 7, α = 0.5, M = 20: 19,660 votes).

    python benchmarks/bench_close.py [--runs 5]

Builds the study in a fresh SQLite database in a temporary folder (``DATABASE_URL`` in the environment
points it at another database instead, which must be empty), writes the votes of each ballot straight
into the tables (a simulated crowd: the item with the lower index wins four times in five, one vote in
fifty is a tie) and times ``ballot_close``: scores (Eq. 1, 5, 6), survivors and the opening of the next
ballot, or the final ranking after the last. Each close is timed inside a transaction that is rolled
back, ``--runs`` times, then done for real so that the next ballot opens.

Baseline: reading the ballot's votes as rows (left item index, right item index, choice), the read
that any close needs, timed in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Rollback(Exception):
    pass


def cast_votes(study, ballot, *, index_of: dict, rng) -> int:
    """Every comparison of the ballot voted, by 100 annotators of its own (one per comparison when
    the ballot repeats a pair, as a small last ballot does: nobody judges a pair twice); the item with
    the lower index (``index_of``: item id to index) wins four times in five, one vote in fifty is a tie."""
    from django.utils import timezone

    from collection.models import Annotator, Assignment, BallotCounter, Comparison, Vote

    now = timezone.now()
    comparisons = list(ballot.comparisons.order_by("position"))
    pairs = {(c.pair_low, c.pair_high) for c in comparisons}
    count = 100 if len(pairs) == len(comparisons) else len(comparisons)
    annotators = Annotator.objects.bulk_create(
        [Annotator(study=study, participant_id=f"b{ballot.number}-{i}") for i in range(count)]
    )
    if any(a.pk is None for a in annotators):
        annotators = list(
            Annotator.objects.filter(study=study, participant_id__startswith=f"b{ballot.number}-")
        )
    who = [annotators[i % len(annotators)] for i in range(len(comparisons))]
    Assignment.objects.bulk_create(
        [
            Assignment(
                comparison=c,
                ballot=ballot,
                annotator=a,
                status=Assignment.Status.VOTED,
                issued_at=now,
                expires_at=now,
            )
            for c, a in zip(comparisons, who, strict=True)
        ],
        batch_size=2000,
    )
    assignments = dict(ballot.assignments.values_list("comparison_id", "pk"))
    draw = rng.random(len(comparisons))
    votes = []
    for c, a, u in zip(comparisons, who, draw, strict=True):
        lower_wins = u < 0.8
        left_is_lower = index_of[c.left_item_id] < index_of[c.right_item_id]
        choice = "tie" if u > 0.98 else ("left" if lower_wins == left_is_lower else "right")
        votes.append(
            Vote(
                assignment_id=assignments[c.pk],
                comparison=c,
                annotator=a,
                ballot=ballot,
                left_item_id=c.left_item_id,
                right_item_id=c.right_item_id,
                pair_low=c.pair_low,
                pair_high=c.pair_high,
                choice=choice,
                response_ms=1000,
            )
        )
    Vote.objects.bulk_create(votes, batch_size=2000)
    Comparison.objects.filter(ballot=ballot).update(status=Comparison.Status.VOTED)
    BallotCounter.add(ballot_id=ballot.pk, votes=len(votes))
    return len(votes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="bench-close-")
    os.environ.setdefault("YARDSTICK_DATA_DIR", data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "benchmark")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

    import logging

    import django

    django.setup()
    logging.disable(logging.INFO)  # the close logs every ballot it opens and closes

    import numpy as np
    from django.core.management import call_command
    from django.db import transaction

    from benchmarks._timing import machine, median_seconds
    from collection.lifecycle import ballot_close
    from collection.models import Ballot, Study

    call_command("migrate", verbosity=0)
    call_command("load_demo", slug="bench", stdout=open(os.devnull, "w"))  # noqa: SIM115
    study = Study.objects.get(slug="bench")
    index_of = dict(study.items.values_list("id", "index"))
    rng = np.random.default_rng(0)
    print(f"machine: {machine()}")
    print(
        f"database: {study._state.db} ({django.db.connection.vendor}); median of {args.runs} runs per ballot"
    )

    def close_and_roll_back(ballot_id: int) -> None:
        try:
            with transaction.atomic():
                ballot_close(ballot_id=ballot_id)
                raise _Rollback
        except _Rollback:
            pass

    def read_votes(ballot: Ballot) -> None:
        list(ballot.votes.values_list("left_item__index", "right_item__index", "choice"))

    total_close = total_read = 0.0
    total_votes = 0
    print(
        f"{'ballot':>6} {'items':>6} {'votes':>6} {'read votes (s)':>15} {'close (s)':>10} {'close / read':>13}"
    )
    for number in range(1, study.ballot_count + 1):
        ballot = Ballot.objects.get(study=study, number=number)
        votes = cast_votes(study, ballot, index_of=index_of, rng=rng)
        read = median_seconds(lambda ballot=ballot: read_votes(ballot), runs=args.runs)
        close = median_seconds(lambda ballot=ballot: close_and_roll_back(ballot.pk), runs=args.runs)
        ballot_close(ballot_id=ballot.pk)
        total_close, total_read, total_votes = total_close + close, total_read + read, total_votes + votes
        print(
            f"{number:>6} {ballot.items.count():>6} {votes:>6} {read:>15.4f} {close:>10.4f} {close / read:>12.1f}×"
        )
    study.refresh_from_db()
    print(
        f"{'all':>6} {study.items.count():>6} {total_votes:>6} {total_read:>15.4f} {total_close:>10.4f} "
        f"{total_close / total_read:>12.1f}×   (study {study.status})"
    )


if __name__ == "__main__":
    main()
