"""A ballot's count of votes in parts (``BallotCounter``): votes that run at once add to different rows.

The counts recorded so far move to part 0 of each ballot; going back sums the parts into the column.
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
INSERT INTO collection_ballotcounter (ballot_id, part, votes)
SELECT id, 0, votes_recorded FROM collection_ballot WHERE votes_recorded <> 0
"""
BACKWARD = """
UPDATE collection_ballot SET votes_recorded = COALESCE(
    (SELECT SUM(c.votes) FROM collection_ballotcounter c WHERE c.ballot_id = collection_ballot.id), 0
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0019_study_hidden_part"),
    ]

    operations = [
        migrations.CreateModel(
            name="BallotCounter",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("part", models.PositiveSmallIntegerField()),
                ("votes", models.IntegerField(default=0)),
                (
                    "ballot",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="counter_parts",
                        to="collection.ballot",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("ballot", "part"), name="ballot_counter_part_unique")
                ],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.RemoveConstraint(
            model_name="ballot",
            name="ballot_votes_within_comparisons",
        ),
        migrations.RemoveField(
            model_name="ballot",
            name="votes_recorded",
        ),
    ]
