"""python manage.py participant_links --study SLUG ids.txt: one signed study link per participant id."""

import csv
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from collection.models import Study
from collection.signing import participant_link

MAX_PARTICIPANT_ID_LENGTH = 128


class Command(BaseCommand):
    help = (
        "Print a CSV of participant_id,link with one signed study link per participant id (one id per "
        "line, from a file or standard input). With 'Require signed links' set on the study, only such "
        "links let a participant in."
    )

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("ids", nargs="?", help="a file with one participant id per line (default: stdin)")
        parser.add_argument("--base-url", default=settings.SITE_URL, help="the site's address (SITE_URL)")

    def handle(self, *args, study, ids, base_url, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise CommandError(f"there is no study {study!r}")
        source = open(ids, encoding="utf-8") if ids else sys.stdin  # noqa: SIM115 (closed below)
        try:
            participant_ids = [line.strip() for line in source if line.strip()]
        finally:
            if ids:
                source.close()
        too_long = [pid for pid in participant_ids if len(pid) > MAX_PARTICIPANT_ID_LENGTH]
        if too_long:
            raise CommandError(
                f"participant ids are at most {MAX_PARTICIPANT_ID_LENGTH} characters: {too_long[0][:40]!r}…"
            )
        study_url = base_url.rstrip("/") + found.get_absolute_url()
        writer = csv.writer(self.stdout, lineterminator="\n")
        writer.writerow(["participant_id", "link"])
        for participant_id in participant_ids:
            writer.writerow(
                [participant_id, participant_link(study_url, found.participant_secret, participant_id)]
            )
