"""The load benchmark's wrk generator (tests/reliability/judgements.lua) judges as the voting page does,
and what it counts is what the server stored: the vote phase's votes/s is read from those counts."""

import shutil
from collections import Counter

import pytest
from django.db.models import F

from collection.models import Vote
from tests.factories import make_study
from tests.reliability.bench_load import wrk_vote_phase

pytestmark = pytest.mark.integration


@pytest.fixture
def wrk():
    found = shutil.which("wrk")
    if found is None:  # .ci/run installs it; under CI=true a skip fails the run
        pytest.skip("Debian's wrk is not installed")
    return found


def test_wrk_judges_through_the_api_and_counts_exactly_the_votes_stored(wrk, live_server, tmp_path):
    # 45 items, M = 4: 90 comparisons in the first ballot. Three annotators at full speed fill it
    # within the run, so the loop also meets answers without a next comparison ("ballot closing":
    # no Celery worker runs here) and must wait and ask again rather than stop or count them.
    study = make_study(tokens=10, appearances=4)
    report = wrk_vote_phase(
        live_server.url, study.slug, annotators=3, seconds=3, prefix="wrk-test", run_dir=tmp_path
    )
    stored = Vote.objects.filter(annotator__study=study)
    assert report["joined"] == 3
    assert report["votes"] == stored.count() > 0
    assert report["outcomes"]["vote other"] == 0  # every vote sent was on a held lease: 201
    assert report["errors"] == 0
    assert set(stored.values_list("annotator__participant_id", flat=True)) == {
        "wrk-test-0",
        "wrk-test-1",
        "wrk-test-2",
    }
    choices = Counter(stored.values_list("choice", flat=True))
    assert set(choices) == {"left", "right"}  # at random, both sides over dozens of votes
    # Each vote was on the annotator's own lease, the one the previous answer carried.
    assert not stored.exclude(assignment__annotator=F("annotator")).exists()
    # One request per judgement: GET next gave each annotator their first comparison, and each
    # vote's answer the next one, until the ballot had none left for them (once each at most: no
    # lease lapses within the run, so no comparison comes free again).
    assert report["outcomes"]["next 200"] == 3
    assert report["outcomes"]["vote without next"] <= 3
    if report["outcomes"]["vote without next"]:  # then GET next was answered without a comparison
        assert report["outcomes"]["next other"] > 0
