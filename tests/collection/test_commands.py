"""The demo study."""

import pytest
from django.core.management import call_command

from collection.models import Study

pytestmark = pytest.mark.django_db(transaction=True)  # ballots close in on-commit tasks


def test_the_demo_study_has_990_items_and_the_papers_plan(capsys):
    call_command("load_demo")
    study = Study.objects.get(slug="demo")
    assert (study.status, study.items.count(), study.tokens.count()) == ("running", 990, 45)
    assert (study.ballot_count, study.keep_fraction, study.appearances) == (7, 0.5, 20)
    assert study.ballots.get().comparison_count == 9900
    assert "19660 comparisons" in capsys.readouterr().out
    call_command("load_demo")
    assert Study.objects.filter(slug="demo").count() == 1
    assert "already exists" in capsys.readouterr().out
