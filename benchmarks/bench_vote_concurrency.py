"""The database's CPU per judgement as more judgements run at once (PostgreSQL).

    createdb -h 127.0.0.1 -U postgres bench_concurrency
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_concurrency python benchmarks/bench_vote_concurrency.py
    ... python benchmarks/bench_vote_concurrency.py --threads 1 4 --judgements 6000
    ... python benchmarks/bench_vote_concurrency.py --threads 1 --judgements 4000 --held 2000   # a crowd's leases

The database must be empty: the script migrates it and builds the demo-sized study (990 items, a first
ballot of 9,900 comparisons, no cap). For each number of threads, each thread has its own connection and
two annotators, and runs judgements as the API does (``vote_record_and_next``: the vote and the next
lease, on PostgreSQL in one round trip and one transaction) until ``--judgements`` in all are done. It
prints the judgements per second and the CPU of the PostgreSQL server processes per judgement (each
thread reads its own backend's CPU from ``/proc``, before and after), and the ratio of that CPU to the
one-thread run's: the baseline. gunicorn as deployed runs 2 × 4 threads. Each thread count runs on a
fresh ballot.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._lease import django_on_empty_postgres  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8, 25])
    parser.add_argument("--judgements", type=int, default=2000, help="judgements per thread count, in all")
    parser.add_argument(
        "--held",
        type=int,
        default=0,
        help="annotators who each hold a lease of the ballot while the judgements run (a crowd thinking)",
    )
    args = parser.parse_args()
    django_on_empty_postgres(eager_tasks=True)

    from django.core.management import call_command
    from django.db import connection, connections

    from benchmarks._timing import machine
    from collection import voting
    from collection.models import Study

    call_command("migrate", verbosity=0)

    def backend_cpu() -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    print(f"machine: {machine()}")
    if args.held:
        print(f"{args.held} leases held by other annotators while the judgements run")
    baseline = None
    for threads in args.threads:
        slug = f"concurrency-{threads}"
        call_command("load_demo", slug=slug, stdout=open(os.devnull, "w"))  # noqa: SIM115
        study = Study.objects.get(slug=slug)
        Study.objects.filter(pk=study.pk).update(votes_per_annotator_per_ballot=None)
        study.refresh_from_db()
        for n in range(args.held):  # leases held by others, as a crowd's while its members think
            holder = voting.annotator_consent(
                annotator=voting.annotator_for(study=study, participant_id=f"h{n}")
            )
            if voting.comparison_next_for(annotator=holder).assignment is None:
                raise RuntimeError(f"--held {args.held}: the ballot has no comparison left for a holder")
        annotators = [voting.annotator_for(study=study, participant_id=f"t{n}") for n in range(2 * threads)]
        for annotator in annotators:
            voting.annotator_consent(annotator=annotator)
        each = args.judgements // threads
        results: list[float] = []
        ready = threading.Barrier(threads + 1)

        def judge(mine, each=each, ready=ready, results=results):
            held = [voting.comparison_next_for(annotator=annotator) for annotator in mine]
            ready.wait()
            started = backend_cpu()
            for number in range(each):
                who = number % 2
                choice = ("left", "right")[number % 3 == 0]
                _vote, _created, held[who] = voting.vote_record_and_next(
                    annotator=mine[who], assignment_id=held[who].assignment.pk, choice=choice
                )
                if held[who].assignment is None:
                    raise RuntimeError(f"no comparison for an annotator: {held[who].reason}")
            results.append(backend_cpu() - started)
            connections.close_all()

        workers = [
            threading.Thread(target=judge, args=(annotators[2 * k : 2 * k + 2],)) for k in range(threads)
        ]
        for worker in workers:
            worker.start()
        ready.wait()
        started = time.perf_counter()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - started
        done = each * threads
        per_judgement = sum(results) / done
        baseline = baseline or per_judgement
        print(
            f"{threads:>3} threads: {done / elapsed:7.0f} judgements/s, PostgreSQL CPU {per_judgement * 1000:.2f} ms "
            f"per judgement ({per_judgement / baseline:.2f}x the first)"
        )


if __name__ == "__main__":
    main()
