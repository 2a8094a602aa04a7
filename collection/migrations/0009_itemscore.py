# The per-ballot scores move from the scoring app to collection, whose close of a ballot writes them.
# Only Django's record of the models changes: the table keeps its name (scoring_itemscore) and its
# rows, and no SQL runs (scoring's 0002 removes the model from scoring's record).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('collection', '0008_bound_messages'),
        ('scoring', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ItemScore',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('wins', models.PositiveIntegerField()),
                        ('ties', models.PositiveIntegerField()),
                        ('appearances', models.PositiveIntegerField()),
                        ('win_ratio', models.FloatField(help_text='x(k); empty when the item got no vote in the ballot.', null=True)),
                        ('rescaled_score', models.FloatField(help_text='y(k)', null=True)),
                        ('score', models.FloatField(help_text='ȳ(k), the running mean of y up to ballot k', null=True)),
                        ('measured', models.PositiveSmallIntegerField(help_text='Ballots up to k in which the item got a vote.')),
                        ('survived', models.BooleanField(help_text='Carried into ballot k+1.')),
                        ('ballot', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='collection.ballot')),
                        ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='collection.item')),
                    ],
                    options={
                        'db_table': 'scoring_itemscore',
                        'ordering': ['ballot', '-score'],
                        'constraints': [models.UniqueConstraint(fields=('ballot', 'item'), name='item_score_unique_per_ballot')],
                    },
                ),
            ],
        ),
    ]
