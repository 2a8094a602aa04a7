"""python manage.py export_hub SLUG FOLDER [--push OWNER/NAME --token …]: a finished study as a Hugging Face
dataset folder (``metrics.hub``), and on the Hub with a token."""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from collection.models import Study
from common.errors import ServiceError
from metrics.hub import hub_dataset_push, hub_dataset_write, hub_push_check
from metrics.hub_card import DEFAULT_LICENSE, LICENSES, hub_options


class Command(BaseCommand):
    help = (
        "Write a finished study as a Hugging Face dataset into FOLDER (new or empty): Parquet tables of the "
        "items, the votes (annotators under pseudonyms) and the ballots, and a dataset card (README.md) with "
        "the study's design and its instrument card; the hidden test part is withheld. With --push, upload "
        "the folder to the Hub as a dataset repository (private unless --public)."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of a finished study")
        parser.add_argument("folder", type=Path, help="where to write the dataset (a new or empty folder)")
        parser.add_argument(
            "--license", choices=LICENSES, default=DEFAULT_LICENSE, help="the license of the dataset card"
        )
        parser.add_argument("--language", default="en", help="ISO 639 codes of the tokens, comma-separated")
        parser.add_argument("--push", metavar="OWNER/NAME", help="also upload to this Hub dataset repository")
        parser.add_argument(
            "--token", help="a Hub token with write access (default: the HF_TOKEN environment variable)"
        )
        parser.add_argument("--public", action="store_true", help="create the Hub repository public")
        parser.add_argument(
            "--endpoint", help="another Hub's address (default: huggingface.co, or HF_ENDPOINT)"
        )

    def handle(self, *args, **options):
        study = Study.objects.filter(slug=options["slug"]).first()
        if study is None:
            raise CommandError(f"there is no study {options['slug']!r}")
        token = options["token"] or os.environ.get("HF_TOKEN", "")
        if options["push"] and not token:
            raise CommandError("--push needs a token: --token, or the HF_TOKEN environment variable")
        try:
            if options["push"]:  # before anything is written
                hub_push_check(repo_id=options["push"], token=token)
            export = hub_dataset_write(
                study=study,
                folder=options["folder"],
                options=hub_options(license=options["license"], language=options["language"]),
            )
            rows = ", ".join(f"{name} {count:,}" for name, count in export.rows.items())
            self.stdout.write(f"wrote {export.folder}: {rows} rows")
            if export.withheld_items:
                self.stdout.write(
                    f"withheld the hidden test part: {export.withheld_items:,} items and the "
                    f"{export.withheld_votes:,} votes that involve them"
                )
            if options["push"]:
                url = hub_dataset_push(
                    folder=export.folder,
                    repo_id=options["push"],
                    token=token,
                    private=not options["public"],
                    endpoint=options["endpoint"],
                )
                self.stdout.write(f"pushed to {url}")
        except ServiceError as exc:
            raise CommandError(exc.message) from None
