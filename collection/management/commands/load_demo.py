"""python manage.py load_demo: the demo study (45 tokens of one semantic area, 990 items, running)."""

from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction

from collection.lifecycle import study_start
from collection.models import Study
from collection.pools import items_generate, tokens_import
from collection.studies import study_plan
from common.numbers import listed

DEMO_TOKENS = Path(__file__).resolve().parents[2] / "data" / "demo_tokens.csv"
DEMO_SLUG = "demo"


class Command(BaseCommand):
    help = (
        "Create and start the demo study: 45 tokens of the area Sales & Marketing, all 990 pairs as items, "
        "plan n_b = 7, α = 0.5, M = 20 (as in Lombardo et al.). Does nothing if it exists."
    )

    def add_arguments(self, parser):
        parser.add_argument("--slug", default=DEMO_SLUG)
        parser.add_argument(
            "--draft", action="store_true", help="leave the study in draft instead of starting it"
        )

    def handle(self, *args, slug, draft, **options):
        if Study.objects.filter(slug=slug).exists():
            self.stdout.write(f"demo study '{slug}' already exists: /s/{slug}/")
            return
        with transaction.atomic():
            study = Study.objects.create(
                name="Sales & Marketing relatedness (demo)",
                slug=slug,
                ballot_count=7,
                keep_fraction=0.5,
                appearances=20,
                votes_per_annotator_per_ballot=200,
            )
            tokens_import(study=study, data=DEMO_TOKENS.read_bytes())
            items_generate(study=study)
            plan = study_plan(study=study)
            if not draft:
                study_start(study=study)
        self.stdout.write(
            f"demo study '{slug}': {plan.item_count} items, ballots of {listed(plan.sizes)} items, "
            f"{plan.total_comparisons} comparisons; {'draft' if draft else 'running'}. "
            f"Vote at /s/{slug}/ or run: python manage.py simulate_voters --study {slug}"
        )
