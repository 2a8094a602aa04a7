"""The wait at a ballot's end when annotators close the page mid-lease, with and without the release.

    python benchmarks/bench_leaving.py [--annotators 40] [--leave-share 0.2] [--seeds 20]

A crowd of simulated annotators votes a study through the real services (``comparison_next_for``,
``vote_record_and_next``, ``assignment_release``) on a simulated clock: each service is given the
moment it runs at (``now``), so a 300 s lease lapses in simulated time and the run takes seconds.
Each annotator judges a comparison in a lognormal time (median 6 s); ``--leave-share`` of the
annotators close the page after a random number of judgements (uniform from 1 to 40), halfway
through a comparison they hold, and a new annotator arrives in their place at once, as a crowd
platform sends the next participant. Told ``all_leased`` or ``ballot_closing``, an annotator comes
back after the ``Retry-After`` the server gave.

Without the release (what a closed page did before issue 34) the comparison stays leased until its
lease lapses; with it (vote.js's beacon on ``pagehide``) ``assignment_release`` gives it back at the
moment of leaving. Per ballot, the script reports the seconds from the moment the ballot's last
comparison was first served to its close (the vote that completes it), how many ballots waited longer
than a minute for it, and the seconds each annotator of the crowd spent told ``all_leased``, over the
ballots of ``--seeds`` runs; then each run's waits by ballot.

It builds the study in a fresh SQLite database in a temporary folder (``DATABASE_URL`` in the
environment points it at another database instead, which must be empty): 12 tokens, 66 items,
n_b = 3, α = 0.5, M = 6 (ballots of 198, 99 and 51 comparisons), leases of 300 s, no cap.
"""

from __future__ import annotations

import argparse
import heapq
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

THINK_MEDIAN_SECONDS = 6.0
THINK_SIGMA = 0.5  # lognormal: 90% of judgements between 2.6 and 14 s
LEAVE_AFTER_MAX = 40  # a leaver's judgements before they go: 1 to this many
LONG_WAIT_SECONDS = 60  # a ballot's end that waited on a lapsing lease, not on judgements


@dataclass
class Run:
    """What one run measured: per ballot, the wait from its last comparison first served to its close,
    and the annotator-seconds told all_leased."""

    end_wait: dict[int, float] = field(default_factory=dict)
    all_leased: dict[int, float] = field(default_factory=dict)
    released: int = 0
    left: int = 0


