"""The migrations' step for SQL that only PostgreSQL runs (``on_postgresql_only``)."""

from __future__ import annotations


def on_postgresql_only(statements: list[str], reverse: str):
    """A migration's step that runs ``statements`` in turn on PostgreSQL (``reverse`` when the migration
    is unapplied) and nothing on another database: the judgement's PL/pgSQL functions of migrations
    0024 to 0027, which migrations 0030 and 0031 drop."""
    from django.db import migrations

    def forward(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    def backward(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(reverse)

    return migrations.RunPython(forward, backward)
