"""SQL statements per judgement: the lease and the vote stay a few statements each, the same on
PostgreSQL and SQLite (one code path).

A lease is BEGIN, where the annotator stands, the comparison taken, the lapsed lease it replaces
ended, the assignment, COMMIT (a test's transaction turns BEGIN and COMMIT into SAVEPOINT and RELEASE);
the first lease of a study in a process reads its items' tokens once. A vote is BEGIN, the assignment
taken, the comparison taken, the vote, the ballot's counter, the annotator's counts, COMMIT. A judgement
is both in one transaction, without the lease's read of where the annotator stands (the vote's
statements said it); a request adds the reads of who is asking.
"""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from collection.models import Assignment, Comparison, Vote
from collection.voting import comparison_next_for, vote_record, vote_record_and_next
from tests.factories import annotators, make_study

pytestmark = pytest.mark.django_db

BOUNDS = {
    "lease": 6,
    "first lease": 7,  # the study's tokens, once per process
    "expired lease": 6,
    "vote": 7,
    "GET next": 8,
    "POST vote": 11,  # the study's row, once per process
    "later POST vote": 10,
}


def statements(call):
    with CaptureQueriesContext(connection) as queries:
        result = call()
    return result, len(queries)


def join(client: Client, study, participant: str) -> None:
    client.get(f"/s/{study.slug}/", {"participant": participant})
    client.post(f"/s/{study.slug}/", {"consent": "yes", "participant": participant})


def test_a_judgement_through_the_api_is_one_request_of_a_few_statements():
    bounds = BOUNDS
    study = make_study(tokens=8, votes_per_annotator_per_ballot=None)  # 28 items, 56 comparisons
    client = Client()
    join(client, study, "counted")
    response, first_count = statements(lambda: client.get(f"/api/studies/{study.slug}/next/"))
    assert response.status_code == 200 and first_count <= bounds["GET next"], first_count
    current = response.json()
    for number in range(1, 9):
        body = {"assignment": current["assignment"], "choice": ("left", "right")[number % 2]}
        response, count = statements(
            lambda body=body: client.post("/api/votes/", body, content_type="application/json")
        )
        bound = bounds["POST vote" if number == 1 else "later POST vote"]
        assert response.status_code == 201 and count <= bound, (number, count)
        current = response.json()["next"]
        held = Assignment.objects.get(annotator__participant_id="counted", status="active")
        assert current["assignment"] == held.pk
    assert Vote.objects.filter(annotator__participant_id="counted").count() == 8


def test_the_lease_and_the_vote_services_stay_within_their_statements():
    bounds = BOUNDS
    study = make_study(tokens=8, votes_per_annotator_per_ballot=5)
    alice, bob = annotators(study, 2)
    for number in range(5):
        result, lease = statements(lambda: comparison_next_for(annotator=alice))
        assert result.assignment is not None and lease <= bounds["first lease" if number == 0 else "lease"], lease
        (vote, created), cast = statements(
            lambda result=result: vote_record(
                annotator=alice, assignment_id=result.assignment.pk, choice="left"
            )
        )
        assert created and vote.assignment_id == result.assignment.pk and cast <= bounds["vote"], cast
    # The cap reached: the answer that says so costs no more than a lease.
    result, lease = statements(lambda: comparison_next_for(annotator=alice))
    assert (result.assignment, result.reason, lease <= bounds["lease"]) == (None, "quota", True)
    # An expired lease taken over by another annotator: on SQLite one more, to end the old assignment.
    held = comparison_next_for(annotator=bob).assignment
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    carol = annotators(study, 1, prefix="c")[0]
    result, lease = statements(lambda: comparison_next_for(annotator=carol, now=later))
    assert result.assignment.comparison_id == held.comparison_id and lease <= bounds["expired lease"], lease
    assert Assignment.objects.get(pk=held.pk).status == "expired"
    assert Comparison.objects.get(pk=held.comparison_id).status == "leased"


