"""Progress in percent is rounded down: 100% means done, never 199 of 200."""

import re

import pytest
from django.test import Client

from collection.admin.display import progress_bar
from collection.selectors import AnnotatorProgress, study_progress
from common.numbers import percent_done
from scoring.models import SimulationRun
from tests.factories import annotators, make_study, vote_until


@pytest.mark.parametrize(
    ("done", "total", "percent"),
    [(0, 200, 0), (1, 200, 0), (199, 200, 99), (200, 200, 100), (1, 3, 33), (2, 3, 66), (5, 4, 100)],
)
def test_a_percentage_done_is_rounded_down_and_100_only_when_complete(done, total, percent):
    assert percent_done(done, total) == percent


def test_an_annotator_at_199_of_200_sees_99_percent():
    progress = AnnotatorProgress(
        ballot_number=1,
        ballot_count=3,
        votes_in_ballot=199,
        cap=200,
        votes_total=199,
        ballot_voted=199,
        ballot_comparisons=200,
    )

    assert (progress.quota_percent, progress.ballot_percent) == (99, 99)


def test_the_admins_progress_bar_and_a_simulation_at_199_of_200_say_99_percent():
    assert progress_bar(199, 200) == '<progress value="199" max="200">99%</progress>'
    assert SimulationRun(done=199, repetitions=200).progress_percent == 99


@pytest.mark.django_db
def test_a_ballot_one_vote_short_of_complete_is_not_shown_as_100_percent(django_user_model):
    # 21 tokens: 210 items and, with M = 2, 210 comparisons; 209 votes are 99.5%.
    study = make_study(tokens=21, ballot_count=2, appearances=2, seed=2)
    assert vote_until(study, voters=annotators(study, 6), max_votes=209) == 209
    staff = django_user_model.objects.create_user(
        "researcher", password="x", is_staff=True, is_superuser=True
    )
    client = Client()
    client.force_login(staff)

    assert [(ballot["votes"], ballot["percent"]) for ballot in study_progress(study=study)] == [(209, 99)]
    api = client.get(f"/api/studies/{study.slug}/progress/").json()
    assert [ballot["percent"] for ballot in api] == [99]
    page = client.get(f"/admin/collection/study/{study.pk}/change/").content.decode()
    assert re.findall(r'<progress value="209" max="210">(\d+)%</progress>', page) == ["99"]
    listing = client.get("/admin/collection/study/").content.decode()
    assert re.findall(r'<progress value="209" max="210">(\d+)%</progress>', listing) == ["99"]
