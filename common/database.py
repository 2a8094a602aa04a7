"""The default database's vendor, and its connection, looked up once where a request's path needs them;
and times read from PostgreSQL as integers, where a request's path reads them.

``django.db.connection`` is a proxy: every attribute read on it looks the thread's connection up in
``django.db.connections``, an asgiref ``Local``. A judgement's path read it a dozen times, at about 17,000
instructions a read in the web process (``benchmarks/count_vote_instructions.py``). ``default_vendor`` reads the vendor from the settings, which name the same backend for
every thread; a function that uses the connection several times looks it up once
(``connections[DEFAULT_DB_ALIAS]``) and keeps it for the call. Also the migrations' step for SQL that
only PostgreSQL runs (``on_postgresql_only``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import load_backend


def default_vendor() -> str:
    """``connection.vendor`` ("postgresql", "sqlite"...) of the default database, without the lookup."""
    return _vendor_of(connections.settings[DEFAULT_DB_ALIAS]["ENGINE"])


@cache
def _vendor_of(engine: str) -> str:
    return load_backend(engine).DatabaseWrapper.vendor


# --- times read as integers ------------------------------------------------------------------------
# Django's PostgreSQL backend loads every timestamptz through a subclass of psycopg's pure-Python loader
# (``BaseTzLoader``, which sets the connection's time zone on the value), not through psycopg's compiled
# one: about 33,000 instructions per value in the web process, 4% of a judgement's work for its three
# times (``benchmarks/count_vote_instructions.py``). An integer loads
# in compiled code. So the judgement's statements read their times as whole microseconds since the Unix
# epoch (``epoch_microseconds_sql``), and ``aware_time`` makes the datetime again.

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_microseconds_sql(expression: str) -> str:
    """SQL that reads the timestamptz ``expression`` as a bigint: whole microseconds since 1970-01-01
    00:00 UTC, negative before it, NULL for NULL. Exact: ``EXTRACT`` answers a numeric, not a double,
    since PostgreSQL 14 (Django 5.2's oldest), and a timestamptz holds whole microseconds."""
    return f"(EXTRACT(EPOCH FROM {expression}) * 1000000)::bigint"


def aware_time(microseconds: int | None) -> datetime | None:
    """The aware datetime (UTC) of a bigint read by ``epoch_microseconds_sql``: the value Django's
    loader gives for the same timestamptz, its ``tzinfo`` the same ``datetime.UTC``. None for NULL."""
    if microseconds is None:
        return None
    return _UNIX_EPOCH + timedelta(microseconds=microseconds)


def on_postgresql_only(statements: list[str], reverse: str):
    """A migration's step that runs ``statements`` in turn on PostgreSQL (``reverse`` when the migration
    is unapplied) and nothing on another database: the judgement's PL/pgSQL functions, which the
    embedded default's SQLite does without (``collection.voting`` takes its steps there)."""
    from django.db import migrations

    def forward(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    def backward(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(reverse)

    return migrations.RunPython(forward, backward)
