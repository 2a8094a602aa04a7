"""common.prepared.PreparedStatement: planned once per PostgreSQL connection, run by name, with the
answers of the same statement sent as text."""

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, connections, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.prepared import PreparedStatement

SQL = """
SELECT %(day)s::timestamptz + make_interval(days => %(count)s) AS later,
       %(count)s IS NULL AS no_count,
       %(word)s || '!' AS shout
"""
TYPES = {"day": "timestamptz", "count": "integer", "word": "text"}


def test_the_parameters_must_be_the_types_given():
    with pytest.raises(ValueError, match="differ"):
        PreparedStatement("yardstick_test_mismatch", SQL, {"day": "timestamptz", "count": "integer"})


def test_placeholders_become_numbered_parameters_in_the_order_of_the_types():
    statement = PreparedStatement("yardstick_test_text", SQL, TYPES)
    assert statement.prepare_sql.startswith("PREPARE yardstick_test_text(timestamptz, integer, text) AS")
    assert "$1::timestamptz + make_interval(days => $2)" in statement.prepare_sql
    assert "$3 || '!'" in statement.prepare_sql
    assert statement.execute_sql == "EXECUTE yardstick_test_text(%(day)s, %(count)s, %(word)s)"


def _prepared_runs(name: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE name = %s", [name]
        )
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.mark.integration
@pytest.mark.django_db
def test_answers_as_the_text_does_once_prepared_and_after_a_rollback(postgres_required):
    statement = PreparedStatement("yardstick_test_answers", SQL, TYPES)
    day = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    cases = [{"day": day, "count": 3, "word": "left"}, {"day": day, "count": None, "word": "it's"}]
    for parameters in cases:
        with connection.cursor() as cursor:
            cursor.execute(SQL, parameters)
            expected = cursor.fetchone()
            statement.execute(cursor, parameters)
            assert cursor.fetchone() == expected
    assert expected == (None, True, "it's!")  # a NULL integer needs no cast: its type is declared
    assert _prepared_runs("yardstick_test_answers") == 2  # prepared once, run twice

    with pytest.raises(RuntimeError), transaction.atomic():
        with connection.cursor() as cursor:
            statement.execute(cursor, cases[0])
        raise RuntimeError("roll back")
    with connection.cursor() as cursor:  # a rollback does not undo PREPARE: still there, not prepared again
        statement.execute(cursor, cases[0])
        assert cursor.fetchone()[2] == "left!"
    assert _prepared_runs("yardstick_test_answers") == 4


@pytest.mark.integration
@pytest.mark.django_db
def test_a_new_connection_prepares_it_again(postgres_required):
    statement = PreparedStatement("yardstick_test_connections", SQL, TYPES)
    parameters = {"day": datetime(2026, 1, 1, tzinfo=UTC), "count": 1, "word": "right"}
    with connection.cursor() as cursor:
        statement.execute(cursor, parameters)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            statement.execute(cursor, parameters)
            assert cursor.fetchone() == (datetime(2026, 1, 2, tzinfo=UTC), False, "right!")
    finally:
        other.close()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_statements_sent_together_see_each_other_and_commit_together_or_not_at_all(postgres_required):
    from common.prepared import execute_together

    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE together_probe (n integer PRIMARY KEY)")
    insert = PreparedStatement(
        "yardstick_test_together_insert",
        "INSERT INTO together_probe VALUES (%(n)s) RETURNING n",
        {"n": "integer"},
    )
    again = PreparedStatement(
        "yardstick_test_together_again",
        "INSERT INTO together_probe VALUES (%(m)s) RETURNING n",
        {"m": "integer"},
    )
    seen = PreparedStatement(
        "yardstick_test_together_seen",
        "SELECT count(*) FROM together_probe WHERE n <= %(n)s",
        {"n": "integer"},
    )
    with connection.cursor() as cursor:
        assert execute_together(cursor, (insert, seen), {"n": 1}) == [(1,), (1,)]  # the second saw the first
        # The second fails (1 is there already): the first's row goes with it, in autocommit too.
        with pytest.raises(IntegrityError):
            execute_together(cursor, (insert, again), {"n": 2, "m": 1})
        cursor.execute("SELECT n FROM together_probe ORDER BY n")
        assert cursor.fetchall() == [(1,)]
        assert execute_together(cursor, (insert, again), {"n": 2, "m": 3}) == [(2,), (3,)]
        cursor.execute("SELECT n FROM together_probe ORDER BY n")
        assert cursor.fetchall() == [(1,), (2,), (3,)]
        cursor.execute("DROP TABLE together_probe")


def test_an_integer_array_is_its_postgresql_text():
    from common.prepared import integer_array

    assert integer_array([3]) == "{3}"
    assert integer_array({5: 1, -2: 7}) == "{5,-2}"  # a mapping gives its keys, in order
    assert integer_array({5: 1, -2: 7}.values()) == "{1,7}"
    assert integer_array([]) == "{}"


@pytest.mark.parametrize("value", ["1", "1}, {2", 1.0, None, b"1"])
def test_an_integer_array_takes_nothing_but_integers(value):
    from common.prepared import integer_array

    with pytest.raises(TypeError):
        integer_array([1, value])


# Prepared once per connection: one object for every example (a second PREPARE of the name would fail).
ECHO_ARRAY = PreparedStatement(
    "yardstick_test_integer_array", "SELECT %(ids)s, cardinality(%(ids)s)", {"ids": "bigint[]"}
)


@pytest.mark.integration
@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=12))
def test_a_bigint_parameter_reads_an_integer_array_as_the_list_it_came_from(postgres_required, values):
    """What the vote's statement receives for the cookie's studies and annotators: the same integers, in
    the same order, at bigint's bounds too; and the same as psycopg's own binding of the list."""
    from common.prepared import integer_array

    with connection.cursor() as cursor:
        ECHO_ARRAY.execute(cursor, {"ids": integer_array(values)})
        assert cursor.fetchone() == (values, len(values))
        if values:  # psycopg cannot type an empty list without a cast
            ECHO_ARRAY.execute(cursor, {"ids": values})
            assert cursor.fetchone() == (values, len(values))
