"""The vote finds its assignment and takes its comparison by primary key whatever the statistics say
(PostgreSQL only; issue 9): ``yardstick_vote_v2``.

Two statements of ``yardstick_vote_v1`` (migration 0024) had plans that read a row per annotator of the
crowd on every vote, when the statistics are those of a ballot's opening, as they are during a crowd's
launch (autovacuum analyses a table a minute at the soonest, and the plan the function keeps for its
session is made from the statistics it finds):

- the assignment's owner was checked with a join of ``unnest(studies, annotators)``, which let
  PostgreSQL start from the caller's annotators and read the study's annotators through their study's
  index, then the annotator's assignments, rather than the one assignment by its primary key;
- the comparison was taken by ``UPDATE … WHERE c.id = … AND c.status = 'leased'``, which the partial index
  of leased comparisons (``comparison_leased``) answers by reading every comparison leased at the time;
  with statistics that say none is leased, it looks cheaper than the primary key.

With 2,000 leases held, PostgreSQL's CPU per judgement fell from 0.985 to 0.730 ms with both changes
(the comparison's alone: 0.995 to 0.890 ms; BENCHMARKS.md, 2026-11-25, 16:25).

``yardstick_vote_v2`` is ``yardstick_vote_v1`` with two conditions written so that only the primary
keys can answer them, in the custom plans PostgreSQL makes from a call's values as in the generic one it
keeps; the rows, locks and answers are the same:

- the owner is the assignment's annotator if it is one of the caller's and its study is the one paired
  with it (``array_position``): conditions on the assignment found by its primary key, not a join. An
  annotator belongs to one study, so an annotator appears once among the caller's pairs. The annotator
  is compared as ``annotator_id + 0``, which no index of the column answers;
- the status is compared as ``status || ''``, which no index, partial or not, answers.

v1 stays for processes still running the code that calls it.
"""

import importlib

from django.db import migrations

from common.database import on_postgresql_only

_V1 = importlib.import_module("collection.migrations.0024_judgement_functions")

_TAKEN_BY_STATUS = "WHERE c.id = t.comparison_id AND c.status = 'leased'"
# ``status || ''`` is the status, but no index of the status, nor any partial index whose predicate is
# on it, can answer a condition on it: the primary key is the one way left, in every plan.
_TAKEN_BY_KEY = "WHERE c.id = t.comparison_id AND c.status || '' = 'leased'"


_OWNER_BY_JOIN = """
      JOIN unnest(p_studies, p_annotators) AS owner(study_id, annotator_id)
        ON owner.annotator_id = a.annotator_id AND owner.study_id = an.study_id
     WHERE a.id = p_assignment
"""
_OWNER_BY_KEY = """
     WHERE a.id = p_assignment
       AND a.annotator_id + 0 = ANY (p_annotators)
       AND an.study_id = p_studies[array_position(p_annotators, a.annotator_id)]
"""


def _v2(v1: str) -> str:
    """v1's text with its name and its two conditions changed. Each replaced text must be found exactly
    once, so that a v1 other than the one read here fails loudly."""
    replacements = [
        ("CREATE OR REPLACE FUNCTION yardstick_vote_v1(", "CREATE OR REPLACE FUNCTION yardstick_vote_v2("),
        (_TAKEN_BY_STATUS, _TAKEN_BY_KEY),
        (_OWNER_BY_JOIN, _OWNER_BY_KEY),
    ]
    for old, new in replacements:
        if v1.count(old) != 1:
            raise ValueError(f"yardstick_vote_v1 does not hold {old!r} exactly once")
        v1 = v1.replace(old, new)
    return v1


VOTE_FUNCTION = _v2(_V1.VOTE_FUNCTION)

DROP = """
DROP FUNCTION IF EXISTS yardstick_vote_v2(bigint, bigint[], bigint[], timestamptz, text, integer, integer);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0025_lease_open_from"),
    ]

    operations = [
        on_postgresql_only([VOTE_FUNCTION], reverse=DROP),
    ]
