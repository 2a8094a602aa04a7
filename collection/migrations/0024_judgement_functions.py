"""The judgement's two statements as PL/pgSQL functions (PostgreSQL only; issue 9).

``yardstick_vote_v1`` records a vote and ``yardstick_lease_v1`` leases the next comparison. They do what
the two ``WITH`` statements of ``collection.voting`` did (the same rows, read and written in the same
order, the same row of answers), one simple statement at a time, each with a plan of a few nodes that
the function keeps for its session. A ``WITH`` statement started all of its parts on every run,
whichever would run: about a hundred plan nodes for the lease alone. The database's CPU per judgement
fell by about a sixth (BENCHMARKS.md, 2026-11-25).

The functions are versioned by name: a change is a new function in a new migration (``_v2``), so that a
process still running the code before it keeps calling the function its code knows. SQLite has no
functions of this kind and keeps its step-by-step path (``collection.voting``).
"""

from django.db import migrations

VOTE_FUNCTION = """
CREATE OR REPLACE FUNCTION yardstick_vote_v1(
    p_assignment bigint, p_studies bigint[], p_annotators bigint[], p_now timestamptz,
    p_choice text, p_client_ms integer, p_parts integer)
RETURNS TABLE (
    o_annotator_id bigint, o_study_id bigint, o_excluded_at timestamptz, o_settings_version uuid,
    o_status text, o_ballot_open boolean, o_ballot_number integer, o_expired boolean, o_ballot_id bigint,
    o_marked bigint, o_recorded bigint, o_comparison_count integer, o_quality_check_id bigint,
    o_id bigint, o_assignment_id bigint, o_comparison_id bigint, o_vote_ballot_id bigint,
    o_left_item_id bigint, o_right_item_id bigint, o_pair_low integer, o_pair_high integer,
    o_choice text, o_response_ms integer, o_client_response_ms integer, o_created_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    t record;
    taken record;
    may_vote boolean;
    counted record;
BEGIN
    -- The assignment, locked first (a retry of the same vote waits here, then sees it voted), if it is
    -- held by one of the annotators the caller names, each with their study (the signed cookie's pairs,
    -- or the one annotator a caller already knows). The holder's study and exclusion come back with it,
    -- so that a vote needs no statement to learn who cast it.
    SELECT a.id, a.status, a.issued_at, a.expires_at, a.comparison_id, a.ballot_id, a.quality_check_id,
           a.annotator_id, an.study_id, an.excluded_at
      INTO t
      FROM collection_assignment a
      JOIN collection_annotator an ON an.id = a.annotator_id
      JOIN unnest(p_studies, p_annotators) AS owner(study_id, annotator_id)
        ON owner.annotator_id = a.annotator_id AND owner.study_id = an.study_id
     WHERE a.id = p_assignment
       FOR UPDATE OF a;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    o_annotator_id := t.annotator_id;
    o_study_id := t.study_id;
    o_excluded_at := t.excluded_at;
    o_status := t.status;
    o_expired := t.expires_at <= p_now;
    o_ballot_id := t.ballot_id;
    o_quality_check_id := t.quality_check_id;
    o_marked := 0;
    SELECT b.status = 'open', b.number, b.comparison_count, st.settings_version,
           (t.status = 'active' AND b.status = 'open' AND t.expires_at > p_now AND t.excluded_at IS NULL
            AND (p_choice <> 'tie' OR st.allow_ties))
      INTO o_ballot_open, o_ballot_number, o_comparison_count, o_settings_version, may_vote
      FROM collection_ballot b, collection_study st
     WHERE b.id = t.ballot_id AND st.id = t.study_id;
    -- The ballot and the study as they are now: read after the lock, so that a vote that waited for the
    -- close of its ballot sees that ballot closed.
    IF may_vote THEN
        -- The comparison is taken by the conditional UPDATE, whose row decides; the vote, the
        -- assignment and, last, the ballot's counter follow from that row.
        UPDATE collection_comparison c SET status = 'voted', lease_expires_at = NULL
         WHERE c.id = t.comparison_id AND c.status = 'leased'
        RETURNING c.id, c.ballot_id, c.left_item_id, c.right_item_id, c.pair_low, c.pair_high INTO taken;
        IF FOUND THEN
            INSERT INTO collection_vote (assignment_id, comparison_id, annotator_id, ballot_id, left_item_id,
                                         right_item_id, pair_low, pair_high, choice, response_ms,
                                         client_response_ms, created_at)
            VALUES (t.id, taken.id, t.annotator_id, taken.ballot_id, taken.left_item_id, taken.right_item_id,
                    taken.pair_low, taken.pair_high, p_choice,
                    GREATEST(0, FLOOR(EXTRACT(EPOCH FROM (p_now - t.issued_at)) * 1000))::integer,
                    p_client_ms, p_now)
            RETURNING id, assignment_id, comparison_id, ballot_id, left_item_id, right_item_id, pair_low,
                      pair_high, choice, response_ms, client_response_ms, created_at
                 INTO o_id, o_assignment_id, o_comparison_id, o_vote_ballot_id, o_left_item_id,
                      o_right_item_id, o_pair_low, o_pair_high, o_choice, o_response_ms,
                      o_client_response_ms, o_created_at;
            UPDATE collection_assignment SET status = 'voted' WHERE id = t.id;
            GET DIAGNOSTICS o_marked = ROW_COUNT;
            -- The annotator's count (AnnotatorVotes), which their next lease reads.
            INSERT INTO collection_annotatorvotes AS theirs (annotator_id, total, ballot_id, in_ballot)
            VALUES (t.annotator_id, 1, taken.ballot_id, 1)
            ON CONFLICT (annotator_id) DO UPDATE SET
                total = theirs.total + 1,
                in_ballot = CASE WHEN theirs.ballot_id = excluded.ballot_id THEN theirs.in_ballot + 1 ELSE 1 END,
                ballot_id = excluded.ballot_id;
            -- This connection's part of the ballot's count (BallotCounter), then the whole count.
            INSERT INTO collection_ballotcounter AS mine (ballot_id, part, votes)
            VALUES (taken.ballot_id, mod(pg_backend_pid(), p_parts), 1)
            ON CONFLICT (ballot_id, part) DO UPDATE SET votes = mine.votes + 1
            RETURNING mine.ballot_id, mine.part, mine.votes INTO counted;
            SELECT counted.votes + COALESCE(SUM(other.votes), 0) INTO o_recorded
              FROM collection_ballotcounter other
             WHERE other.ballot_id = counted.ballot_id AND other.part <> counted.part;
        END IF;
    END IF;
    RETURN NEXT;
END
$fn$;
"""

