"""The lease finds a lapsed lease in one probe of an index by expiry, however many leases others hold
(PostgreSQL's function and every database's index; issue 9): ``yardstick_lease_v3``; and the vote reaches
its annotator by primary key alone (PostgreSQL only): ``yardstick_vote_v3``.

A lease first looks for a lapsed lease to take over. ``yardstick_lease_v2`` (migration 0025) took the
first lapsed one by position, through the partial index of leased comparisons by (ballot, position):
the scan read every comparison leased in the ballot, in position order, and checked each one's expiry,
to find, nearly always, that none had lapsed (the sweep returns lapsed leases to the open ones every
minute). With 2,000 leases held by a crowd it read 193 buffers per lease, and PostgreSQL's CPU per
judgement was 0.73 ms against 0.56 ms with 50 held (BENCHMARKS.md, 2026-11-25, 16:25).

The partial index of leased comparisons is now by (ballot, expiry, position): the lapsed leases of a
ballot are the start of its range, so the look-up reads the index's first entry and stops there when
none has lapsed. The lease takes the longest-lapsed first (ties by position), which is the order the
index gives; the embedded default's lease (``collection.voting``) takes them in the same order.
``yardstick_lease_v3`` is v2 with its three look-ups of lapsed leases in that order. v2 stays for
processes still running the code that calls it: with the new index it finds the lapsed leases by
expiry and sorts those few by position, which gives its own answers.

``yardstick_vote_v3`` is ``yardstick_vote_v2`` (migration 0026) with the owner's study compared as
``an.study_id + 0``. v2's condition ``an.study_id = p_studies[…]`` is an equality on the annotator's
study, so the planner weighed reading the study's annotators through their study's index, in study
order, against the annotator's primary key; where the statistics say the study has one annotator (a
crowd's launch) the two cost the same, and a run of the plan test after a test that had left 300 dead
annotators in the table chose the study's index: a row per annotator of the study on every vote. With
``+ 0`` no index of the study answers it, and the primary key is the one way to the annotator. v2 stays
for processes still running the code that calls it.
"""

import importlib

from django.db import migrations, models

from common.database import on_postgresql_only

_V2 = importlib.import_module("collection.migrations.0025_lease_open_from")
_VOTE_V2 = importlib.import_module("collection.migrations.0026_vote_by_primary_key")

_COMMENT_BEFORE = """
        -- A lapsed lease first, else the first open comparison by position, whose pair they have not
        -- judged: each is one index-ordered scan of a partial index (comparison_leased,
        -- comparison_open), so the lease costs the same in a full ballot as in an empty one. A row
"""
_COMMENT_AFTER = """
        -- The longest-lapsed lease first, else the first open comparison by position, whose pair they
        -- have not judged: each is one index-ordered scan of a partial index (comparison_lapsing by
        -- expiry, comparison_open by position), so the lease costs the same in a full ballot, with a
        -- crowd holding leases, as in an empty one. A row
"""

_TAKE_LAPSED_BEFORE = """
                               AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high)
             ORDER BY c.position LIMIT 1
               FOR UPDATE OF c SKIP LOCKED;
            IF FOUND THEN  -- the lapsed lease's assignment ends
"""
_TAKE_LAPSED_AFTER = _TAKE_LAPSED_BEFORE.replace(
    "ORDER BY c.position", "ORDER BY c.lease_expires_at, c.position"
)

_ANY_LAPSED_BEFORE = """
                   AND other.lease_expires_at < p_now
                 ORDER BY other.position LIMIT 1) IS NOT NULL)
"""
_ANY_LAPSED_AFTER = _ANY_LAPSED_BEFORE.replace(
    "ORDER BY other.position", "ORDER BY other.lease_expires_at, other.position"
)

_LAPSED_NOT_JUDGED_BEFORE = """
                                   AND v.pair_low = other.pair_low AND v.pair_high = other.pair_high)
                 ORDER BY other.position LIMIT 1) IS NULL);
"""
_LAPSED_NOT_JUDGED_AFTER = _LAPSED_NOT_JUDGED_BEFORE.replace(
    "ORDER BY other.position", "ORDER BY other.lease_expires_at, other.position"
)


def _replaced(text: str, name: str, replacements: list[tuple[str, str]]) -> str:
    """``text`` (the function ``name``'s) with each replacement made. Each replaced text must be found
    exactly once, so that a text other than the one read here fails loudly."""
    for old, new in replacements:
        if text.count(old) != 1:
            raise ValueError(f"{name} does not hold {old!r} exactly once")
        text = text.replace(old, new)
    return text


# v2's text with its name and its look-ups of lapsed leases changed.
LEASE_FUNCTION = _replaced(
    _V2.LEASE_FUNCTION,
    "yardstick_lease_v2",
    [
        ("CREATE OR REPLACE FUNCTION yardstick_lease_v2(", "CREATE OR REPLACE FUNCTION yardstick_lease_v3("),
        (_COMMENT_BEFORE, _COMMENT_AFTER),
        (_TAKE_LAPSED_BEFORE, _TAKE_LAPSED_AFTER),
        (_ANY_LAPSED_BEFORE, _ANY_LAPSED_AFTER),
        (_LAPSED_NOT_JUDGED_BEFORE, _LAPSED_NOT_JUDGED_AFTER),
    ],
)

_STUDY_INDEXED = "\n       AND an.study_id = p_studies[array_position(p_annotators, a.annotator_id)]\n"
# ``an.study_id + 0`` is the study, but no index of the study can answer a condition on it.
_STUDY_NOT_INDEXED = (
    "\n       AND an.study_id + 0 = p_studies[array_position(p_annotators, a.annotator_id)]\n"
)

# The vote's v2 text with its name and its owner's study changed.
VOTE_FUNCTION = _replaced(
    _VOTE_V2.VOTE_FUNCTION,
    "yardstick_vote_v2",
    [
        ("CREATE OR REPLACE FUNCTION yardstick_vote_v2(", "CREATE OR REPLACE FUNCTION yardstick_vote_v3("),
        (_STUDY_INDEXED, _STUDY_NOT_INDEXED),
    ],
)

DROP = """
DROP FUNCTION IF EXISTS yardstick_lease_v3(
    bigint, bigint, timestamptz, timestamptz, integer, boolean, bigint, uuid, bigint, integer);
DROP FUNCTION IF EXISTS yardstick_vote_v3(bigint, bigint[], bigint[], timestamptz, text, integer, integer);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0026_vote_by_primary_key"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="comparison",
            index=models.Index(
                condition=models.Q(("status", "leased")),
                fields=["ballot", "lease_expires_at", "position"],
                name="comparison_lapsing",
            ),
        ),
        migrations.RemoveIndex(model_name="comparison", name="comparison_leased"),
        on_postgresql_only([LEASE_FUNCTION, VOTE_FUNCTION], reverse=DROP),
    ]
