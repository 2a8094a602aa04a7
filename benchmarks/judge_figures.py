"""What three reference judges get on the demo study voted by the paper's simulated crowd.

    python benchmarks/judge_figures.py [--seed 0]

Builds the demo study (990 items, n_b = 7, α = 0.5) in a fresh SQLite database in a temporary folder,
lets ``simulate_voters`` (the §4.1 voter model, 100 annotators) vote it to the end, and evaluates
(``metrics.judges.judge_result``, all items, n0 = 2, K = 10):

* **copy**: the crowd's majority on every pair (a pair voted once: its vote; an even split: the first
  vote), the best a judge can do without knowing more than the crowd;
* **random**: left or right with probability 1/2 each, seeded;
* **left**: "left" on every pair, a judge biased to one side.

Prints each judge's agreement figures beside the crowd's, its ranking's ρ_w and top-10 recall, and the
verdict. Figures, not timings: `bench_judge.py` times the evaluation.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def majority_decisions(pairs, study):
    """The crowd's majority on each pair in the judge's orientation (ties of counts: the first vote)."""
    import numpy as np

    from collection import arrays

    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    numbering = pairs.numbering
    same = numbering.same_side
    left_won = np.where(same, votes.outcome, 1.0 - votes.outcome)
    count = pairs.count
    left = np.bincount(numbering.pair_of_vote, weights=(left_won == 1.0), minlength=count)
    right = np.bincount(numbering.pair_of_vote, weights=(left_won == 0.0), minlength=count)
    first = np.full(count, np.nan)
    first[numbering.pair_of_vote[::-1]] = left_won[::-1]  # the earliest vote is written last
    return np.where(left > right, 1.0, np.where(right > left, 0.0, first))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    os.environ.setdefault("YARDSTICK_DATA_DIR", tempfile.mkdtemp(prefix="judge-figures-"))
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

    from collection.models import Study
    from metrics.judges import judge_pairs, judge_result

    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    call_command("simulate_voters", study="demo", seed=args.seed, stdout=open(os.devnull, "w"))  # noqa: SIM115
    study = Study.objects.get(slug="demo")
    pairs = judge_pairs(study=study)
    rng = np.random.default_rng(args.seed)
    judges = {
        "copy": majority_decisions(pairs, study),
        "random": rng.integers(0, 2, pairs.count).astype(np.float64),
        "left": np.ones(pairs.count),
    }
    print(f"demo study, seed {args.seed}: {pairs.count:,} pairs; figure [95% interval] (the crowd's own)")
    for name, decisions in judges.items():
        result = judge_result(study=study, decisions=decisions, weight_offset=2.0, top_k=10, part="all")
        agreement, ranking = result["agreement"], result["ranking"]
        print(f"{name}:")
        for key in ("majority", "single", "kappa"):
            entry = agreement[key]
            low, high = entry["interval"] or (np.nan, np.nan)
            print(
                f"  {key:<8} {entry['value']:.3f} [{low:.3f}, {high:.3f}] (crowd {entry['crowd']['value']:.3f})"
            )
        print(f"  side     {agreement['side']['sentence']}")
        low, high = ranking["rho_w"]["interval"]
        recall = ranking["retrieval"]["recall_at_k"]
        print(f"  ρ_w      {ranking['rho_w']['value']:.3f} [{low:.3f}, {high:.3f}]; top-10 recall {recall:.2f}")
        print(f"  verdict  {result['verdict']['sentence']}")


if __name__ == "__main__":
    main()