LEASE_FUNCTION = """
CREATE OR REPLACE FUNCTION yardstick_lease_v1(
    p_study bigint, p_annotator bigint, p_now timestamptz, p_expires timestamptz, p_cap integer,
    p_commit_async boolean, p_after_vote bigint, p_settings_version uuid)
RETURNS TABLE (
    o_ballot_id bigint, o_ballot_number integer, o_comparison_count integer, o_votes_recorded bigint,
    o_votes_total integer, o_votes_in_ballot integer,
    o_assignment_id bigint, o_comparison_id bigint, o_issued_at timestamptz, o_expires_at timestamptz,
    o_left_item_id bigint, o_left_a text, o_left_b text, o_right_item_id bigint, o_right_a text, o_right_b text,
    o_only_judged_left boolean, o_excluded boolean, o_go boolean, o_setting text)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    held record;
    free record;
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
                SELECT c.id, c.status INTO free
                  FROM collection_comparison c
                 WHERE c.ballot_id = o_ballot_id AND c.status = 'open'
                   AND NOT EXISTS (SELECT 1 FROM collection_vote v WHERE v.annotator_id = p_annotator
                                   AND v.pair_low = c.pair_low AND v.pair_high = c.pair_high)
                 ORDER BY c.position LIMIT 1
                   FOR UPDATE OF c SKIP LOCKED;
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
DROP FUNCTION IF EXISTS yardstick_vote_v1(bigint, bigint[], bigint[], timestamptz, text, integer, integer);
DROP FUNCTION IF EXISTS yardstick_lease_v1(bigint, bigint, timestamptz, timestamptz, integer, boolean, bigint, uuid);
"""


def create_functions(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(VOTE_FUNCTION)
        schema_editor.execute(LEASE_FUNCTION)


def drop_functions(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0023_foreign_keys_indexed"),
    ]

    operations = [
        migrations.RunPython(create_functions, drop_functions),
    ]
