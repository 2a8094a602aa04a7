"""The default database's vendor, and its connection, looked up once where a request's path needs them.

``django.db.connection`` is a proxy: every attribute read on it looks the thread's connection up in
``django.db.connections``, an asgiref ``Local``. A judgement's path read it a dozen times, at about 17,000
instructions a read in the web process (``benchmarks/count_vote_instructions.py``, BENCHMARKS.md,
2026-11-25). ``default_vendor`` reads the vendor from the settings, which name the same backend for
every thread; a function that uses the connection several times looks it up once
(``connections[DEFAULT_DB_ALIAS]``) and keeps it for the call.
"""

from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.utils import load_backend


def default_vendor() -> str:
    """``connection.vendor`` ("postgresql", "sqlite"...) of the default database, without the lookup."""
    return _vendor_of(connections.settings[DEFAULT_DB_ALIAS]["ENGINE"])


@cache
def _vendor_of(engine: str) -> str:
    return load_backend(engine).DatabaseWrapper.vendor
