"""The PostgreSQL lease as its ballot fills: the statement's time at 0%, 50%, 90% and 99% voted, and at its end.

    createdb -h 127.0.0.1 -U postgres bench_lease
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_lease python benchmarks/bench_lease_fill.py

The database must be empty: the script migrates it and builds the demo-sized study (990 items, a first
ballot of 9,900 comparisons). For each share of the ballot, it marks that many comparisons voted (in
position order, as annotators take them), runs ``VACUUM ANALYZE`` (what autovacuum does between
ballots), then times the lease statement (``collection.voting.LEASE_STATEMENT``, prepared) for
annotators who hold nothing, each run rolled back. It prints the median of ``--runs`` leases at each
fill and its ratio to the empty ballot's: the baseline. At "end" every comparison is voted but the last
50, leased to others: the lease gives nothing and answers "all leased", what the whole crowd asks,
again and again, while a ballot's last comparisons are judged. A lease whose cost grew with the votes already
in its ballot would make a large ballot slow at its end; the goal is a flat line.

With ``--stale-statistics`` the statistics stay those of the ballot's opening (every comparison open:
the ballot's open analyzes its new rows) and nothing is vacuumed: a ballot filling between two visits
of autovacuum, or with autovacuum off. The planner then believes every comparison of the ballot is
open, and the lease must not come to depend on it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._lease import demo_study, django_on_empty_postgres, lease_seconds  # noqa: E402

FILLS = (0.0, 0.5, 0.9, 0.99, 1.0)
LEASED_AT_THE_END = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="leases timed at each fill")
    parser.add_argument(
        "--stale-statistics",
        action="store_true",
        help="keep the statistics of the ballot's opening: no VACUUM ANALYZE as it fills",
    )
    args = parser.parse_args()
    django_on_empty_postgres()

    from django.db import connection
    from django.utils import timezone

    from benchmarks._timing import machine
    from collection.lease_start import lease_start_forget
    from collection.models import Annotator, Comparison

    study, ballot = demo_study("lease-bench")
    annotators = [
        Annotator.objects.create(study=study, participant_id=f"lease-{n}", consented_at=timezone.now())
        for n in range(10)
    ]

    def timed(annotator, *, given: bool = True) -> float:
        seconds, row = lease_seconds(study, annotator)
        assert (row[6] is not None) == given, "a comparison was given" if row[6] else "none was given"
        return seconds

    print(f"machine: {machine()}")
    print(f"ballot of {ballot.comparison_count} comparisons; median of {args.runs} leases at each fill")
    print(
        "statistics: "
        + ("the ballot's opening only" if args.stale_statistics else "VACUUM ANALYZE at each fill")
    )
    baseline = None
    for fill in FILLS:
        end = fill == 1.0
        voted = ballot.comparison_count - LEASED_AT_THE_END if end else int(fill * ballot.comparison_count)
        Comparison.objects.filter(ballot=ballot, position__lt=voted).update(status=Comparison.Status.VOTED)
        rest = Comparison.objects.filter(ballot=ballot, position__gte=voted)
        if end:
            rest.update(status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(hours=1))
        else:
            rest.update(status=Comparison.Status.OPEN, lease_expires_at=None)
        lease_start_forget()  # comparisons opened again above: the first lease reads where they start
        if fill == 0.0 or not args.stale_statistics:
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE collection_comparison")
        for annotator in annotators:  # warm: prepared on this connection, pages in the cache
            timed(annotator, given=not end)
        median = statistics.median(
            timed(annotators[n % len(annotators)], given=not end) for n in range(args.runs)
        )
        baseline = baseline or median
        label = f"end ({LEASED_AT_THE_END} leased)" if end else f"{fill:.0%} voted"
        print(f"{label:>16}: {median * 1000:.3f} ms  ({median / baseline:.2f}x the empty ballot)")


if __name__ == "__main__":
    main()
