# The per-ballot scores now belong to collection (its 0009 takes the table over, unchanged). Scoring
# keeps a proxy of them for the admin, whose pages and permissions stay under scoring. No SQL runs.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('collection', '0009_itemscore'),
        ('scoring', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='ItemScore')],
        ),
        migrations.CreateModel(
            name='ItemScore',
            fields=[],
            options={
                'proxy': True,
                'indexes': [],
                'constraints': [],
            },
            bases=('collection.itemscore',),
        ),
    ]
