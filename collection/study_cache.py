"""A study's row kept in each web process, keyed by its ``settings_version``.

A vote needs the study's settings (the lease's length, the cap, ties, the question, the number of
ballots) on every request, and they change only when the study is saved: ``Study.save`` gives the row
a new ``settings_version`` each time. The vote's own query reads that one column with the assignment
(``collection.api``), and ``study_at_version`` returns the process's copy when it is of that version,
else reads the row once and keeps it. A copy is never returned older than the version the caller read
in its own transaction, so a change is seen by the next request that reads the new version, in every
process. Each call returns a fresh instance built from the kept values (``Model.from_db``, no query),
so a caller that changes its instance changes nobody else's.

The copies are bounded (``MAX_STUDIES``, least recently used first out) and guarded by a lock for
gunicorn's threads.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict

from django.db import DEFAULT_DB_ALIAS, connection

from collection.models import Study

MAX_STUDIES = 256

_lock = threading.Lock()
_rows: OrderedDict[int, tuple[uuid.UUID, dict]] = OrderedDict()  # {id: (version, {attname: value})}
_FIELDS = [field.attname for field in Study._meta.concrete_fields]


def _instance(values: dict) -> Study:
    return Study.from_db(DEFAULT_DB_ALIAS, _FIELDS, [values[name] for name in _FIELDS])


def study_at_version(study_id: int, version: uuid.UUID | str) -> Study | None:
    """The study ``study_id`` as of ``version`` or later, from this process's copy when it is current;
    None if the study no longer exists."""
    if not isinstance(version, uuid.UUID):
        version = uuid.UUID(str(version))
    with _lock:
        kept = _rows.get(study_id)
        if kept is not None and kept[0] == version:
            _rows.move_to_end(study_id)
            values = kept[1]
        else:
            values = None
    if values is not None:
        return _instance(values)
    row = Study.objects.filter(pk=study_id).values_list(*_FIELDS).first()
    if row is None:
        return None
    study = Study.from_db(connection.alias, _FIELDS, row)
    with _lock:
        _rows[study_id] = (study.settings_version, dict(zip(_FIELDS, row, strict=True)))
        _rows.move_to_end(study_id)
        while len(_rows) > MAX_STUDIES:
            _rows.popitem(last=False)
    return study


def latest_study(study_id: int) -> Study | None:
    """The study ``study_id`` as this process last read it, of whatever version, without a query; None
    if this process has not read it (or has dropped it since).

    For a caller that needs a study's settings before the statement that reads its version, and then
    checks that version.
    """
    with _lock:
        kept = _rows.get(study_id)
        if kept is None:
            return None
        _rows.move_to_end(study_id)
    return _instance(kept[1])


def forget_all() -> None:
    """Drop every copy (tests that rebuild the database under a running process)."""
    with _lock:
        _rows.clear()
