"""In-process CPU of a judgement's request against a ``/healthz/`` request, and where it goes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<empty db> python benchmarks/profile_vote_request.py
    python benchmarks/profile_vote_request.py --judgements 400 --profile 25   # top 25 functions

Issue 9's goal is that a judgement (the vote, whose answer carries the next comparison) costs at most
three ``/healthz/`` requests of the same server. The load benchmark (``bench_load.py``) measures it
end to end; this script says why, without a network or a load generator in the way: Django's test
client sends, in one process, ``--judgements`` votes of annotators who joined through the study link
(each vote carries the next comparison, as ``vote.js`` uses it), and as many ``/healthz/`` requests.
It prints the CPU seconds per request of each (``time.process_time``, so other jobs on the machine
do not count), in ``--rounds`` alternated rounds of votes and ``/healthz/`` requests, whose medians it
reports (another job on the machine still slows this one's CPU: shared caches, the host's scheduling;
a round it hits moves that round, not the median), their ratio, and, with ``--profile N``, the N functions with the most cumulative time
under cProfile for the votes.

The settings are production's where they matter to CPU: ``DEBUG`` off (no query log), the
middleware stack, the annotator cookie, the CSRF check with the token in the header (Django's test
client skips the check unless told; until 2026-11-25 this script let it), the throttles (raised, so
that they count but never refuse).
The database is the embedded SQLite in a temporary folder unless ``DATABASE_URL`` names another
(which must be empty: the script migrates it and builds the demo-sized study).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ANNOTATORS = 20


def prepare(limits_off: bool = False):
    """Sets Django up as production runs it, builds the demo-sized study with ``ANNOTATORS`` joined
    annotators, warms the process, and returns ``(votes, healthz, connection)``: ``votes(n)`` sends n
    judgements (each vote's answer carrying the next comparison), ``healthz(n)`` n ``/healthz/``."""
    run_dir = tempfile.mkdtemp(prefix="bench-request-")
    os.environ.setdefault("YARDSTICK_DATA_DIR", run_dir)
    os.environ["STATIC_ROOT"] = str(Path(run_dir) / "static")  # production's manifest, built below
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "benchmark-" + "x" * 50)
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"
    for scope in ("NEXT_PARTICIPANT", "NEXT_ADDRESS", "VOTE_PARTICIPANT", "VOTE_ADDRESS", "JOIN_ADDRESS"):
        os.environ[f"THROTTLE_{scope}"] = "off" if limits_off else "1000000/s"

    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from collection.models import Study

    call_command("collectstatic", interactive=False, verbosity=0)
    call_command("migrate", verbosity=0)
    call_command("load_demo", slug="bench", stdout=open(os.devnull, "w"))  # noqa: SIM115
    study = Study.objects.get(slug="bench")
    Study.objects.filter(pk=study.pk).update(votes_per_annotator_per_ballot=None)

    clients, current = [], []
    for number in range(ANNOTATORS):
        # As a browser: the CSRF check on (Django's test client turns it off by default), and the
        # token in the header, as vote.js sends it.
        client = Client(enforce_csrf_checks=True, REMOTE_ADDR=f"10.0.{number // 250}.{number % 250 + 1}")
        client.get(f"/s/{study.slug}/?participant=bench-{number}")
        client.post(
            f"/s/{study.slug}/",
            {
                "consent": "yes",
                "participant": f"bench-{number}",
                "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
            },
        )
        answer = client.get(f"/api/studies/{study.slug}/next/")
        assert answer.status_code == 200, answer.content
        clients.append(client)
        current.append(answer.json())

    def votes(count: int) -> None:
        for number in range(count):
            who = number % ANNOTATORS
            body = {"assignment": current[who]["assignment"], "choice": ("left", "right")[number % 3 == 0]}
            response = clients[who].post(
                "/api/votes/",
                body,
                content_type="application/json",
                headers={"X-CSRFToken": clients[who].cookies["csrftoken"].value},
            )
            assert response.status_code == 201, response.content
            following = response.json().get("next")
            if following is None:
                following = clients[who].get(f"/api/studies/{study.slug}/next/").json()
            current[who] = following

    health = Client()

    def healthz(count: int) -> None:
        for _ in range(count):
            assert health.get("/healthz/").status_code == 200

    votes(ANNOTATORS * 2)  # warm: imports, connections, caches
    healthz(50)

    return votes, healthz, connection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds of votes and /healthz/")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (CPU)")
    parser.add_argument("--sort", default="cumulative", help="cProfile's order: cumulative or tottime")
    parser.add_argument("--dump", default=None, help="also write the profile's stats to this file")
    parser.add_argument(
        "--limits-off", action="store_true", help="turn the rate limits off, to see what they cost"
    )
    args = parser.parse_args()

    votes, healthz, connection = prepare(args.limits_off)
    from benchmarks._timing import machine

    backend = database_backend_pid(connection)

    def cpu(call, count: int) -> tuple[float, float | None]:
        started, database_started = time.process_time(), process_cpu_seconds(backend)
        call(count)
        database = process_cpu_seconds(backend)
        database = None if database is None else (database - database_started) / count
        return (time.process_time() - started) / count, database

    # Alternated rounds: each round's judgements, then as many /healthz/ requests; the figures are the
    # medians over rounds, so that a burst of another job on the machine moves one round, not the result.
    per_round = max(1, args.judgements // args.rounds)
    rounds = []
    for _ in range(args.rounds):
        vote_cpu, vote_database = cpu(votes, per_round)
        health_cpu, _ = cpu(healthz, per_round)
        rounds.append((vote_cpu, vote_database, health_cpu, vote_cpu / health_cpu))
    vote_cpu, health_cpu, ratio = (statistics.median(r[i] for r in rounds) for i in (0, 2, 3))
    databases = [r[1] for r in rounds if r[1] is not None]
    print(f"machine: {machine()}")
    print(
        f"database: {connection.vendor}; {per_round * args.rounds} judgements by {ANNOTATORS} annotators, "
        f"in {args.rounds} rounds alternated with as many /healthz/ requests (medians of the rounds)"
    )
    print(f"CPU per judgement (vote with the next comparison): {vote_cpu * 1000:.3f} ms")
    if databases:
        print(
            f"CPU of the database's server process per judgement: {statistics.median(databases) * 1000:.3f} ms"
        )
    print(f"CPU per /healthz/: {health_cpu * 1000:.3f} ms")
    low, high = min(r[3] for r in rounds), max(r[3] for r in rounds)
    print(f"a judgement costs {ratio:.2f} /healthz/ requests of CPU in process ({low:.2f} to {high:.2f})")

    if args.profile:
        profiler = cProfile.Profile(time.process_time)  # CPU, not waiting on the database
        profiler.runcall(votes, args.judgements)
        if args.dump:
            profiler.dump_stats(args.dump)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.profile)
        print(out.getvalue())


def database_backend_pid(connection) -> int | None:
    """The PostgreSQL server process of this connection (it runs on this machine), or None."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def process_cpu_seconds(pid: int | None) -> float | None:
    """User and system CPU of a process of this machine, from /proc (Linux), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
