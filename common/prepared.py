"""Server-side prepared statements on PostgreSQL, for the few large statements run on every vote.

PostgreSQL plans a statement each time it receives its text. For the lease's ``WITH`` statement
(``collection.voting``) planning takes about 1 ms of the database's CPU, as long as running it.
A prepared statement is planned once per connection and run by name.

Django turns psycopg's own automatic preparation off (``prepare_threshold=None``) and binds
parameters on the client, so a ``PreparedStatement`` prepares itself in SQL: ``PREPARE name(types)
AS …`` the first time a connection runs it, then ``EXECUTE name(values)``. The values are written into
the ``EXECUTE`` here, as the constants of their declared types (``_LITERALS``), not by psycopg's
client-side binding: its dumpers, looked up per value, cost about 3% of a judgement's work in the web
process. A prepared statement lives
as long as its session and is not undone by a rollback; a new connection (a restart of the server, the
pool's replacement of a broken one) is a new key here and prepares again. Behind a pooler in
transaction mode (PgBouncer) sessions are shared between clients and this would not hold: Yardstick
connects to PostgreSQL directly or through psycopg's pool (docs/operators.md, Deployment).
"""

from __future__ import annotations

import operator
import re
import threading
import uuid
import weakref
from datetime import datetime

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
        unknown = sorted({kind for kind in types.values() if kind not in _LITERALS})
        if unknown:
            raise ValueError(f"{name}: no constant is written here for the types {unknown}")
        self.name = name
        self.sql = sql
        self.types = dict(types)
        self.prepare_sql = f"PREPARE {name}({', '.join(types.values())}) AS {body}"
        self._literals = [(parameter, _LITERALS[kind]) for parameter, kind in types.items()]
        self._prepared_on: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def execute_sql(self, parameters: dict) -> str:
        """``EXECUTE name(…)`` with ``parameters`` written in, each as a constant of its declared type.

        A value that is not of its parameter's type raises TypeError (ValueError: a text that
        PostgreSQL cannot hold), before anything is sent."""
        return f"EXECUTE {self.name}({', '.join([literal(parameters[name]) for name, literal in self._literals])})"

    def execute(self, cursor, parameters: dict) -> None:
        """Runs the statement with ``parameters`` on a Django cursor of a PostgreSQL connection."""
        self.prepare_on(cursor)
        cursor.execute(self.execute_sql(parameters))

    def prepare_on(self, cursor) -> None:
        """Prepares the statement on the cursor's connection, unless it is prepared there already."""
        raw = cursor.cursor.connection  # the psycopg connection under Django's wrapper
        if raw not in self._prepared_on:
            # The text constants (``_text``) are written for standard_conforming_strings, PostgreSQL's
            # default since 9.1, where a backslash is an ordinary character: refused on a server without.
            if raw.info.parameter_status("standard_conforming_strings") != "on":
                raise RuntimeError(f"{self.name}: the server's standard_conforming_strings is not on")
            # On the raw connection, as Django sets a connection up (its time zone, its role): part
            # of the connection, not of the request, so not among the request's counted statements.
            raw.execute(self.prepare_sql)
            with self._lock:
                self._prepared_on.add(raw)


# --- the constants of the declared types -------------------------------------------------------
# Each writes one value as a constant PostgreSQL reads as the parameter's declared type, or raises
# TypeError for a value of another type; None is NULL for every type. The constants of numbers,
# booleans, times and uuids are built from the value's own digits and punctuation, never from text a
# client sent; a text is quoted, each quote doubled (standard_conforming_strings: ``prepare_on``).


def _integer(value) -> str:
    if type(value) is int:  # the common case, checked first
        return str(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):  # an int to Python, not to PostgreSQL
        raise TypeError(f"an integer parameter got a boolean: {value!r}")
    return str(operator.index(value))


def _integer_array(values) -> str:
    if values is None:
        return "NULL"
    if isinstance(values, str | bytes):
        raise TypeError(f"an integer array parameter got {type(values).__name__}: give the integers")
    return f"'{integer_array(values)}'"


def _timestamptz(value) -> str:
    if value is None:
        return "NULL"
    if not isinstance(value, datetime):
        raise TypeError(f"a timestamptz parameter got {type(value).__name__}")
    if value.utcoffset() is None:
        raise TypeError(f"a timestamptz parameter got a naive datetime: {value!r}")
    return f"'{value.isoformat()}'"


def _boolean(value) -> str:
    if value is None:
        return "NULL"
    if value is True or value is False:
        return "true" if value else "false"
    raise TypeError(f"a boolean parameter got {type(value).__name__}")


def _uuid(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        value = uuid.UUID(value)  # ValueError unless it is a uuid's text
    if not isinstance(value, uuid.UUID):
        raise TypeError(f"a uuid parameter got {type(value).__name__}")
    return f"'{value}'"


def _text(value) -> str:
    if value is None:
        return "NULL"
    if not isinstance(value, str):
        raise TypeError(f"a text parameter got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("PostgreSQL's text cannot hold the character NUL")
    return "'" + value.replace("'", "''") + "'"


_LITERALS = {
    "bigint": _integer,
    "integer": _integer,
    "bigint[]": _integer_array,
    "integer[]": _integer_array,
    "timestamptz": _timestamptz,
    "boolean": _boolean,
    "uuid": _uuid,
    "text": _text,
}


def integer_array(values) -> str:
    """The text of a PostgreSQL array of integers (``{3,17}``): how a parameter declared as an integer
    array (``bigint[]``) is written into a statement; PostgreSQL reads a constant of declared type from
    its text, so the statement receives the same array.

    psycopg's client-side binding would dump a Python list through its Python array dumpers (the
    elements' type found, a dumper built for the list, each element quoted): about 79,000 instructions
    per judgement for the vote's two one-element arrays, 2.7% of the web process's work for a judgement.
    The text of integers needs no quoting; each value must be an integer
    (``operator.index``, not a boolean), so nothing else can reach the statement's text this way.
    """
    return "{" + ",".join([_element(value) for value in values]) + "}"


def _element(value) -> str:
    if value is None:  # {NULL} would be an array with a null in it
        raise TypeError("an integer array got None among its integers")
    return _integer(value)


def execute_together(
    cursor, statements: tuple[PreparedStatement, ...], parameters: dict
) -> list[tuple | None]:
    """Runs ``statements`` in one round trip, each with its parameters taken from ``parameters``;
    returns the first row of each (None for a statement that returned none).

    They go as one query of the simple protocol, which PostgreSQL runs as one transaction when no
    transaction is open (in a caller's transaction, as part of it): all of them commit together or
    none does, an error in one undoes the others, and each statement sees what the ones before it
    wrote. A name that several of them use takes one value.
    """
    for statement in statements:
        statement.prepare_on(cursor)
    cursor.execute(";\n".join([statement.execute_sql(parameters) for statement in statements]))
    rows = [cursor.fetchone()]
    for _ in statements[1:]:
        if not cursor.nextset():
            raise RuntimeError("a statement of execute_together returned no result")
        rows.append(cursor.fetchone())
    return rows
