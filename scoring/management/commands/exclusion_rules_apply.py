"""python manage.py exclusion_rules_apply --study SLUG: exclude the annotators the quality thresholds flag."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from collection.models import Study
from scoring.exclusion import exclusion_rules_apply


class Command(BaseCommand):
    help = (
        "Exclude every annotator of the study whom its quality thresholds flag (the rule a study with "
        "'exclude flagged annotators' applies after each close), now. Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="The study's slug.")

    def handle(self, *args, study: str, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise CommandError(f"there is no study {study!r}")
        if found.status == Study.Status.DRAFT:
            raise CommandError(f"study {study!r} is a draft: nobody has voted yet")
        created = exclusion_rules_apply(study=found)
        for exclusion in created:
            self.stdout.write(f"excluded {exclusion.annotator} ({exclusion.rule}): {exclusion.reason}")
        self.stdout.write(f"{len(created)} annotator{'' if len(created) == 1 else 's'} excluded")
