"""Schedule generation: one ballot of 10^5 items with M = 20, and the paper's 990-item ballot.

    python benchmarks/bench_schedule.py [--runs 5]

Baseline: numpy's own permutation of the 2·10^6 appearance slots (the unavoidable part of any
random schedule), so the ratio shows what the no-repeat repair and the shuffles add.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import machine, median_seconds  # noqa: E402
from collection.schedule import ballot_schedule, uniform_schedule  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    slots = np.repeat(np.arange(100_000), 20)
    timings = {
        "rng.permutation of 2·10^6 slots": median_seconds(lambda: rng.permutation(slots), runs=args.runs),
        "ballot_schedule(100000, M=20)": median_seconds(
            lambda: ballot_schedule(100_000, 20, rng), runs=args.runs
        ),
        "ballot_schedule(990, M=20)": median_seconds(lambda: ballot_schedule(990, 20, rng), runs=args.runs),
        "uniform_schedule(990, 19660)": median_seconds(
            lambda: uniform_schedule(990, 19_660, rng), runs=args.runs
        ),
    }
    baseline = timings["rng.permutation of 2·10^6 slots"]
    print(f"machine: {machine()}")
    print(f"median of {args.runs} runs")
    for name, seconds in timings.items():
        print(f"  {name:<34} {seconds:8.4f} s   {seconds / baseline:6.2f}× permutation")


if __name__ == "__main__":
    main()
