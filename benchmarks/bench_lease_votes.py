"""The PostgreSQL lease for an annotator who has voted 0, 100, 300 and 1,000 times.

    createdb -h 127.0.0.1 -U postgres bench_votes
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_votes python benchmarks/bench_lease_votes.py

The database must be empty: the script migrates it and builds the demo-sized study (990 items, a first
ballot of 9,900 comparisons). Each annotator is given that many votes in the open ballot, on
comparisons of their own (each with its voted assignment, as a vote leaves them), then ``ANALYZE``
runs (with ``--vacuumed``, ``VACUUM ANALYZE``: the pages of the votes all-visible, as a visit of
autovacuum leaves them; during a ballot the latest votes' pages are not), and the lease statement (``collection.voting.LEASE_STATEMENT``, prepared) is timed for
them, each run rolled back. It prints the median of ``--runs`` leases per annotator and its ratio to
the annotator who has not voted: the baseline. A lease whose cost grew with the annotator's votes
would make an annotator's thousandth judgement slower than their first; the goal is a flat line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._lease import demo_study, django_on_empty_postgres, lease_seconds  # noqa: E402

VOTES = (0, 100, 300, 1000)
CROWD, CROWD_VOTES = 8, 800  # the others voting at the same time

# An annotator's votes on the first comparisons still open, by position: the comparisons voted, their
# assignments voted, the votes themselves. On PostgreSQL, one statement.
_VOTES_SQL = """
WITH taken AS (
    UPDATE collection_comparison c SET status = 'voted', lease_expires_at = NULL
    WHERE c.id IN (SELECT id FROM collection_comparison
                   WHERE ballot_id = %(ballot)s AND status = 'open'
                     AND (pair_low, pair_high) NOT IN (SELECT pair_low, pair_high FROM collection_vote
                                                       WHERE annotator_id = %(annotator)s)
                   ORDER BY position LIMIT %(votes)s)
    RETURNING c.id, c.left_item_id, c.right_item_id, c.pair_low, c.pair_high
),
assigned AS (
    INSERT INTO collection_assignment (comparison_id, ballot_id, annotator_id, status, issued_at, expires_at)
    SELECT id, %(ballot)s, %(annotator)s, 'voted', %(now)s, %(now)s FROM taken
    RETURNING id, comparison_id
)
INSERT INTO collection_vote (assignment_id, comparison_id, annotator_id, ballot_id, left_item_id, right_item_id,
                             pair_low, pair_high, choice, response_ms, client_response_ms, created_at)
SELECT a.id, t.id, %(annotator)s, %(ballot)s, t.left_item_id, t.right_item_id, t.pair_low, t.pair_high,
       'left', 3000, NULL, %(now)s
FROM taken t JOIN assigned a ON a.comparison_id = t.id
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="leases timed per annotator")
    parser.add_argument("--vacuumed", action="store_true", help="VACUUM before timing, not only ANALYZE")
    args = parser.parse_args()
    django_on_empty_postgres()

    from django.db import connection
    from django.utils import timezone

    from benchmarks._timing import machine
    from collection import models
    from collection.models import Annotator, BallotCounter

    study, ballot = demo_study("votes-bench")
    now = timezone.now()
    # The votes are cast in rounds, one per annotator still short of their number, alongside a crowd
    # of others': as in a ballot, each annotator's votes lie on pages among everyone else's.
    voters = [
        Annotator.objects.create(study=study, participant_id=f"votes-{votes}", consented_at=now)
        for votes in VOTES
    ]
    crowd = [
        Annotator.objects.create(study=study, participant_id=f"crowd-{n}", consented_at=now)
        for n in range(CROWD)
    ]
    wanted = {annotator.pk: votes for annotator, votes in zip(voters, VOTES, strict=True)}
    wanted.update({annotator.pk: CROWD_VOTES for annotator in crowd})
    cast = dict.fromkeys(wanted, 0)
    with connection.cursor() as cursor:
        for _ in range(max(wanted.values())):
            for annotator_id, votes in wanted.items():
                if cast[annotator_id] < votes:
                    cursor.execute(
                        _VOTES_SQL, {"ballot": ballot.pk, "annotator": annotator_id, "votes": 1, "now": now}
                    )
                    cast[annotator_id] += cursor.rowcount
    BallotCounter.add(ballot_id=ballot.pk, votes=sum(cast.values()))
    if hasattr(models, "AnnotatorVotes"):  # the builds that keep the annotator's count
        for annotator_id, votes in cast.items():
            if votes:
                models.AnnotatorVotes.add(annotator_id=annotator_id, ballot_id=ballot.pk, votes=votes)
    voters = [(cast[annotator.pk], annotator) for annotator in voters]
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if args.vacuumed else "ANALYZE")

    votes_of = {annotator.pk: votes for votes, annotator in voters}

    def timed(annotator) -> float:
        seconds, row = lease_seconds(study, annotator)
        assert row[6] is not None, "no comparison was given"
        assert row[4] == votes_of[annotator.pk], f"the lease read {row[4]} votes"
        return seconds

    print(f"machine: {machine()}")
    print(f"ballot of {ballot.comparison_count} comparisons; median of {args.runs} leases per annotator")
    print(
        "tables: "
        + ("vacuumed (the votes' pages all-visible)" if args.vacuumed else "analyzed, not vacuumed")
    )
    baseline = None
    for cast, annotator in voters:
        for _ in range(20):  # warm: prepared on this connection, pages in the cache
            timed(annotator)
        median = statistics.median(timed(annotator) for _ in range(args.runs))
        baseline = baseline or median
        print(
            f"{cast:>5} votes cast: {median * 1000:.3f} ms  ({median / baseline:.2f}x the annotator with none)"
        )


if __name__ == "__main__":
    main()