def test_the_lease_and_the_vote_are_the_same_statements_on_every_database():
    study = make_study(tokens=8, votes_per_annotator_per_ballot=None)
    first, alice = annotators(study, 2)
    comparison_next_for(annotator=first)  # the study's tokens, read once per process
    with CaptureQueriesContext(connection) as queries:
        result = comparison_next_for(annotator=alice)
    # Inside the test's transaction, BEGIN and COMMIT are a savepoint and its release.
    assert [query["sql"].split()[0] for query in queries] == [
        "SAVEPOINT", "SELECT", "UPDATE", "UPDATE", "INSERT", "RELEASE",
    ]  # fmt: skip
    assert result.sides["left"]["tokens"] == [
        result.assignment.comparison.left_item.token_a.text,
        result.assignment.comparison.left_item.token_b.text,
    ]
    with CaptureQueriesContext(connection) as queries:
        vote, created = vote_record(annotator=alice, assignment_id=result.assignment.pk, choice="right")
    assert [" ".join(query["sql"].split()[:2]) for query in queries] == [
        f"SAVEPOINT {queries[0]['sql'].split()[1]}",
        "UPDATE collection_assignment",
        "UPDATE collection_comparison",
        "INSERT INTO",
        "INSERT INTO",
        "INSERT INTO",
        "RELEASE SAVEPOINT",
    ]
    assert created and Vote.objects.get(pk=vote.pk).choice == "right"
    study.ballots.get(number=1).refresh_from_db()
    assert study.ballots.get(number=1).votes_recorded == 1


@pytest.mark.integration
def test_on_postgresql_the_tables_of_every_judgement_are_vacuumed_after_one_percent(postgres_required):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname IN"
            " ('collection_comparison', 'collection_assignment', 'collection_vote') ORDER BY relname"
        )
        options = {name: sorted(values) for name, values in cursor.fetchall()}
    expected = sorted(
        [
            "autovacuum_vacuum_scale_factor=0.01",
            "autovacuum_vacuum_threshold=1000",
            "autovacuum_analyze_scale_factor=0.01",
            "autovacuum_analyze_threshold=1000",
        ]
    )
    assert options == dict.fromkeys(
        ["collection_assignment", "collection_comparison", "collection_vote"], expected
    )


def _plans_of_nested_statements(run, *, buffers: bool = False) -> list[str]:
    """The plans of the statements that ``run()`` runs, those inside functions too (auto_explain, sent
    to this connection as notices); with ``buffers``, as run, with the buffers each node read."""
    plans: list[str] = []
    raw = connection.connection  # psycopg's, under Django's wrapper

    def keep(diagnostic):
        plans.append(diagnostic.message_primary or "")

    raw.add_notice_handler(keep)
    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        cursor.execute(
            "SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;"
            " SET auto_explain.log_level = notice"
        )
        if buffers:
            cursor.execute("SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on")
    try:
        run()
    finally:
        raw.remove_notice_handler(keep)
        with connection.cursor() as cursor:
            cursor.execute(
                "RESET auto_explain.log_min_duration; RESET auto_explain.log_nested_statements;"
                " RESET auto_explain.log_level; RESET auto_explain.log_analyze;"
                " RESET auto_explain.log_buffers"
            )
    return plans


