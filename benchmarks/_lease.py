"""Shared by the benchmarks of the PostgreSQL lease: Django on an empty PostgreSQL database, the
demo-sized study, and one lease statement timed and rolled back."""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta


def django_on_empty_postgres(*, eager_tasks: bool = False) -> None:
    """Settings for a benchmark on ``DATABASE_URL`` (an empty PostgreSQL database), without the query
    log; Django set up. Exits when ``DATABASE_URL`` names no PostgreSQL database."""
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("DATABASE_URL must name an empty PostgreSQL database")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"  # no query log
    os.environ.setdefault("SECRET_KEY", "benchmark-" + "x" * 50)
    if eager_tasks:
        os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

    import django

    django.setup()


def demo_study(slug: str):
    """Migrates the database and builds the demo-sized study (990 items, a first ballot of 9,900
    comparisons); returns the study and its open ballot."""
    from django.core.management import call_command

    from collection.models import Ballot, Study

    call_command("migrate", verbosity=0)
    call_command("load_demo", slug=slug, stdout=open(os.devnull, "w"))  # noqa: SIM115
    study = Study.objects.get(slug=slug)
    return study, Ballot.objects.get(study=study, status=Ballot.Status.OPEN)


def lease_seconds(study, annotator) -> tuple[float, tuple]:
    """One run of the lease statement (``collection.voting.LEASE_STATEMENT``, prepared) for
    ``annotator``, rolled back: its seconds and its row. It starts its scan of the open comparisons where
    the application's would in this process (``collection.lease_start``), and keeps the first open
    position it reads, as the application does."""
    from django.db import connection, transaction
    from django.utils import timezone

    from collection.lease_start import lease_start, lease_start_read
    from collection.voting import LEASE_ALONE, LEASE_FIRST_OPEN, LEASE_STATEMENT

    now = timezone.now()
    parameters = {
        "study": study.pk,
        "annotator": annotator.pk,
        "now": now,
        "expires": now + timedelta(seconds=study.lease_seconds),
        "cap": None,
        "commit_async": False,
        **lease_start(study.pk),
        **LEASE_ALONE,
    }
    with transaction.atomic(), connection.cursor() as cursor:
        started = time.perf_counter()
        LEASE_STATEMENT.execute(cursor, parameters)
        row = cursor.fetchone()
        elapsed = time.perf_counter() - started
        transaction.set_rollback(True)
    lease_start_read(study.pk, row[0], row[LEASE_FIRST_OPEN])
    return elapsed, row
