"""Figures stored as JSON hold null where they are undefined (``common.numbers.FiniteJSONEncoder``), and a
submission that failed on our side frees its name: the per-owner name is unique among the others only.

Submissions that failed before: their error, which could be the database's raw message, is replaced by a
plain one, and their seal is freed, as a failure now does (``metrics.services.submission_evaluate``).
"""

import common.numbers
from django.conf import settings
from django.db import migrations, models

FAILED_BEFORE = (
    "the evaluation failed on our side: it does not count against your models for this study, and its name "
    "is free; submit it again"
)


def plain_failures(apps, schema_editor):
    Submission = apps.get_model("metrics", "Submission")
    Submission.objects.filter(status="failed").update(error=FAILED_BEFORE, seal=None)


class Migration(migrations.Migration):

    dependencies = [
        ('collection', '0028_study_fixed_sizes_finish_simulated'),
        ('metrics', '0004_evaluation_parts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='submission',
            name='submission_model_unique_per_owner',
        ),
        migrations.AlterField(
            model_name='evaluation',
            name='result',
            field=models.JSONField(encoder=common.numbers.FiniteJSONEncoder),
        ),
        migrations.AlterField(
            model_name='standing',
            name='coefficients',
            field=models.JSONField(encoder=common.numbers.FiniteJSONEncoder, help_text='ρ_w, τ_w, ρ and τ: value (null when undefined, with the reason), interval, chance level, p-value.'),
        ),
        migrations.AlterField(
            model_name='standing',
            name='replicates',
            field=models.JSONField(encoder=common.numbers.FiniteJSONEncoder, help_text='Each coefficient on every bootstrap replicate of the study (null where undefined).'),
        ),
        migrations.AlterField(
            model_name='studyfigure',
            name='parameters',
            field=models.JSONField(default=dict, encoder=common.numbers.FiniteJSONEncoder),
        ),
        migrations.AlterField(
            model_name='studyfigure',
            name='value',
            field=models.JSONField(encoder=common.numbers.FiniteJSONEncoder),
        ),
        migrations.AlterField(
            model_name='submission',
            name='scores',
            field=models.JSONField(encoder=common.numbers.FiniteJSONEncoder),
        ),
        migrations.AddConstraint(
            model_name='submission',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'failed'), _negated=True), fields=('study', 'owner', 'model_name'), name='submission_model_unique_per_owner'),
        ),
        migrations.RunPython(plain_failures, migrations.RunPython.noop),
    ]
