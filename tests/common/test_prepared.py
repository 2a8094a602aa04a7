"""common.prepared.PreparedStatement: planned once per PostgreSQL connection, run by name, with the
answers of the same statement sent as text."""

from datetime import UTC, datetime, timedelta, timezone

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


def test_the_values_are_written_in_as_constants_of_the_declared_types():
    statement = PreparedStatement("yardstick_test_text", SQL, TYPES)
    day = datetime(2026, 11, 23, 12, 0, 5, 120, tzinfo=UTC)
    assert statement.execute_sql({"word": "it's", "count": -3, "day": day}) == (
        "EXECUTE yardstick_test_text('2026-11-23T12:00:05.000120+00:00', -3, 'it''s')"
    )
    assert statement.execute_sql({"word": None, "count": None, "day": None}) == (
        "EXECUTE yardstick_test_text(NULL, NULL, NULL)"
    )
    every = PreparedStatement(
        "yardstick_test_every",
        "SELECT %(ids)s, %(flag)s, %(version)s",
        {"ids": "bigint[]", "flag": "boolean", "version": "uuid"},
    )
    version = "F99FB53A-DC3A-4111-9EAA-F12E081AB536"
    assert every.execute_sql({"ids": {5: 1, -2: 7}.keys(), "flag": False, "version": version}) == (
        "EXECUTE yardstick_test_every('{5,-2}', false, 'f99fb53a-dc3a-4111-9eaa-f12e081ab536')"
    )


def test_a_type_without_a_constant_here_is_refused_when_the_statement_is_made():
    with pytest.raises(ValueError, match="numeric"):
        PreparedStatement("yardstick_test_numeric", "SELECT %(x)s", {"x": "numeric"})


EVERY = {
    "n": "bigint",
    "ids": "bigint[]",
    "at": "timestamptz",
    "flag": "boolean",
    "version": "uuid",
    "word": "text",
}
GOOD = {
    "n": 1,
    "ids": [1],
    "at": datetime(2026, 1, 1, tzinfo=UTC),
    "flag": True,
    "version": None,
    "word": "x",
}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n", "1"),
        ("n", "1; DROP TABLE collection_vote"),
        ("n", 1.5),
        ("n", True),
        ("n", b"1"),
        ("ids", "{1}"),
        ("ids", "1}', '{2"),
        ("ids", [1, None]),
        ("ids", [1, "2"]),
        ("ids", [1, False]),
        ("at", "2026-01-01"),
        ("at", datetime(2026, 1, 1)),  # naive: which zone is unknown
        ("flag", 1),
        ("flag", "true"),
        ("version", 12),
        ("word", b"x"),
        ("word", 3),
    ],
)
def test_a_value_not_of_its_declared_type_is_refused_before_anything_is_sent(name, value):
    statement = PreparedStatement(
        "yardstick_test_refused", "SELECT " + ", ".join(f"%({n})s" for n in EVERY), EVERY
    )
    statement.execute_sql(GOOD)
    with pytest.raises(TypeError):
        statement.execute_sql({**GOOD, name: value})


@pytest.mark.parametrize(("name", "value"), [("version", "1'); DROP TABLE x; --"), ("word", "a\x00b")])
def test_a_text_that_cannot_be_the_value_is_refused(name, value):
    statement = PreparedStatement(
        "yardstick_test_refused", "SELECT " + ", ".join(f"%({n})s" for n in EVERY), EVERY
    )
    with pytest.raises(ValueError):
        statement.execute_sql({**GOOD, name: value})


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
    with connection.cursor() as cursor:
        ECHO_ARRAY.execute(cursor, {"ids": values})
        assert cursor.fetchone() == (values, len(values))
        cursor.execute("SELECT %(ids)s::bigint[], cardinality(%(ids)s::bigint[])", {"ids": values})
        assert cursor.fetchone() == (values, len(values))


ECHO_EVERY = PreparedStatement(
    "yardstick_test_echo_every",
    "SELECT %(n)s, %(ids)s, %(at)s, %(flag)s, %(version)s, %(word)s",
    EVERY,
)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@pytest.mark.integration
@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1),
    ids=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=6),
    at=st.none()
    | st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        # Any offset to the second (zoneinfo's early local mean times have seconds), no tz database needed.
        timezones=st.just(UTC)
        | st.integers(-15 * 3600, 15 * 3600).map(lambda seconds: timezone(timedelta(seconds=seconds))),
    ),
    flag=st.none() | st.booleans(),
    version=st.none() | st.uuids(),
    word=st.none() | _TEXT | st.sampled_from(["it's", "\\", "\\'", "''", "$$", "%s", "%(n)s", "E'\\n'"]),
)
def test_the_statement_receives_each_value_as_it_was_given(
    postgres_required, n, ids, at, flag, version, word
):
    """Every type written in as a constant reaches PostgreSQL as the value it was: integers at bigint's
    bounds, arrays, times in any zone, quotes and backslashes in text; and as psycopg's own binding
    of the same values gives it."""
    parameters = {"n": n, "ids": ids, "at": at, "flag": flag, "version": version, "word": word}
    with transaction.atomic(), connection.cursor() as cursor:  # an example's error ends only its savepoint
        ECHO_EVERY.execute(cursor, parameters)
        received = cursor.fetchone()
        assert received == (n, ids, at, flag, version, word)
        # CAST, not ::, which binds tighter than the minus psycopg writes before -2**63's digits
        types = ", ".join(f"CAST(%({name})s AS {kind})" for name, kind in EVERY.items())
        cursor.execute(f"SELECT {types}", parameters)
        assert cursor.fetchone() == received


@pytest.mark.integration
@pytest.mark.django_db
def test_a_server_without_standard_conforming_strings_is_refused(postgres_required):
    """With standard_conforming_strings off a backslash in a text constant escapes: refused, not sent."""
    statement = PreparedStatement("yardstick_test_conforming", "SELECT %(word)s", {"word": "text"})
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SET standard_conforming_strings = off")
            with pytest.raises(RuntimeError, match="standard_conforming_strings"):
                statement.execute(cursor, {"word": "\\'; SELECT 1; --"})
    finally:
        other.close()


@pytest.mark.integration
@pytest.mark.django_db
def test_bigint_bounds_reach_the_statement(postgres_required):
    """-2**63 written as digits after a minus is still a bigint to PostgreSQL (psycopg's own binding of it
    followed by ``::bigint`` is out of range: the cast binds first)."""
    with connection.cursor() as cursor:
        for n in (-(2**63), 2**63 - 1):
            ECHO_EVERY.execute(cursor, {**GOOD, "n": n})
            assert cursor.fetchone()[0] == n
