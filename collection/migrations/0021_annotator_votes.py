"""An annotator's count of votes (``AnnotatorVotes``), which the lease reads instead of their votes.

The counts of the votes recorded so far: in the study, and in the ballot of each annotator's latest
vote (ballots are numbered as they open, so the latest is the one of the highest id).
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
INSERT INTO collection_annotatorvotes (annotator_id, total, ballot_id, in_ballot)
SELECT v.annotator_id, COUNT(*), MAX(latest.ballot_id),
       SUM(CASE WHEN v.ballot_id = latest.ballot_id THEN 1 ELSE 0 END)
FROM collection_vote v
JOIN (SELECT annotator_id, MAX(ballot_id) AS ballot_id FROM collection_vote GROUP BY annotator_id) latest
  ON latest.annotator_id = v.annotator_id
GROUP BY v.annotator_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0020_ballot_counter_parts"),
    ]

    operations = [
        migrations.CreateModel(
            name="AnnotatorVotes",
            fields=[
                (
                    "annotator",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="vote_count",
                        serialize=False,
                        to="collection.annotator",
                    ),
                ),
                ("total", models.IntegerField(default=0)),
                ("in_ballot", models.IntegerField(default=0)),
                (
                    "ballot",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="collection.ballot",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "annotator votes",
            },
        ),
        migrations.RunSQL(FORWARD, migrations.RunSQL.noop),
    ]
