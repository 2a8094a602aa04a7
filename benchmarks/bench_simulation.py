"""Simulations at the paper's size (990 items, n_b = 7, α = 0.5, M = 20, 100 voters).

    python benchmarks/bench_simulation.py [--runs 5] [--table-2] [--jobs 2]

Times one uniform and one adaptive simulation (median of --runs), and with --table-2 the whole
Table 2: three distributions × 50 repetitions × both protocols, as `manage.py simulate` runs it.
The baseline is the paper's public reference code, which needs about 50 s for one simulation (both
protocols) on this machine class; it is not part of this repository (see BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from benchmarks._timing import machine, median_seconds  # noqa: E402
from scoring.plan import ballot_plan  # noqa: E402
from scoring.simulation import SimulationConfig, draw_voters, run_adaptive, run_uniform, underlying_similarity  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--table-2", action="store_true", help="also time the whole Table 2")
    parser.add_argument("--jobs", type=int, default=1, help="processes for --table-2")
    args = parser.parse_args()

    config = SimulationConfig()
    plan = ballot_plan(item_count=990, ballot_count=7, keep_fraction=0.5, appearances=20)
    z = underlying_similarity("exponential", 990)
    rng = np.random.default_rng(0)
    voters = draw_voters(z, config, rng)
    uniform = median_seconds(lambda: run_uniform(voters, plan.total_comparisons, rng), runs=args.runs)
    adaptive = median_seconds(lambda: run_adaptive(voters, plan.sizes, plan.appearances, rng), runs=args.runs)
    print(f"machine: {machine()}")
    print(
        f"one simulation at the paper's size, {plan.total_comparisons} comparisons, median of {args.runs} runs"
    )
    print(f"  uniform   {uniform:8.4f} s")
    print(f"  adaptive  {adaptive:8.4f} s")

    if args.table_2:
        import django

        django.setup()
        from scoring.services import simulation_run

        started = time.perf_counter()
        for distribution in ("exponential", "power_law", "file"):
            simulation_run(
                config=SimulationConfig(distribution=distribution), repetitions=50, seed=0, jobs=args.jobs
            )
        total = time.perf_counter() - started
        print(f"  Table 2 (3 distributions × 50 repetitions × 2 protocols, jobs={args.jobs}): {total:.1f} s")


if __name__ == "__main__":
    main()
