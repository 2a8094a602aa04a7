"""A study whose ballots were all closed before anyone voted has an instrument card, with its resolution
undefined: found by the fuzzing with odd values (the draft started, then closed ballot after ballot)."""

import pytest
from django.test import Client

from collection.lifecycle import study_close_current_ballot
from tests.factories import committed_callbacks, make_study

pytestmark = pytest.mark.django_db


def test_a_study_finished_without_a_vote_has_a_card_whose_resolution_is_undefined():
    study = make_study()  # three ballots
    for _ in range(3):
        with committed_callbacks():
            study_close_current_ballot(study=study)
    study.refresh_from_db()

    response = Client().get(f"/api/studies/{study.slug}/card/")

    assert (study.status, response.status_code) == ("finished", 200)
    resolution = response.json()["resolution"]
    assert (resolution["resolution"], resolution["compared_pairs"]) == (None, 0)
