"""The invariants of a collection, as SQL: one query per invariant, each returning the offending rows.

An empty result is a kept invariant. The queries read the tables only (no Django), so they run against
any Yardstick database on PostgreSQL, during or after a run:

    python -m tests.reliability check --database-url postgres://postgres@127.0.0.1:5499/yardstick

``--study SLUG`` restricts every query to one study.
"""

from __future__ import annotations

from dataclasses import dataclass

# Every query takes the same parameters: (slug, slug), where a NULL slug means every study.
_STUDIES = "(SELECT id FROM collection_study WHERE %(slug)s::text IS NULL OR slug = %(slug)s::text)"


@dataclass(frozen=True)
class Invariant:
    name: str
    description: str
    sql: str


INVARIANTS = [
    Invariant(
        "one_vote_per_voted_comparison",
        "every voted comparison has exactly one vote, and no other comparison has one",
        f"""
        SELECT c.id AS comparison, c.ballot_id AS ballot, c.status, count(v.id) AS votes
        FROM collection_comparison c
        JOIN collection_ballot b ON b.id = c.ballot_id
        LEFT JOIN collection_vote v ON v.comparison_id = c.id
        WHERE b.study_id IN {_STUDIES}
        GROUP BY c.id, c.ballot_id, c.status
        HAVING (c.status = 'voted' AND count(v.id) <> 1) OR (c.status <> 'voted' AND count(v.id) > 0)
        """,
    ),
    Invariant(
        "vote_matches_its_assignment",
        "every vote's assignment is marked voted, for the same annotator, comparison and ballot; "
        "every assignment marked voted has its vote",
        f"""
        SELECT a.id AS assignment, a.status, v.id AS vote
        FROM collection_assignment a
        JOIN collection_ballot b ON b.id = a.ballot_id
        LEFT JOIN collection_vote v ON v.assignment_id = a.id
        WHERE b.study_id IN {_STUDIES}
          AND ((a.status = 'voted') <> (v.id IS NOT NULL)
               OR v.annotator_id <> a.annotator_id
               OR v.comparison_id <> a.comparison_id
               OR v.ballot_id <> a.ballot_id)
        """,
    ),
    Invariant(
        "ballot_of_assignment_and_vote",
        "every assignment's ballot is its comparison's, or for a check a ballot of the check's study; every "
        "vote's ballot is its comparison's (a foreign key keeps the ballot existing, not the right one)",
        f"""
        SELECT 'assignment' AS row, a.id, a.ballot_id AS ballot, c.ballot_id AS expected
        FROM collection_assignment a
        LEFT JOIN collection_comparison c ON c.id = a.comparison_id
        LEFT JOIN collection_check q ON q.id = a.quality_check_id
        LEFT JOIN collection_ballot b ON b.id = a.ballot_id
        WHERE a.annotator_id IN (SELECT id FROM collection_annotator WHERE study_id IN {_STUDIES})
          AND (b.id IS NULL
               OR (a.comparison_id IS NOT NULL AND a.ballot_id IS DISTINCT FROM c.ballot_id)
               OR (a.quality_check_id IS NOT NULL AND b.study_id IS DISTINCT FROM q.study_id))
        UNION ALL
        SELECT 'vote', v.id, v.ballot_id, c.ballot_id
        FROM collection_vote v
        JOIN collection_comparison c ON c.id = v.comparison_id
        WHERE v.annotator_id IN (SELECT id FROM collection_annotator WHERE study_id IN {_STUDIES})
          AND v.ballot_id IS DISTINCT FROM c.ballot_id
        """,
    ),
    Invariant(
        "check_answer_matches_its_assignment",
        "every answer to a check has its assignment marked answered, for the same annotator and check; "
        "every assignment marked answered has its answer (a check is answered, never voted)",
        f"""
        SELECT a.id AS assignment, a.status, a.quality_check_id, x.id AS answer
        FROM collection_assignment a
        JOIN collection_ballot b ON b.id = a.ballot_id
        LEFT JOIN collection_checkanswer x ON x.assignment_id = a.id
        WHERE b.study_id IN {_STUDIES}
          AND ((a.status = 'answered') <> (x.id IS NOT NULL)
               OR x.annotator_id <> a.annotator_id
               OR x.quality_check_id <> a.quality_check_id
               OR (a.quality_check_id IS NOT NULL AND a.status = 'voted'))
        """,
    ),
    Invariant(
        "one_judgement_per_pair_per_annotator",
        "no annotator judged an item pair twice in a study",
        f"""
        SELECT an.study_id AS study, v.annotator_id AS annotator, v.pair_low, v.pair_high,
               count(*) AS votes
        FROM collection_vote v
        JOIN collection_annotator an ON an.id = v.annotator_id
        WHERE an.study_id IN {_STUDIES}
        GROUP BY an.study_id, v.annotator_id, v.pair_low, v.pair_high
        HAVING count(*) > 1
        """,
    ),
    Invariant(
        "every_vote_counted_by_its_close",
        "no vote after its ballot closed: each vote of a closed ballot is in its scores "
        "(the appearances of its items' scores add up to twice its votes)",
        f"""
        SELECT b.id AS ballot, b.number, votes.counted AS votes, scores.appearances
        FROM collection_ballot b
        JOIN (SELECT ballot_id, count(*) AS counted FROM collection_vote GROUP BY ballot_id) votes
          ON votes.ballot_id = b.id
        LEFT JOIN (SELECT ballot_id, sum(appearances) AS appearances
                   FROM scoring_itemscore GROUP BY ballot_id) scores
          ON scores.ballot_id = b.id
        WHERE b.status = 'closed' AND b.study_id IN {_STUDIES}
          AND coalesce(scores.appearances, 0) <> 2 * votes.counted
        """,
    ),
    Invariant(
        "no_vote_stamped_after_close",
        "no vote after its ballot closed: no vote's creation time is later than its ballot's closing time",
        f"""
        SELECT v.id AS vote, b.id AS ballot, v.created_at, b.closed_at
        FROM collection_vote v
        JOIN collection_ballot b ON b.id = v.ballot_id
        WHERE b.closed_at IS NOT NULL AND v.created_at > b.closed_at AND b.study_id IN {_STUDIES}
        """,
    ),
    Invariant(
        "ballot_counter_equals_votes",
        "each ballot's vote counter (the sum of its parts) equals its votes",
        f"""
        SELECT * FROM (
            SELECT b.id AS ballot, b.number,
                   (SELECT COALESCE(SUM(part.votes), 0) FROM collection_ballotcounter part
                    WHERE part.ballot_id = b.id) AS votes_recorded,
                   (SELECT count(*) FROM collection_vote v WHERE v.ballot_id = b.id) AS votes
            FROM collection_ballot b
            WHERE b.study_id IN {_STUDIES}
        ) AS counted
        WHERE votes_recorded <> votes
        """,
    ),
    Invariant(
        "annotator_count_equals_votes",
        "each annotator's count of votes (AnnotatorVotes) equals their votes, in the study and in the "
        "ballot it counts, and no vote of theirs is in a later ballot than that one",
        f"""
        SELECT * FROM (
            SELECT an.id AS annotator, COALESCE(n.total, 0) AS total, n.ballot_id, n.in_ballot,
                   (SELECT count(*) FROM collection_vote v WHERE v.annotator_id = an.id) AS votes,
                   (SELECT count(*) FROM collection_vote v
                    WHERE v.annotator_id = an.id AND v.ballot_id = n.ballot_id) AS votes_in_ballot,
                   (SELECT max(v.ballot_id) FROM collection_vote v WHERE v.annotator_id = an.id) AS latest_ballot
            FROM collection_annotator an
            LEFT JOIN collection_annotatorvotes n ON n.annotator_id = an.id
            WHERE an.study_id IN {_STUDIES}
        ) AS counted
        WHERE total <> votes OR in_ballot <> votes_in_ballot OR latest_ballot > ballot_id
        """,
    ),
    Invariant(
        "ballot_closed_once",
        "each ballot closed once: a closed ballot has a closing time and exactly one score per item, "
        "an open one neither",
        f"""
        SELECT b.id AS ballot, b.number, b.status, b.closed_at,
               (SELECT count(*) FROM collection_ballotitem bi WHERE bi.ballot_id = b.id) AS items,
               (SELECT count(*) FROM scoring_itemscore s WHERE s.ballot_id = b.id) AS scores,
               (SELECT count(DISTINCT s.item_id) FROM scoring_itemscore s WHERE s.ballot_id = b.id)
                   AS scored_items
        FROM collection_ballot b
        WHERE b.study_id IN {_STUDIES}
          AND NOT (
              (b.status = 'closed' AND b.closed_at IS NOT NULL
               AND (SELECT count(*) FROM scoring_itemscore s WHERE s.ballot_id = b.id)
                   = (SELECT count(*) FROM collection_ballotitem bi WHERE bi.ballot_id = b.id)
               AND (SELECT count(DISTINCT s.item_id) FROM scoring_itemscore s WHERE s.ballot_id = b.id)
                   = (SELECT count(*) FROM collection_ballotitem bi WHERE bi.ballot_id = b.id))
              OR (b.status = 'open' AND b.closed_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM scoring_itemscore s WHERE s.ballot_id = b.id)))
        """,
    ),
    Invariant(
        "ballots_follow_each_other",
        "ballot k+1 exists exactly once, over ballot k's survivors, if and only if ballot k closed "
        "and k < n_b; at most one ballot of a study is open",
        f"""
        SELECT s.id AS study, b.number, b.status,
               (SELECT count(*) FROM collection_ballot n
                WHERE n.study_id = s.id AND n.number = b.number + 1) AS next_ballots,
               (SELECT count(*) FROM scoring_itemscore sc WHERE sc.ballot_id = b.id AND sc.survived)
                   AS survivors,
               (SELECT count(*) FROM collection_ballotitem bi JOIN collection_ballot n ON n.id = bi.ballot_id
                WHERE n.study_id = s.id AND n.number = b.number + 1) AS next_items,
               (SELECT count(*) FROM collection_ballot o WHERE o.study_id = s.id AND o.status = 'open')
                   AS open_ballots
        FROM collection_study s
        JOIN collection_ballot b ON b.study_id = s.id
        WHERE s.id IN {_STUDIES}
          AND (
              (SELECT count(*) FROM collection_ballot o WHERE o.study_id = s.id AND o.status = 'open') > 1
              OR (SELECT count(*) FROM collection_ballot n WHERE n.study_id = s.id AND n.number = b.number + 1)
                 <> CASE WHEN b.status = 'closed' AND b.number < s.ballot_count THEN 1 ELSE 0 END
              OR (b.status = 'closed' AND b.number < s.ballot_count
                  AND (SELECT count(*) FROM scoring_itemscore sc WHERE sc.ballot_id = b.id AND sc.survived)
                      <> (SELECT count(*) FROM collection_ballotitem bi
                          JOIN collection_ballot n ON n.id = bi.ballot_id
                          WHERE n.study_id = s.id AND n.number = b.number + 1))
              OR (b.number > 1 AND NOT EXISTS (
                  SELECT 1 FROM collection_ballot p
                  WHERE p.study_id = s.id AND p.number = b.number - 1 AND p.status = 'closed')))
        """,
    ),
    Invariant(
        "finished_study_has_n_b_ballots",
        "exactly n_b ballots, all closed, once a study finished; never more than n_b",
        f"""
        SELECT s.id AS study, s.status, s.ballot_count AS n_b, count(b.id) AS ballots,
               count(b.id) FILTER (WHERE b.status = 'closed') AS closed
        FROM collection_study s
        LEFT JOIN collection_ballot b ON b.study_id = s.id
        WHERE s.id IN {_STUDIES}
        GROUP BY s.id, s.status, s.ballot_count
        HAVING count(b.id) > s.ballot_count
            OR (s.status = 'finished' AND (count(b.id) <> s.ballot_count
                                           OR count(b.id) FILTER (WHERE b.status = 'closed') <> s.ballot_count))
        """,
    ),
    Invariant(
        "cap_per_annotator_and_ballot",
        "the per-annotator cap held: no annotator voted more than the study's cap in one ballot",
        f"""
        SELECT b.study_id AS study, b.number AS ballot, v.annotator_id AS annotator, count(*) AS votes,
               s.votes_per_annotator_per_ballot AS cap
        FROM collection_vote v
        JOIN collection_ballot b ON b.id = v.ballot_id
        JOIN collection_study s ON s.id = b.study_id
        WHERE s.votes_per_annotator_per_ballot IS NOT NULL AND s.id IN {_STUDIES}
        GROUP BY b.study_id, b.number, v.annotator_id, s.votes_per_annotator_per_ballot
        HAVING count(*) > s.votes_per_annotator_per_ballot
        """,
    ),
]


@dataclass
class InvariantResult:
    name: str
    description: str
    offending: list[dict]

    @property
    def held(self) -> bool:
        return not self.offending


def check(database_url: str, *, study: str | None = None, limit: int = 20) -> list[InvariantResult]:
    """Runs every invariant query; each result lists at most ``limit`` offending rows."""
    import psycopg
    from psycopg.rows import dict_row

    results = []
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as connection:
        for invariant in INVARIANTS:
            rows = connection.execute(
                f"SELECT * FROM ({invariant.sql}) offending LIMIT {int(limit)}", {"slug": study}
            ).fetchall()
            results.append(InvariantResult(invariant.name, invariant.description, rows))
    return results


def summary(results: list[InvariantResult]) -> str:
    """One line per invariant: held, or the first offending rows."""
    lines = []
    for result in results:
        if result.held:
            lines.append(f"  held      {result.name}")
        else:
            lines.append(f"  VIOLATED  {result.name}: {result.description}")
            lines.extend(f"              {row}" for row in result.offending[:5])
    return "\n".join(lines)
