"""A judge's evaluation (``metrics.judges.judge_result``) on finished studies of 990 and 10,000 items.

    python benchmarks/bench_judge.py [--sizes 990,10000] [--runs 3]

Builds each study in a fresh SQLite database in a temporary folder (``DATABASE_URL`` in the environment
points it at another database instead, which must be empty): the demo study (990 items, n_b = 7,
α = 0.5, M = 20) and a study of 142 tokens (10,011 items) with the same plan, each ballot voted by
``bench_close.cast_votes`` (the lower index wins four times in five) and closed. The judge decides
every pair: the lower index wins nine times in ten, one pair in ten undecided.

Times ``judge_result`` on all items, cold (the study's cached figures deleted first: its bootstrap
replicates of ȳ and the chance level are computed and stored, as the first judge of a study meets them)
and warm (those figures read back, as every later judge meets them), and the peak of the memory that
Python and numpy allocate during one call of each (``tracemalloc``).
Baseline: ``judge_pairs`` (reading the votes and numbering the pairs), the read every evaluation starts with.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_study(slug: str, token_count: int | None, rng):
    """A finished study: the demo (``token_count`` None) or ``token_count`` tokens in one area, every
    ballot voted by ``cast_votes`` and closed."""
    from django.core.management import call_command

    from benchmarks.bench_close import cast_votes
    from collection.lifecycle import ballot_close, study_start
    from collection.models import Ballot, Study
    from collection.pools import items_generate, tokens_import

    if token_count is None:
        call_command("load_demo", slug=slug, stdout=open(os.devnull, "w"))  # noqa: SIM115
        study = Study.objects.get(slug=slug)
    else:
        study = Study.objects.create(
            name=slug,
            slug=slug,
            ballot_count=7,
            keep_fraction=0.5,
            appearances=20,
            votes_per_annotator_per_ballot=None,
        )
        rows = "token,area,rare\n" + "".join(f"t{i},Area,0\n" for i in range(token_count))
        tokens_import(study=study, data=rows.encode())
        items_generate(study=study)
        study_start(study=study)
    index_of = dict(study.items.values_list("id", "index"))
    for number in range(1, study.ballot_count + 1):
        ballot = Ballot.objects.get(study=study, number=number)
        cast_votes(study, ballot, index_of=index_of, rng=rng)
        ballot_close(ballot_id=ballot.pk)
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED, study.status
    return study


def measure(study, rng, runs: int):
    """judge_pairs (median), judge_result cold (once) and warm (median), and each one's peak memory."""
    import numpy as np

    from benchmarks._timing import median_seconds
    from metrics.judges import judge_pairs, judge_result
    from metrics.models import StudyFigure

    pairs = judge_pairs(study=study)
    lower_wins = rng.random(pairs.count) < 0.9
    decisions = np.where(lower_wins == (pairs.left < pairs.right), 1.0, 0.0)
    decisions[rng.random(pairs.count) < 0.1] = np.nan

    def evaluate_judge():
        return judge_result(study=study, decisions=decisions, weight_offset=2.0, top_k=100, part="all")

    def cold():
        StudyFigure.objects.filter(study=study).delete()
        return evaluate_judge()

    read = median_seconds(lambda: judge_pairs(study=study), runs=runs)
    started = time.perf_counter()
    result = cold()
    cold_seconds = time.perf_counter() - started
    warm_seconds = median_seconds(evaluate_judge, runs=runs)
    peaks = []
    for run in (cold, evaluate_judge):
        tracemalloc.start()
        run()
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    return read, cold_seconds, warm_seconds, peaks, pairs, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="990,10000", help="990 (the demo) and/or 10000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    data_dir = tempfile.mkdtemp(prefix="bench-judge-")
    os.environ.setdefault("YARDSTICK_DATA_DIR", data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "benchmark")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

    import logging

    import django

    django.setup()
    logging.disable(logging.INFO)

    import numpy as np
    from django.core.management import call_command

    from benchmarks._timing import machine

    call_command("migrate", verbosity=0)
    print(f"machine: {machine()}")
    print(f"database: {django.db.connection.vendor}; cold: one run each; warm: median of {args.runs} runs")
    print(
        f"{'items':>6} {'votes':>7} {'pairs':>7} {'pairs read (s)':>15} {'cold (s)':>9} {'warm (s)':>9} "
        f"{'cold peak (MB)':>15} {'warm peak (MB)':>15}"
    )
    for size in (int(text) for text in args.sizes.split(",")):
        rng = np.random.default_rng(size)
        started = time.perf_counter()
        study = build_study(f"judge-{size}", None if size == 990 else 142, rng)
        built = time.perf_counter() - started
        read, cold_seconds, warm_seconds, peaks, pairs, result = measure(study, rng, args.runs)
        votes = study.ballots.aggregate(total=django.db.models.Count("votes"))["total"]
        print(
            f"{study.items.count():>6} {votes:>7} {pairs.count:>7} {read:>15.2f} {cold_seconds:>9.2f} "
            f"{warm_seconds:>9.2f} {peaks[0]:>15.0f} {peaks[1]:>15.0f}"
            f"   (built in {built:.0f} s; κ {result['agreement']['kappa']['value']:.3f}, "
            f"verdict: {result['verdict']['direction']})"
        )


if __name__ == "__main__":
    main()
