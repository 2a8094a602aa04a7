"""Metrology and evaluation at the sizes the issue names, and the metrics services on the demo study.

    python benchmarks/bench_metrics.py [--runs 3] [--demo-db var/yardstick.sqlite3]
    python benchmarks/bench_metrics.py --first-evaluation-steps --runs 5   # part 2's evaluation alone

1. Bootstrap of the human scores: 1000 replicates for a simulated adaptive study of 990 items
   (n_b = 7, α = 0.5, M = 20: 19,660 votes), as the instrument card and the leaderboard compute it.
2. A first evaluation with intervals of a 10,000-item submission, nothing cached, with 1000 bootstrap
   replicates and 1000 chance draws (``metrics.figures.replicate_count`` at every size): the study's
   bootstrap replicates and chance level (as ``metrics.figures`` computes them, once per study) and
   the evaluation itself (coefficients, retrieval measures, paired-bootstrap intervals, p-values).
   Baseline: the same with the whole-array numpy code that ran before issue 9 (kept below as
   ``baseline_*``; it made the figures drop to 200 replicates above 2000 items). Also the first
   evaluation in a fresh process, compiling the kernels (empty numba cache) and loading them.

3. With ``--demo-db``, a SQLite database in which the demo study has been voted to the end (``make run``,
   then ``manage.py simulate_voters --study demo``), the services on a copy of it (the file itself is
   not touched): its votes read as arrays for the metrology, its instrument card, a submission of
   990 scores and its standings, and the leaderboard of 10 models.

Baselines: one plain `scipy.stats.kendalltau` on the same number of items, to put the figures on this
machine's scale; in part 3, the votes read as rows (what any read of them costs), the pure
``evaluate`` of the same scores, and the leaderboard computed from the study's figures (what every
request for a leaderboard at another n0 than 2 cost before the standings were stored).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import machine, median_seconds  # noqa: E402
from metrics.correlation import _kendall_gamma_rows, weighted_kendall_rows, weighted_spearman_rows  # noqa: E402
from metrics.evaluation import evaluate  # noqa: E402
from metrics.metrology import BallotVotes, bootstrap_scores, chance_level, precision_summary  # noqa: E402
from scoring.plan import ballot_plan  # noqa: E402
from scoring.simulation import SimulationConfig, draw_voters, run_adaptive, underlying_similarity  # noqa: E402

REPLICATES = 1000  # as metrics.figures.replicate_count, at every size
FIRST_EVALUATION_ITEMS = 10_000


# --- the baseline: the whole-array numpy code of the bootstrap and the row coefficients before issue 9


def baseline_bootstrap(ballots, item_count, rng, replicates):
    """bootstrap_scores before issue 9: R × V_k multiplicities by bincount, R × N updates in numpy."""
    score = np.full((replicates, item_count), np.nan)
    measured = np.zeros((replicates, item_count))
    row_offset = (np.arange(replicates, dtype=np.int64) * item_count)[:, None]
    size = replicates * item_count
    for number, ballot in enumerate(ballots, start=1):
        votes = ballot.vote_count
        draws = rng.integers(0, votes, size=(replicates, votes))
        flat = (draws + (np.arange(replicates, dtype=np.int64) * votes)[:, None]).ravel()
        weights = np.bincount(flat, minlength=replicates * votes).astype(np.float64)
        left_key = (row_offset + ballot.left[None, :]).ravel()
        right_key = (row_offset + ballot.right[None, :]).ravel()
        points = np.bincount(left_key, weights * np.tile(ballot.outcome, replicates), size) + np.bincount(
            right_key, weights * np.tile(1.0 - ballot.outcome, replicates), size
        )
        appearances = np.bincount(left_key, weights, size) + np.bincount(right_key, weights, size)
        points = points.reshape(replicates, item_count)
        appearances = appearances.reshape(replicates, item_count)
        seen = appearances > 0
        x = np.divide(points, appearances, out=np.full_like(points, np.nan), where=seen)
        if number == 1:
            y = x
        else:
            usable = seen & np.isfinite(score)
            shortfall = np.where(usable, 1.0 - x, 0.0)
            previous_shortfall = np.where(usable, 1.0 - score, 0.0)
            denominator = (shortfall * shortfall).sum(axis=1)
            numerator = (shortfall * previous_shortfall).sum(axis=1)
            slope = np.divide(numerator, denominator, out=np.ones_like(numerator), where=denominator > 0)
            y = 1.0 - slope[:, None] + slope[:, None] * x
        fresh = np.isfinite(y)
        earlier = np.where(np.isfinite(score), score, 0.0)
        new_measured = measured + fresh
        score = np.where(
            fresh, (measured * earlier + np.where(fresh, y, 0.0)) / np.maximum(new_measured, 1), score
        )
        measured = new_measured
    return score


def baseline_spearman_rows(a, b, n0):
    """weighted_spearman_rows before issue 9: Eq. 8 over R × n arrays."""
    a = np.broadcast_to(a, b.shape)
    raw = 1.0 / (a + n0) ** 2 + 1.0 / (b + n0) ** 2
    w = raw / raw.sum(axis=1, keepdims=True)
    da = a - (w * a).sum(axis=1, keepdims=True)
    db = b - (w * b).sum(axis=1, keepdims=True)
    return (w * da * db).sum(axis=1) / np.sqrt((w * da * da).sum(axis=1) * (w * db * db).sum(axis=1))


def baseline_kendall_rows(a, b, n0):
    """weighted_kendall_rows before issue 9: the vectorised divide and conquer that weighted_kendall
    still uses (``metrics.correlation._kendall_gamma_rows``), on all rows at once."""
    a = np.ascontiguousarray(np.broadcast_to(a, b.shape))
    raw = 1.0 / (a + n0) ** 2 + 1.0 / (b + n0) ** 2
    return _kendall_gamma_rows(a, b, raw / raw.sum(axis=1, keepdims=True))


def baseline_chance(item_count, rng, draws):
    reference = np.arange(1, item_count + 1, dtype=np.float64)
    permuted = np.argsort(rng.random((draws, item_count)), axis=1).astype(np.float64) + 1.0
    return baseline_spearman_rows(reference, permuted, 2.0), baseline_kendall_rows(reference, permuted, 2.0)


def baseline_coefficient_replicates(model, human, replicates):
    model_ranks = stats.rankdata(-model, method="average")
    human_ranks = stats.rankdata(-replicates, method="average", axis=1)
    return [
        rows(model_ranks, human_ranks, n0)
        for rows in (baseline_spearman_rows, baseline_kendall_rows)
        for n0 in (2.0, 1e12)
    ]


def first_evaluation(ballots, human, model, seed: int, cpu: dict | None = None) -> dict:
    """Seconds of each step of a first evaluation with nothing cached, as metrics.figures runs it
    (wall time; with ``cpu``, the process's CPU seconds of each step, every thread's, go there too)."""
    seconds = {}
    cpu = {} if cpu is None else cpu

    def step(name, function):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = function()
        seconds[name] = time.perf_counter() - started
        cpu[name] = time.process_time() - started_cpu
        return result

    replicates = step(
        "bootstrap",
        lambda: (
            bootstrap_scores(ballots, human.size, np.random.default_rng([seed, 1]), REPLICATES)
            .astype(np.float32)  # as metrics.figures stores them
            .astype(np.float64)
        ),
    )
    chance = step(
        "chance", lambda: chance_level(human.size, np.random.default_rng([seed, 2]), draws=REPLICATES)
    )
    step("evaluation", lambda: evaluate(model, human, top_k=100, human_replicates=replicates, chance=chance))
    for figures in (seconds, cpu):
        figures["total"] = figures["bootstrap"] + figures["chance"] + figures["evaluation"]
    return seconds


def first_evaluation_steps(runs: int) -> None:
    """``--first-evaluation-steps``: the first 10,000-item evaluation alone, each step's median wall
    and CPU seconds over ``runs`` runs (the kernels compiled or loaded before the first)."""
    ballots, human, model = study_for_the_first_evaluation()
    import metrics.kernels

    metrics.kernels.compile_all()
    walls, cpus = [], []
    for seed in range(runs):
        cpu = {}
        walls.append(first_evaluation(ballots, human, model, seed, cpu))
        cpus.append(cpu)
    load = os.getloadavg()[0]
    print(f"first 10,000-item evaluation, 1000 replicates, median of {runs} runs (load average {load:.2f})")
    for name in ("bootstrap", "chance", "evaluation", "total"):
        wall = statistics.median(run[name] for run in walls)
        cpu = statistics.median(run[name] for run in cpus)
        print(f"  {name:12s} wall {wall:7.3f} s   CPU {cpu:7.3f} s")


def baseline_first_evaluation(ballots, human, model, seed: int) -> dict:
    seconds = {}
    started = time.perf_counter()
    replicates = baseline_bootstrap(ballots, human.size, np.random.default_rng([seed, 1]), REPLICATES)
    replicates = replicates.astype(np.float32).astype(np.float64)
    seconds["bootstrap"] = time.perf_counter() - started
    started = time.perf_counter()
    baseline_chance(human.size, np.random.default_rng([seed, 2]), REPLICATES)
    seconds["chance"] = time.perf_counter() - started
    started = time.perf_counter()
    evaluate(model, human, top_k=100)  # the point values and retrieval measures
    filled = np.where(np.isfinite(replicates), replicates, human[None, :])
    baseline_coefficient_replicates(model, human, filled)
    seconds["evaluation"] = time.perf_counter() - started
    seconds["total"] = seconds["bootstrap"] + seconds["chance"] + seconds["evaluation"]
    return seconds


def fresh_process_first_evaluation(cache_dir: Path) -> float:
    """The first evaluation in a new process (numba loaded on first use), with ``cache_dir`` as numba's
    cache: compiled when it is empty, loaded from it afterwards."""
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    output = subprocess.run(
        [sys.executable, __file__, "--first-evaluation-only"],
        env=environment,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(output.split()[-1])


def study_for_the_first_evaluation():
    rng = np.random.default_rng(10)
    ballots, human, truth = simulated_study(FIRST_EVALUATION_ITEMS, rng)
    return ballots, human, truth + rng.normal(0, 0.1, FIRST_EVALUATION_ITEMS)


def simulated_study(item_count: int, rng: np.random.Generator):
    plan = ballot_plan(item_count=item_count, ballot_count=7, keep_fraction=0.5, appearances=20)
    z = rng.permutation(underlying_similarity("exponential", item_count))
    voters = draw_voters(z, SimulationConfig(item_count=item_count), rng)
    record = []
    score, _ = run_adaptive(voters, plan.sizes, plan.appearances, rng, record=record)
    ballots = [
        BallotVotes(
            items=b["items"], left=b["left"], right=b["right"], outcome=b["outcome"], annotator=b["voter"]
        )
        for b in record
    ]
    return ballots, score, np.abs(z)


def services_on_the_demo(demo_db: Path, runs: int) -> None:
    """Part 3: the services on a copy of a database in which the demo study has finished."""
    copy = Path(tempfile.mkdtemp(prefix="bench-metrics-")) / "demo.sqlite3"
    shutil.copyfile(demo_db, copy)
    os.environ["DATABASE_URL"] = f"sqlite:///{copy}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"  # no query log
    os.environ.setdefault("SECRET_KEY", "benchmark")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "true"

    import logging

    import django

    django.setup()
    logging.disable(logging.INFO)

    from django.contrib.auth.models import User
    from django.db import transaction

    from collection.models import Study, Vote
    from metrics import services
    from metrics.figures import chance_for, study_replicates
    from metrics.instrument import instrument_card
    from metrics.leaderboard import leaderboard_for
    from metrics.models import Standing, StudyFigure
    from metrics.selectors import final_scores, model_scores, study_votes

    study = Study.objects.get(slug="demo", status=Study.Status.FINISHED)
    human = final_scores(study=study)
    ids = dict(study.items.values_list("index", "pk"))
    owner, _ = User.objects.get_or_create(username="bench")
    rng = np.random.default_rng(1)

    def scores(noise: float) -> list[dict]:
        noisy = human + rng.normal(0, noise, human.size)
        return [{"item": ids[i], "score": float(noisy[i])} for i in range(human.size)]

    def rolled_back(function):
        def run():
            with transaction.atomic():
                function()
                transaction.set_rollback(True)

        return run

    print(f"the demo study: {human.size} items, {Vote.objects.filter(ballot__study=study).count()} votes")
    rows = median_seconds(
        lambda: list(
            Vote.objects.filter(ballot__study=study)
            .order_by("ballot__number", "pk")
            .values_list("ballot__number", "left_item__index", "right_item__index", "choice", "annotator_id")
        ),
        runs=runs,
    )
    arrays = median_seconds(lambda: study_votes(study=study), runs=runs)
    print(f"  votes read as rows — baseline                            {rows:7.3f} s   1.00×")
    print(
        f"  votes read as arrays by ballot (selectors.study_votes)    {arrays:7.3f} s   {arrays / rows:.2f}×"
    )

    StudyFigure.objects.filter(study=study).delete()
    cold = median_seconds(rolled_back(lambda: instrument_card(study=study)), runs=runs)
    instrument_card(study=study)  # stores the card and the study's replicates and chance level
    StudyFigure.objects.filter(study=study, kind="card").delete()
    warm = median_seconds(rolled_back(lambda: instrument_card(study=study)), runs=runs)
    read = median_seconds(lambda: instrument_card(study=study), runs=runs)
    print(f"  instrument card, nothing cached                           {cold:7.3f} s")
    print(f"  instrument card, the study's replicates and chance cached {warm:7.3f} s")
    print(f"  instrument card, read back                                {read:7.4f} s")

    rows_of_scores = scores(0.1)
    submission = services.submission_create(
        study=study, owner=owner, model_name="m-0", data=rows_of_scores, source_format="json"
    )  # stores it, its evaluation and (eager task) its standings
    replicates = study_replicates(study=study)
    chance = chance_for(study=study, item_count=human.size, weight_offset=2.0)
    top_k = study.default_top_k(human.size)
    pure = median_seconds(
        lambda: evaluate(
            model_scores(submission), human, top_k=top_k, human_replicates=replicates, chance=chance
        ),
        runs=runs,
    )
    create = median_seconds(
        rolled_back(
            lambda: services.submission_create(
                study=study, owner=owner, model_name="m-timed", data=rows_of_scores, source_format="json"
            )
        ),
        runs=runs,
    )
    Standing.objects.filter(submission=submission).exclude(weight_offset=2.0).delete()
    standings = median_seconds(
        rolled_back(lambda: services.submission_standings(submission_id=submission.pk)), runs=runs
    )
    services.submission_standings(submission_id=submission.pk)
    print(f"  evaluate() of 990 scores, 1000 replicates — baseline      {pure:7.3f} s   1.00×")
    print(
        f"  a submission of 990 scores, evaluated at once (request)   {create:7.3f} s   {create / pure:.2f}×"
    )
    print(
        f"  its standings at n0 = 0, 1, 5, 10 (background task)      {standings:7.3f} s   {standings / pure:.2f}×"
    )

    for number in range(1, 10):
        services.submission_create(
            study=study,
            owner=owner,
            model_name=f"m-{number}",
            data=scores(0.05 * number),
            source_format="json",
        )

    def without_standings():
        Standing.objects.filter(submission__study=study, weight_offset=5.0).delete()
        leaderboard_for(study=study, metric="tau_w", weight_offset=5.0)  # computes each model's standing

    computed = median_seconds(rolled_back(without_standings), runs=runs)
    stored = median_seconds(
        lambda: leaderboard_for(study=study, metric="tau_w", weight_offset=5.0), runs=runs
    )
    print(f"  leaderboard of 10 models at n0 = 5, computed — baseline   {computed:7.3f} s   1.00×")
    print(
        f"  leaderboard of 10 models at n0 = 5, from the standings    {stored:7.3f} s   {stored / computed:.3f}×"
    )
    shutil.rmtree(copy.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-runs", type=int, default=1, help="runs of the slow baseline")
    parser.add_argument("--demo-db", type=Path, help="a SQLite database in which the demo study has finished")
    parser.add_argument("--first-evaluation-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--first-evaluation-steps",
        action="store_true",
        help="only the first 10,000-item evaluation: wall and CPU seconds of each step (--runs runs)",
    )
    args = parser.parse_args()
    if args.first_evaluation_steps:
        print(f"machine: {machine()}")
        first_evaluation_steps(args.runs)
        return
    if args.first_evaluation_only:  # the child of fresh_process_first_evaluation
        ballots, human, model = study_for_the_first_evaluation()
        print(first_evaluation(ballots, human, model, 0)["total"])
        return
    rng = np.random.default_rng(0)
    print(f"machine: {machine()}")

    ballots, human, truth = simulated_study(990, rng)
    votes = sum(b.vote_count for b in ballots)
    boot = median_seconds(
        lambda: precision_summary(bootstrap_scores(ballots, 990, rng, 1000)), runs=args.runs
    )
    base = median_seconds(lambda: stats.kendalltau(human, truth), runs=args.runs)
    print(f"990 items, {votes} votes, median of {args.runs} runs")
    print(f"  bootstrap, 1000 replicates + per-item SD and intervals  {boot:7.3f} s   (target < 5 s)")
    print(f"  scipy.stats.kendalltau on 990 items (scale)             {base:7.4f} s")

    ballots, human, model = study_for_the_first_evaluation()
    n = human.size
    votes = sum(b.vote_count for b in ballots)
    # The kernels give the baseline's numbers: the largest difference over 50 replicates.
    model_ranks = stats.rankdata(-model)
    sample = bootstrap_scores(ballots, n, np.random.default_rng(3), 50)
    human_ranks = stats.rankdata(-np.where(np.isfinite(sample), sample, human), axis=1)
    agreement = max(
        np.abs(
            weighted_kendall_rows(model_ranks, human_ranks)
            - baseline_kendall_rows(model_ranks, human_ranks, 2.0)
        ).max(),
        np.abs(
            weighted_spearman_rows(model_ranks, human_ranks)
            - baseline_spearman_rows(model_ranks, human_ranks, 2.0)
        ).max(),
    )
    print(
        f"{n:,} items, {votes:,} votes, {REPLICATES} bootstrap replicates and chance draws, median of {args.runs} runs"
    )
    print(f"  kernels against the numpy code on 50 replicates: largest difference {agreement:.1e}")
    after = [first_evaluation(ballots, human, model, seed) for seed in range(args.runs)]
    before = [baseline_first_evaluation(ballots, human, model, seed) for seed in range(args.baseline_runs)]
    for step, label in (
        ("bootstrap", "study bootstrap (once per study, cached)"),
        ("chance", "chance level (once per study and n0, cached)"),
        ("evaluation", "evaluation with intervals and p-values"),
        ("total", "a first submission, nothing cached: sum"),
    ):
        old = statistics.median(run[step] for run in before)
        new = statistics.median(run[step] for run in after)
        print(f"  {label:46s} before {old:7.3f} s   after {new:7.3f} s   {new / old:.3f}×")
    print(f"  (before: the numpy code of issue 8, the baseline, median of {args.baseline_runs} runs)")
    rows = np.argsort(np.random.default_rng(4).random((REPLICATES, n)), axis=1) + 1.0
    reference = np.arange(1, n + 1, dtype=np.float64)
    kendall_rows = median_seconds(lambda: weighted_kendall_rows(reference, rows), runs=args.runs)
    spearman_rows = median_seconds(lambda: weighted_spearman_rows(reference, rows), runs=args.runs)
    print(f"  τ_w of 1000 × 10^4 (weighted_kendall_rows)     {kendall_rows:7.3f} s")
    print(f"  ρ_w of 1000 × 10^4 (weighted_spearman_rows)    {spearman_rows:7.3f} s")
    cache = Path(tempfile.mkdtemp(prefix="bench-numba-"))
    compiling = fresh_process_first_evaluation(cache)
    loading = statistics.median(fresh_process_first_evaluation(cache) for _ in range(args.runs))
    shutil.rmtree(cache)
    print(f"  first evaluation in a fresh process, compiling the kernels  {compiling:7.3f} s")
    print(f"  first evaluation in a fresh process, kernels from the cache {loading:7.3f} s")
    base = median_seconds(lambda: stats.kendalltau(model, human), runs=args.runs)
    print(f"  scipy.stats.kendalltau on 10,000 items (scale)        {base:7.4f} s")
    if args.demo_db:
        services_on_the_demo(args.demo_db, args.runs)


if __name__ == "__main__":
    main()
