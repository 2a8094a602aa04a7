"""Server-side prepared statements on PostgreSQL, for the few large statements run on every vote.

PostgreSQL plans a statement each time it receives its text. For the lease's ``WITH`` statement
(``collection.voting``) planning takes about 1 ms of the database's CPU, as long as running it
(BENCHMARKS.md, issue 9). A prepared statement is planned once per connection and run by name.

Django turns psycopg's own automatic preparation off (``prepare_threshold=None``) and binds
parameters on the client, so a ``PreparedStatement`` prepares itself in SQL: ``PREPARE name(types)
AS …`` the first time a connection runs it, then ``EXECUTE name(values)``. A prepared statement lives
as long as its session and is not undone by a rollback; a new connection (a restart of the server, the
pool's replacement of a broken one) is a new key here and prepares again. Behind a pooler in
transaction mode (PgBouncer) sessions are shared between clients and this would not hold: Yardstick
connects to PostgreSQL directly or through psycopg's pool (README, Deployment).
"""

from __future__ import annotations

import operator
import re
import threading
import weakref

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


class PreparedStatement:
    """One statement with named parameters (``%(name)s``), prepared once per database connection.

    ``types`` gives each parameter's PostgreSQL type, in the order of the prepared statement's
    parameters: with the types declared, a NULL needs no cast at the call.
    """

    def __init__(self, name: str, sql: str, types: dict[str, str]):
        used = set(_PLACEHOLDER.findall(sql))
        if used != set(types):
            raise ValueError(f"{name}: the parameters {sorted(used)} and the types {sorted(types)} differ")
        number = {parameter: index for index, parameter in enumerate(types, start=1)}
        body = _PLACEHOLDER.sub(lambda match: f"${number[match.group(1)]}", sql)
        self.name = name
        self.sql = sql
        self.types = dict(types)
        self.prepare_sql = f"PREPARE {name}({', '.join(types.values())}) AS {body}"
        self.execute_sql = f"EXECUTE {name}({', '.join(f'%({parameter})s' for parameter in types)})"
        self._prepared_on: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def execute(self, cursor, parameters: dict) -> None:
        """Runs the statement with ``parameters`` on a Django cursor of a PostgreSQL connection."""
        self.prepare_on(cursor)
        cursor.execute(self.execute_sql, parameters)

    def prepare_on(self, cursor) -> None:
        """Prepares the statement on the cursor's connection, unless it is prepared there already."""
        raw = cursor.cursor.connection  # the psycopg connection under Django's wrapper
        if raw not in self._prepared_on:
            # On the raw connection, as Django sets a connection up (its time zone, its role): part
            # of the connection, not of the request, so not among the request's counted statements.
            raw.execute(self.prepare_sql)
            with self._lock:
                self._prepared_on.add(raw)


def integer_array(values) -> str:
    """The text of a PostgreSQL array of integers (``{3,17}``), to pass where a prepared statement
    declares an integer array (``bigint[]``): PostgreSQL reads a parameter of declared type from its
    text, so the statement receives the same array.

    A Python list would reach psycopg's client-side binding, which dumps it through its Python array
    dumpers (the elements' type found, a dumper built for the list, each element quoted): about 79,000
    instructions per judgement for the vote's two one-element arrays, 2.7% of the web process's work for
    a judgement (BENCHMARKS.md, 2026-11-25). The text of integers needs no quoting; each value must be an
    integer (``operator.index``), so nothing else can reach the statement's text this way.
    """
    return "{" + ",".join([str(operator.index(value)) for value in values]) + "}"


def execute_together(
    cursor, statements: tuple[PreparedStatement, ...], parameters: dict
) -> list[tuple | None]:
    """Runs ``statements`` in one round trip, each with its parameters taken from ``parameters``;
    returns the first row of each (None for a statement that returned none).

    They go as one query of the simple protocol, which PostgreSQL runs as one transaction when no
    transaction is open (in a caller's transaction, as part of it): all of them commit together or
    none does, an error in one undoes the others, and each statement sees what the ones before it
    wrote. Django binds the parameters on the client, so the shared names take one value.
    """
    for statement in statements:
        statement.prepare_on(cursor)
    cursor.execute(";\n".join(statement.execute_sql for statement in statements), parameters)
    rows = [cursor.fetchone()]
    for _ in statements[1:]:
        if not cursor.nextset():
            raise RuntimeError("a statement of execute_together returned no result")
        rows.append(cursor.fetchone())
    return rows
