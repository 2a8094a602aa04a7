"""Metrology and evaluation at the sizes the issue names.

    python benchmarks/bench_metrics.py [--runs 3]

1. Bootstrap of the human scores: 1000 replicates for a simulated adaptive study of 990 items
   (n_b = 7, α = 0.5, M = 20: 19,660 votes), as the instrument card and the leaderboard compute it.
2. A full evaluation with intervals of a 10,000-item submission: the study's bootstrap replicates
   and chance level (computed once per study, cached afterwards) and the evaluation itself
   (coefficients, retrieval measures, paired-bootstrap intervals, p-values).

Baseline: one plain `scipy.stats.kendalltau` on the same number of items, to put the figures on
this machine's scale.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import machine, median_seconds  # noqa: E402
from metrics.evaluation import evaluate  # noqa: E402
from metrics.metrology import BallotVotes, bootstrap_scores, chance_level, precision_summary  # noqa: E402
from scoring.plan import ballot_plan  # noqa: E402
from scoring.simulation import SimulationConfig, draw_voters, run_adaptive, underlying_similarity  # noqa: E402

REPLICATE_BUDGET = 2_000_000  # as metrics.services.replicate_count


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
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

    n = 10_000
    ballots, human, truth = simulated_study(n, rng)
    votes = sum(b.vote_count for b in ballots)
    replicates_count = min(1000, max(200, REPLICATE_BUDGET // n))
    model = truth + rng.normal(0, 0.1, n)

    started = time.perf_counter()
    replicates = bootstrap_scores(ballots, n, rng, replicates_count)
    bootstrap_seconds = time.perf_counter() - started
    started = time.perf_counter()
    chance = chance_level(n, rng, draws=replicates_count)
    chance_seconds = time.perf_counter() - started
    evaluation = median_seconds(
        lambda: evaluate(model, human, top_k=100, human_replicates=replicates, chance=chance), runs=args.runs
    )
    base = median_seconds(lambda: stats.kendalltau(model, human), runs=args.runs)
    print(f"10,000 items, {votes} votes, {replicates_count} bootstrap replicates")
    print(f"  study bootstrap (once per study, cached)              {bootstrap_seconds:7.3f} s")
    print(f"  chance level, {replicates_count} draws (once per study and n0)   {chance_seconds:7.3f} s")
    print(f"  evaluation with intervals and p-values (median)       {evaluation:7.3f} s")
    print(
        f"  a first submission, nothing cached: sum               {bootstrap_seconds + chance_seconds + evaluation:7.3f} s   (target < 10 s)"
    )
    print(f"  scipy.stats.kendalltau on 10,000 items (scale)        {base:7.4f} s")


if __name__ == "__main__":
    main()
