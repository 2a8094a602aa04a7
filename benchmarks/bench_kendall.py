"""weighted_kendall at 10^6 items beside scipy.stats.kendalltau and scipy.stats.weightedtau.

    python benchmarks/bench_kendall.py [--items 1000000] [--runs 5]

All three run on the same two random rankings (without ties) in the same process; the ratios are
against scipy.stats.kendalltau (unweighted, O(n log n), compiled).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import machine, median_seconds  # noqa: E402
from metrics.correlation import kendall, weighted_kendall, weighted_spearman  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-weightedtau", action="store_true", help="weightedtau takes ~10 s per run")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    a = rng.permutation(args.items) + 1.0
    b = rng.permutation(args.items) + 1.0
    timings = {
        "scipy.stats.kendalltau": median_seconds(lambda: stats.kendalltau(a, b), runs=args.runs),
        "weighted_kendall": median_seconds(lambda: weighted_kendall(a, b), runs=args.runs),
        "kendall (ours, τ_b)": median_seconds(lambda: kendall(a, b), runs=args.runs),
        "weighted_spearman": median_seconds(lambda: weighted_spearman(a, b), runs=args.runs),
    }
    if not args.skip_weightedtau:
        timings["scipy.stats.weightedtau"] = median_seconds(
            lambda: stats.weightedtau(a, b), runs=max(1, args.runs // 2), warmup=0
        )
    baseline = timings["scipy.stats.kendalltau"]
    print(f"machine: {machine()}")
    print(f"{args.items:,} items, median of {args.runs} runs")
    for name, seconds in timings.items():
        print(f"  {name:<26} {seconds:8.3f} s   {seconds / baseline:6.2f}× kendalltau")


if __name__ == "__main__":
    main()
