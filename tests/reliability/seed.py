"""A running study for a reliability run, made through the services as a researcher would.

    DATABASE_URL=... python -m tests.reliability.seed --slug load --tokens 30 --appearances 10 --ballots 5 --cap 80

Tokens ``w000``, ``w001`` ... in one semantic area, every pair of them an item. Prints the plan as one
line of JSON (slug, items, comparisons per ballot).
"""

from __future__ import annotations

import argparse
import json
import os


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slug", required=True)
    parser.add_argument("--tokens", type=int, default=30, help="tokens in the one area (items: n(n-1)/2)")
    parser.add_argument("--appearances", type=int, default=10, help="M")
    parser.add_argument("--ballots", type=int, default=5, help="n_b")
    parser.add_argument("--keep-fraction", type=float, default=0.5, help="α")
    parser.add_argument("--cap", type=int, default=None, help="votes per annotator and ballot (none: no cap)")
    parser.add_argument("--lease-seconds", type=int, default=60)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import transaction

    from collection.lifecycle import study_start
    from collection.models import Study
    from collection.pools import items_generate, tokens_import
    from collection.studies import study_plan

    with transaction.atomic():
        study = Study.objects.create(
            name=f"Reliability run {args.slug}",
            slug=args.slug,
            ballot_count=args.ballots,
            keep_fraction=args.keep_fraction,
            appearances=args.appearances,
            votes_per_annotator_per_ballot=args.cap,
            lease_seconds=args.lease_seconds,
        )
        tokens = "\n".join(f"w{i:03d},A" for i in range(args.tokens))
        tokens_import(study=study, data=f"token,area\n{tokens}\n")
        items_generate(study=study)
        plan = study_plan(study=study)
        study_start(study=study)
    print(
        json.dumps(
            {
                "slug": study.slug,
                "items": plan.item_count,
                "ballot_sizes": list(plan.sizes),
                "comparisons": list(plan.comparisons),
                "cap": args.cap,
            }
        )
    )


if __name__ == "__main__":
    main()