@pytest.mark.integration
def test_on_postgresql_the_lease_reads_the_open_comparisons_index_whatever_the_statistics(postgres_required):
    # Statistics from the ballot's opening say every comparison is open: the lease must still take the
    # partial index of open comparisons, not the (ballot, position) one filtered on status, which reads
    # past every comparison already voted; and the lapsed leases' one for those. Eight annotators lease in
    # turn. At the demo's size (990 items, 9,900 comparisons in the first ballot), where
    # the choice matters: on a table of a few pages a sequential scan is as good.
    study = make_study(tokens=45, appearances=20, votes_per_annotator_per_ballot=None)
    crowd = annotators(study, 8)
    ballot = study.ballots.get(number=1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE collection_comparison")
    Comparison.objects.filter(ballot=ballot, position__lt=ballot.comparison_count - 12).update(status="voted")

    def lease_each():
        for annotator in crowd:
            assert comparison_next_for(annotator=annotator).assignment is not None

    plans = [plan for plan in _plans_of_nested_statements(lease_each) if "SET status = 'leased'" in plan]
    assert len(plans) == len(crowd)
    for plan in plans:
        assert "using comparison_open on collection_comparison" in plan, plan
        assert "using comparison_lapsing on collection_comparison" in plan, plan
    assert not any("comparison_position_unique" in plan for plan in plans)


@pytest.mark.integration
@pytest.mark.parametrize("plans", ["force_custom_plan", "force_generic_plan"])
def test_on_postgresql_a_lease_looks_for_a_lapsed_lease_in_one_probe_however_many_a_crowd_holds(
    postgres_required, plans
):
    # A crowd holds 300 leases, none lapsed. By expiry the lapsed ones are the start of the ballot's
    # range in comparison_lapsing, and with none lapsed the index's first entry says so: a probe, not a
    # read of every lease held. In the plans made from each call's values and in a generic one alike;
    # then a lease that lapsed is still found by the same probe.
    study = make_study(tokens=45, appearances=20, votes_per_annotator_per_ballot=None)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE collection_comparison")  # the ballot's opening: nothing leased
    crowd = annotators(study, 300, prefix="crowd")
    now = timezone.now()
    for annotator in crowd:
        assert comparison_next_for(annotator=annotator, now=now).assignment is not None
    newcomers = annotators(study, 8, prefix="new")

    def lease_each():
        with connection.cursor() as cursor:
            cursor.execute(f"SET plan_cache_mode = {plans}")
        try:
            for annotator in newcomers:
                assert comparison_next_for(annotator=annotator, now=now).assignment is not None
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET plan_cache_mode")

    plans_run = [
        plan for plan in _plans_of_nested_statements(lease_each, buffers=True) if "SET status = 'leased'" in plan
    ]
    assert len(plans_run) == len(newcomers)
    for plan in plans_run:
        lines = plan.splitlines()
        probes = [number for number, line in enumerate(lines) if "using comparison_lapsing" in line]
        assert len(probes) == 1, plan
        buffers = next(line for line in lines[probes[0] :] if "Buffers:" in line)
        read = [int(hits) for hits in re.findall(r"shared hit=(\d+)", buffers)]
        assert read and max(read) <= 6, plan  # the index's root and a leaf (and a heap page): not 300
    # One lease of the crowd lapses: the next newcomer takes it over, by the same probe.
    lapsed = Assignment.objects.filter(annotator=crowd[150], status=Assignment.Status.ACTIVE).get()
    Comparison.objects.filter(pk=lapsed.comparison_id).update(lease_expires_at=now - timedelta(seconds=1))
    (late,) = annotators(study, 1, prefix="late")
    assert comparison_next_for(annotator=late, now=now).assignment.comparison_id == lapsed.comparison_id


@pytest.mark.integration
@pytest.mark.parametrize("plans", ["force_custom_plan", "force_generic_plan"])
def test_on_postgresql_a_vote_finds_its_rows_by_primary_key_whatever_the_statistics(postgres_required, plans):
    # Statistics from the ballot's opening say no comparison is leased and the study has one annotator.
    # Then a crowd joins and each holds a lease: a vote must still find its
    # assignment and take its comparison by primary key, not through the partial index of leased
    # comparisons or the study's annotators, which read a row per annotator of the crowd on every vote.
    # In the plans PostgreSQL makes from each call's values and in a generic one alike.
    study = make_study(tokens=45, appearances=20, votes_per_annotator_per_ballot=None)
    annotators(study, 1, prefix="first")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE collection_comparison; ANALYZE collection_annotator")
    crowd = annotators(study, 8)
    others = annotators(study, 30, prefix="other")  # leases held by people who have not voted yet
    held = {
        annotator.pk: comparison_next_for(annotator=annotator).assignment for annotator in [*crowd, *others]
    }
    assert Comparison.objects.filter(status="leased").count() == len(crowd) + len(others)
    with connection.cursor() as cursor:  # the assignments as they are: the statistics of an empty table
        cursor.execute("ANALYZE collection_assignment")  # make any scan of it look as cheap as its key

    def vote_each():
        with connection.cursor() as cursor:
            cursor.execute(f"SET plan_cache_mode = {plans}")
        try:
            for annotator in crowd:
                vote_record_and_next(annotator=annotator, assignment_id=held[annotator.pk].pk, choice="left")
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET plan_cache_mode")

    found = _plans_of_nested_statements(vote_each)
    owners = [plan for plan in found if "UPDATE collection_assignment SET status = 'voted'" in plan]
    taken = [plan for plan in found if "SET status = 'voted', lease_expires_at = NULL" in plan]
    assert len(owners) == len(taken) == len(crowd)
    for plan in owners:  # by its key (or a scan of what the statistics call an empty table), never by annotator
        assert "collection_annotator_study_id" not in plan and "collection_assignment_annotator_id" not in plan
    for plan in taken:
        assert "using collection_comparison_pkey on collection_comparison" in plan, plan
        assert "comparison_lapsing" not in plan, plan
    assert Vote.objects.filter(annotator__in=crowd).count() == len(crowd)
    assert Comparison.objects.filter(status="voted").count() == len(crowd)


# Every foreign key of the project's tables leads an index: PostgreSQL checks a deleted row's foreign
# keys by looking for the rows that still name it, once per deleted row, and without such an index that
# look-up scans the whole referencing table (deleting a study scanned the comparisons once per item).
_FOREIGN_KEYS_WITHOUT_LEADING_INDEX = """
SELECT con.conrelid::regclass::text, att.attname
FROM pg_constraint con
JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
WHERE con.contype = 'f' AND array_length(con.conkey, 1) = 1
  AND con.conrelid::regclass::text ~ '^(collection|scoring|metrics)_'
  AND NOT EXISTS (
      SELECT 1 FROM pg_index ix
      WHERE ix.indrelid = con.conrelid AND ix.indkey[0] = con.conkey[1]
        -- a partial index serves the check only if it holds every row that names a row: NOT NULL
        AND (ix.indpred IS NULL
             OR pg_get_expr(ix.indpred, ix.indrelid) = '(' || quote_ident(att.attname) || ' IS NOT NULL)')
  )
ORDER BY 1, 2
"""


@pytest.mark.integration
def test_on_postgresql_every_foreign_key_leads_an_index(postgres_required):
    with connection.cursor() as cursor:
        cursor.execute(_FOREIGN_KEYS_WITHOUT_LEADING_INDEX)
        unindexed = cursor.fetchall()
    assert unindexed == []


@pytest.mark.integration
def test_on_postgresql_a_judgements_rows_carry_the_indexes_they_need_and_no_more(postgres_required):
    # A lease and a vote write an entry in every index of the comparison (twice: its status is in the
    # partial indexes' predicates, so no update of it is HOT), the assignment and the vote. The check's
    # index holds only the checks' assignments, not a NULL per comparison's.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename IN"
            " ('collection_comparison', 'collection_assignment', 'collection_vote')"
        )
        indexes = cursor.fetchall()
    checks = [definition for _, _, definition in indexes if "(quality_check_id)" in definition]
    assert len(checks) == 1 and checks[0].endswith("WHERE (quality_check_id IS NOT NULL)")
    counts = {}
    for table, _, _ in indexes:
        counts[table] = counts.get(table, 0) + 1
    assert counts == {"collection_comparison": 6, "collection_assignment": 7, "collection_vote": 8}


@pytest.mark.integration
def test_on_postgresql_a_judgements_statements_are_prepared_on_their_connection(postgres_required):
    # DATABASE_PREPARE (on by default): psycopg binds on the server and prepares a statement it has run
    # a few times, so PostgreSQL plans the vote's and the lease's statements once per connection.
    assert connection.settings_dict["OPTIONS"].get("server_side_binding") is True
    study = make_study(tokens=8, votes_per_annotator_per_ballot=None)
    (alice,) = annotators(study, 1)
    result = comparison_next_for(annotator=alice)
    for number in range(8):
        _vote, created, result = vote_record_and_next(
            annotator=alice, assignment_id=result.assignment.pk, choice=("left", "right")[number % 2]
        )
        assert created and result.assignment is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("UPDATE collection_assignment SET status = 'voted'" in text for text in prepared)
    assert any("UPDATE collection_comparison SET status = 'leased'" in text for text in prepared)
