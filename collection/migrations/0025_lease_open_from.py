"""The lease's scan of the open comparisons starts where its caller last read the first open one
(PostgreSQL only; issue 9): ``yardstick_lease_v2``.

A lease takes the first open comparison by position, through the partial index ``comparison_open``.
Leasing a comparison leaves its entry in that index, dead, until a vacuum removes it, and leases go in
order of position: so every lease's scan walked past the entries of every comparison leased since the
last vacuum. The lease's cost grew with the ballot: at 9,000 of 9,900 comparisons voted the scan read
37 index pages where the first read 1 (BENCHMARKS.md, 2026-11-25).

``yardstick_lease_v2`` is ``yardstick_lease_v1`` (migration 0024) with two more parameters: a ballot and
a position before which, as the caller last read, no comparison of that ballot is open. The scan starts
there. A caller without one for the open ballot gets it: the function reads the first open position
(``o_first_open``) and scans from it. A comparison opened again before that position (a lease that
lapsed, an excluded annotator's votes set aside) is found when the scan from the position finds
nothing, or by the caller's next read of the first open position (``collection.voting``: at most every
100 leases of a process, and at once in the process that opened it). v1 stays for processes still
running the code that calls it.
"""

from django.db import migrations

LEASE_FUNCTION = """
CREATE OR REPLACE FUNCTION yardstick_lease_v2(
    p_study bigint, p_annotator bigint, p_now timestamptz, p_expires timestamptz, p_cap integer,
    p_commit_async boolean, p_after_vote bigint, p_settings_version uuid, p_open_ballot bigint,
    p_open_from integer)
RETURNS TABLE (
    o_ballot_id bigint, o_ballot_number integer, o_comparison_count integer, o_votes_recorded bigint,
    o_votes_total integer, o_votes_in_ballot integer,
    o_assignment_id bigint, o_comparison_id bigint, o_issued_at timestamptz, o_expires_at timestamptz,
    o_left_item_id bigint, o_left_a text, o_left_b text, o_right_item_id bigint, o_right_a text, o_right_b text,
    o_only_judged_left boolean, o_excluded boolean, o_go boolean, o_first_open integer, o_setting text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    held record;
    free record;
    from_position integer;
    read_here boolean;
BEGIN
    -- A lease in a transaction of its own commits asynchronously (collection.voting._lease_row).
    IF p_commit_async THEN
        o_setting := set_config('synchronous_commit', 'off', true);
    END IF;
    -- An exclusion committed after the request read the annotator: no ballot, no lease. After a vote in
    -- the same transaction (the judgement's): only if that vote stands and the study's settings are
    -- the ones the caller's parameters come from.
    SELECT an.excluded_at IS NOT NULL,
           (p_after_vote IS NULL OR EXISTS (
               SELECT 1 FROM collection_assignment voted
               JOIN collection_study st ON st.id = an.study_id AND st.settings_version = p_settings_version
               WHERE voted.id = p_after_vote AND voted.annotator_id = an.id AND voted.status = 'voted'))
      INTO o_excluded, o_go
      FROM collection_annotator an WHERE an.id = p_annotator;
    IF o_excluded IS FALSE AND o_go THEN
        SELECT b.id, b.number, b.comparison_count,
               (SELECT COALESCE(SUM(part.votes), 0) FROM collection_ballotcounter part WHERE part.ballot_id = b.id)
          INTO o_ballot_id, o_ballot_number, o_comparison_count, o_votes_recorded
          FROM collection_ballot b
         WHERE b.study_id = p_study AND b.status = 'open';
    END IF;
    -- Their count of votes (AnnotatorVotes): counting their votes read every one, on every lease.
    SELECT COALESCE(MAX(n.total), 0), COALESCE(MAX(n.in_ballot) FILTER (WHERE n.ballot_id = o_ballot_id), 0)
      INTO o_votes_total, o_votes_in_ballot
      FROM collection_annotatorvotes n WHERE n.annotator_id = p_annotator;
    IF o_ballot_id IS NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    -- The lease they hold (one at most: one_active_assignment_per_annotator), given again while it runs
    -- in the open ballot; otherwise it ends, and a comparison is taken.
    SELECT a.id, a.comparison_id, a.issued_at, a.expires_at,
           (a.expires_at > p_now AND a.ballot_id = o_ballot_id) AS valid
      INTO held
      FROM collection_assignment a WHERE a.annotator_id = p_annotator AND a.status = 'active';
    IF FOUND AND held.valid THEN
        o_assignment_id := held.id;
        o_comparison_id := held.comparison_id;
        o_issued_at := held.issued_at;
        o_expires_at := held.expires_at;
    ELSE
        IF FOUND THEN
            UPDATE collection_assignment SET status = 'expired' WHERE id = held.id AND status = 'active';
        END IF;
        -- A lapsed lease first, else the first open comparison by position, whose pair they have not
        -- judged: each is one index-ordered scan of a partial index (comparison_leased,
        -- comparison_open), so the lease costs the same in a full ballot as in an empty one. A row
        -- another transaction holds is passed over (SKIP LOCKED), as is one voted since.
        IF p_cap IS NULL OR o_votes_in_ballot < p_cap THEN
            SELECT c.id, c.status INTO free
              FROM collection_comparison c
             WHERE c.ballot_id = o_ballot_id AND c.status = 'leased' AND c.lease_expires_at < p_now
               AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = p_annotator
                               AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high)
             ORDER BY c.position LIMIT 1
               FOR UPDATE OF c SKIP LOCKED;
            IF FOUND THEN  -- the lapsed lease's assignment ends
                UPDATE collection_assignment SET status = 'expired'
                 WHERE status = 'active' AND comparison_id = free.id;
            ELSE
                -- The open comparisons' scan starts at the caller's position in this ballot: no open
                -- comparison lies before it, as the caller last read (o_first_open of an earlier call).
                -- Without it the scan walks the index entries of every comparison leased since the
                -- last vacuum, which lie before the first open one. A caller without one for this
                -- ballot gets the first open position read here, to pass next time.
                read_here := p_open_from IS NULL OR p_open_ballot IS DISTINCT FROM o_ballot_id;
                IF read_here THEN
                    SELECT c.position INTO o_first_open
                      FROM collection_comparison c
                     WHERE c.ballot_id = o_ballot_id AND c.status = 'open'
                     ORDER BY c.position LIMIT 1;
                    from_position := o_first_open;  -- NULL: none is open, nothing to scan
                ELSE
                    from_position := p_open_from;
                END IF;
                IF from_position IS NOT NULL THEN
                    SELECT c.id, c.status INTO free
                      FROM collection_comparison c
                     WHERE c.ballot_id = o_ballot_id AND c.status = 'open' AND c.position >= from_position
                       AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = p_annotator
                                       AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high)
                     ORDER BY c.position LIMIT 1
                       FOR UPDATE OF c SKIP LOCKED;
                    IF NOT FOUND AND NOT read_here THEN
                        -- Nothing from the caller's position on: the whole ballot, for a comparison
                        -- opened again before it (a lease that lapsed, an excluded annotator's votes
                        -- set aside) since the caller read it.
                        SELECT c.id, c.status INTO free
                          FROM collection_comparison c
                         WHERE c.ballot_id = o_ballot_id AND c.status = 'open'
                           AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = p_annotator
                                           AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high)
                         ORDER BY c.position LIMIT 1
                           FOR UPDATE OF c SKIP LOCKED;
                    END IF;
                END IF;
            END IF;
            IF free.id IS NOT NULL THEN
                -- The new assignment comes after the leases it replaces have ended, so the partial
                -- unique indexes of active assignments see only it. A lease of the same annotator that
                -- won the race makes this INSERT fail, which undoes the whole call.
                UPDATE collection_comparison SET status = 'leased', lease_expires_at = p_expires WHERE id = free.id;
                INSERT INTO collection_assignment (comparison_id, ballot_id, annotator_id, status, issued_at, expires_at)
                VALUES (free.id, o_ballot_id, p_annotator, 'active', p_now, p_expires)
                RETURNING id, comparison_id, issued_at, expires_at
                     INTO o_assignment_id, o_comparison_id, o_issued_at, o_expires_at;
            END IF;
        END IF;
    END IF;
    IF o_comparison_id IS NOT NULL THEN
        SELECT c.left_item_id, left_a.text, left_b.text, c.right_item_id, right_a.text, right_b.text
          INTO o_left_item_id, o_left_a, o_left_b, o_right_item_id, o_right_a, o_right_b
          FROM collection_comparison c
          JOIN collection_item left_item ON left_item.id = c.left_item_id
          JOIN collection_token left_a ON left_a.id = left_item.token_a_id
          JOIN collection_token left_b ON left_b.id = left_item.token_b_id
          JOIN collection_item right_item ON right_item.id = c.right_item_id
          JOIN collection_token right_a ON right_a.id = right_item.token_a_id
          JOIN collection_token right_b ON right_b.id = right_item.token_b_id
         WHERE c.id = o_comparison_id;
    ELSIF o_assignment_id IS NULL THEN
        -- Nothing given: "none for you" when comparisons are left (open, or leases lapsed) and every
        -- one of them is a pair the annotator has judged; else they are leased to others, or are being
        -- leased by others at this instant (SKIP LOCKED passed over them): "all leased". Each look-up
        -- is the first by position of one status, an index-ordered scan of its partial index.
        o_only_judged_left := (
            ((SELECT other.position FROM collection_comparison other
              WHERE other.ballot_id = o_ballot_id AND other.status = 'open'
              ORDER BY other.position LIMIT 1) IS NOT NULL
             OR (SELECT other.position FROM collection_comparison other
                 WHERE other.ballot_id = o_ballot_id AND other.status = 'leased'
                   AND other.lease_expires_at < p_now
                 ORDER BY other.position LIMIT 1) IS NOT NULL)
            AND (SELECT other.position FROM collection_comparison other
                 WHERE other.ballot_id = o_ballot_id AND other.status = 'open'
                   AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = p_annotator
                                   AND v.pair_low = other.pair_low AND v.pair_high = other.pair_high)
                 ORDER BY other.position LIMIT 1) IS NULL
            AND (SELECT other.position FROM collection_comparison other
                 WHERE other.ballot_id = o_ballot_id AND other.status = 'leased'
                   AND other.lease_expires_at < p_now
                   AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = p_annotator
                                   AND v.pair_low = other.pair_low AND v.pair_high = other.pair_high)
                 ORDER BY other.position LIMIT 1) IS NULL);
    END IF;
    RETURN NEXT;
END
$fn$;
"""

DROP = """
DROP FUNCTION IF EXISTS yardstick_lease_v2(
    bigint, bigint, timestamptz, timestamptz, integer, boolean, bigint, uuid, bigint, integer);
"""


def create_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LEASE_FUNCTION)


def drop_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0024_judgement_functions"),
    ]

    operations = [
        migrations.RunPython(create_function, drop_function),
    ]