def run_once(*, seed: int, annotators: int, leave_share: float, release: bool, number: int) -> Run:
    import numpy as np
    from django.utils import timezone

    from collection.identity import annotator_consent, annotator_for
    from collection.leaving import assignment_release
    from collection.lifecycle import study_start
    from collection.models import Ballot, Study
    from collection.pools import items_generate, tokens_import
    from collection.voting import NextReason, comparison_next_for, vote_record_and_next

    rng = np.random.default_rng(seed)
    study = Study.objects.create(
        name=f"Leaving {number}",
        slug=f"leaving-{number}",
        ballot_count=3,
        keep_fraction=0.5,
        appearances=6,
        lease_seconds=300,
        votes_per_annotator_per_ballot=None,
    )
    tokens_import(study=study, data="token,area\n" + "\n".join(f"word-{i},Area" for i in range(12)) + "\n")
    items_generate(study=study)
    study_start(study=study)
    study.refresh_from_db()
    start = timezone.now()
    sizes: dict[int, int] = {}  # comparisons per ballot, read when the ballot is first seen
    served: dict[int, set[int]] = {}
    last_first_served: dict[int, float] = {}
    run = Run()
    events: list[tuple[float, int, str]] = []
    people: dict[int, dict] = {}
    arrivals = iter(range(10**9))

    def arrive(at: float) -> None:
        person = next(arrivals)
        annotator = annotator_consent(
            annotator=annotator_for(study=study, participant_id=f"s{number}-{person}"),
            now=start + timedelta(seconds=at),
        )
        leaves_after = int(rng.integers(1, LEAVE_AFTER_MAX + 1)) if rng.random() < leave_share else None
        people[person] = {"annotator": annotator, "judged": 0, "leaves_after": leaves_after, "held": None}
        heapq.heappush(events, (at, person, "ask"))

    def think() -> float:
        return float(rng.lognormal(np.log(THINK_MEDIAN_SECONDS), THINK_SIGMA))

    def given(at: float, person: int, result) -> None:
        """Schedule what the person does with the lease's answer."""
        state = people[person]
        if result.assignment is None:
            state["held"] = None
            if result.reason in (NextReason.ALL_LEASED, NextReason.BALLOT_CLOSING):
                wait = float(result.retry_after_seconds or 3)
                if result.reason == NextReason.ALL_LEASED:
                    ballot = result.progress.ballot_number
                    run.all_leased[ballot] = run.all_leased.get(ballot, 0.0) + wait
                heapq.heappush(events, (at + wait, person, "ask"))
            return  # finished, or nothing left for them: they go
        state["held"] = result.assignment
        ballot = result.progress.ballot_number
        seen = served.setdefault(ballot, set())
        if result.assignment.comparison_id is not None and result.assignment.comparison_id not in seen:
            seen.add(result.assignment.comparison_id)
            if ballot not in sizes:
                sizes[ballot] = Ballot.objects.get(study=study, number=ballot).comparison_count
            if len(seen) == sizes[ballot]:
                last_first_served[ballot] = at
        leaving = state["leaves_after"] is not None and state["judged"] >= state["leaves_after"]
        duration = think()
        heapq.heappush(
            events, (at + (duration / 2 if leaving else duration), person, "leave" if leaving else "vote")
        )

    for _ in range(annotators):
        arrive(float(rng.uniform(0, 10)))
    while events:
        at, person, action = heapq.heappop(events)
        study.refresh_from_db(fields=["status"])
        if study.status == Study.Status.FINISHED:
            break
        state = people[person]
        now = start + timedelta(seconds=at)
        if action == "ask":
            given(at, person, comparison_next_for(annotator=state["annotator"], now=now))
        elif action == "vote":
            assignment = state["held"]
            ballot_number = Ballot.objects.values_list("number", flat=True).get(pk=assignment.ballot_id)
            open_before = Ballot.objects.filter(pk=assignment.ballot_id, status=Ballot.Status.OPEN).exists()
            try:
                _vote, _created, result = vote_record_and_next(
                    annotator=state["annotator"],
                    assignment_id=assignment.pk,
                    choice="left" if rng.random() < 0.5 else "right",
                    now=now,
                )
            except Exception:  # a lapsed lease or a closed ballot: ask again, as the page does
                heapq.heappush(events, (at, person, "ask"))
                continue
            state["judged"] += 1
            closed = not Ballot.objects.filter(pk=assignment.ballot_id, status=Ballot.Status.OPEN).exists()
            if open_before and closed and ballot_number in last_first_served:
                run.end_wait[ballot_number] = at - last_first_served[ballot_number]
            given(at, person, result)
        elif action == "leave":
            run.left += 1
            if release and state["held"] is not None:
                run.released += assignment_release(
                    annotator=state["annotator"], assignment_id=state["held"].pk, now=now
                )
            arrive(at)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=40)
    parser.add_argument("--leave-share", type=float, default=0.2)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="bench-leaving-")
    os.environ.setdefault("YARDSTICK_DATA_DIR", data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "benchmark")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

    import logging

    import django

    django.setup()
    logging.disable(logging.INFO)  # the close logs every ballot it opens and closes

    from django.core.management import call_command

    from benchmarks._timing import machine

    call_command("migrate", verbosity=0)
    print(f"machine: {machine()}")
    print(
        f"{args.annotators} annotators, {args.leave_share:.0%} of them leave mid-lease (replaced at once), "
        f"judgements of {THINK_MEDIAN_SECONDS:g} s at the median, leases of 300 s; {args.seeds} seeds"
    )
    number = 0
    for release in (False, True):
        waits, per_person, ballots_waits = [], [], []
        for seed in range(args.seeds):
            number += 1
            run = run_once(
                seed=seed,
                annotators=args.annotators,
                leave_share=args.leave_share,
                release=release,
                number=number,
            )
            waits += list(run.end_wait.values())
            per_person += [seconds / args.annotators for seconds in run.all_leased.values()]
            ballots_waits.append(run.end_wait)
        label = "with the release   " if release else "without the release"
        stuck = sum(wait > LONG_WAIT_SECONDS for wait in waits)
        print(
            f"{label}: last comparison served to close, per ballot: median {statistics.median(waits):.1f} s, "
            f"mean {statistics.mean(waits):.1f} s, max {max(waits):.1f} s; {stuck} of {len(waits)} ballots over "
            f"{LONG_WAIT_SECONDS} s. Told all_leased, per annotator and ballot: mean "
            f"{statistics.mean(per_person):.1f} s, max {max(per_person):.1f} s"
        )
        for seed, per_ballot in enumerate(ballots_waits):
            print(
                "    seed",
                seed,
                {ballot: round(seconds, 1) for ballot, seconds in sorted(per_ballot.items())},
            )


if __name__ == "__main__":
    main()
