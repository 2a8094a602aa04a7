"""The load benchmark's wrk generator (tests/reliability/judgements.lua) judges as the voting page does,
and what it counts is what the server stored: the vote phase's votes/s is read from those counts."""

import shutil
import time
from collections import Counter

import pytest
from django.db.models import F

from collection.models import Assignment, Vote
from collection.voting import ALL_LEASED_RETRY_SECONDS, ALL_LEASED_RETRY_SPREAD, comparison_next_for
from tests.factories import annotators, make_study
from tests.reliability.bench_load import joined_credentials, run_judgements_wrk, wrk_vote_phase

pytestmark = pytest.mark.integration


@pytest.fixture
def wrk():
    found = shutil.which("wrk")
    if found is None:  # .ci/run installs it; under CI=true a skip fails the run
        pytest.skip("Debian's wrk is not installed")
    return found


def test_wrk_judges_through_the_api_and_counts_the_votes_stored(wrk, live_server, tmp_path, rates):
    rates(None, None)  # three annotators on one address at full speed: no rate limit in the way
    # 45 items, M = 4: 90 comparisons in the first ballot. Three annotators at full speed fill it
    # within the run, so the loop also meets answers without a next comparison ("ballot closing":
    # no Celery worker runs here) and must wait and ask again rather than stop or count them.
    study = make_study(tokens=10, appearances=4)
    report = wrk_vote_phase(
        live_server.url, study.slug, annotators=3, seconds=3, prefix="wrk-test", run_dir=tmp_path
    )
    stored = Vote.objects.filter(annotator__study=study)
    assert report["joined"] == 3
    # Every vote answered 201 was stored; at most one more per annotator was stored unanswered, sent
    # as wrk stopped (its connection was closed before the answer came back).
    assert 0 < report["votes"] <= stored.count() <= report["votes"] + 3
    # Every vote sent was on a held lease (201): none refused, sent twice or over a limit.
    assert {
        outcome: report["outcomes"][outcome] for outcome in ("vote 200", "vote 409", "vote 429", "vote other")
    } == dict.fromkeys(("vote 200", "vote 409", "vote 429", "vote other"), 0), report["unexpected_answers"]
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
    # Every answer without a comparison said that the last comparisons were leased to the others, or
    # that the ballot was closing (no Celery worker runs here), with a wait of at least 2 s
    # (lifecycle.MIN_CLOSE_WAIT_SECONDS, voting.ALL_LEASED_RETRY_SECONDS), which the annotator waited
    # before asking again: within the 3 s run, at most once after a vote's answer without a comparison.
    waited = report["outcomes"]["vote without next"] + report["outcomes"]["next 204"]
    waits = report["waits"]
    assert waits["ballot_closing"] + waits["all_leased"] == waited, (waits, report["outcomes"])
    assert waits["finished"] == waits["none_for_you"] == waits["other"] == 0
    assert report["outcomes"]["next 204"] <= report["outcomes"]["vote without next"]
    if waited:
        assert report["longest_retry_after_s"] >= 2
    assert report["outcomes"]["next other"] == 0


def test_a_crowd_that_thinks_starts_its_measured_run_from_the_comparisons_it_held(
    wrk, live_server, tmp_path, rates
):
    rates(None, None)
    # bench_load's crowd-wrk phase: a first run of arrivals (GET next spread over the think time,
    # then judgements after thinking), which writes the comparison each annotator holds; a second,
    # measured run that starts from them. 990 comparisons: the ballot never runs out here.
    study = make_study(tokens=45, appearances=44)
    credentials = joined_credentials(
        live_server.url, study.slug, annotators=4, prefix="think", run_dir=tmp_path
    )
    held = tmp_path / "held.txt"
    arrivals = run_judgements_wrk(
        live_server.url, study.slug, credentials=credentials, annotators=4, seconds=2, think_ms=100,
        spread_ms=100, held_out=held,
    )  # fmt: skip
    # In the threads' order, each annotator's comparison: the one they hold, or the one whose vote was
    # on its way as wrk stopped (stored, its answer never read): voted again, it is answered 200 with
    # the next comparison, as a resent vote is.
    held_rows = [
        Assignment.objects.values_list("annotator__participant_id", "status").get(pk=int(line))
        for line in held.read_text().splitlines()
    ]
    assert [who for who, _ in held_rows] == [f"think-{number}" for number in range(4)]
    assert {status for _, status in held_rows} <= {"active", "voted"}
    stale = sum(status == "voted" for _, status in held_rows)
    measured = run_judgements_wrk(
        live_server.url, study.slug, credentials=credentials, annotators=4, seconds=2, think_ms=100,
        held_in=held,
    )  # fmt: skip

    assert arrivals["outcomes"]["next 200"] == 4  # each annotator's first comparison
    assert measured["outcomes"]["next 200"] == 0  # none asked again: each voted on what it held
    assert measured["outcomes"]["vote 200"] == stale
    assert arrivals["errors"] == measured["errors"] == 0
    # Think time: with a mean of 100 ms, far fewer votes than at full speed, and every one stored.
    total = arrivals["votes"] + measured["votes"]
    assert 4 <= measured["votes"] <= 4 * 2 / 0.1 * 2
    assert total <= Vote.objects.filter(annotator__study=study).count() <= total + 8


def test_an_annotator_with_nothing_to_judge_waits_as_long_as_the_server_says(
    wrk, live_server, tmp_path, rates
):
    rates(None, None)
    study = make_study(tokens=3, ballot_count=1, appearances=2)  # 3 comparisons
    for holder in annotators(study, 3):  # every comparison leased to someone else
        assert comparison_next_for(annotator=holder).assignment is not None
    credentials = joined_credentials(
        live_server.url, study.slug, annotators=1, prefix="waiting", run_dir=tmp_path
    )
    started = time.monotonic()
    report = run_judgements_wrk(
        live_server.url, study.slug, credentials=credentials, annotators=1, seconds=30,
        until=lambda: time.monotonic() - started > 5,
    )  # fmt: skip

    # Told "all leased, Retry-After 2 to 4", the annotator asks again after that, as the voting page
    # does: at 0 s, then once or twice before the run is stopped at 5 to 5.5 s; at the 250 ms used
    # when the server names no wait, it would have asked about 20 times.
    assert (ALL_LEASED_RETRY_SECONDS, ALL_LEASED_RETRY_SPREAD) == (3, 1)
    assert 2 <= report["outcomes"]["next 204"] <= 3
    assert report["waits"] == {
        "all_leased": report["outcomes"]["next 204"], "ballot_closing": 0, "finished": 0, "none_for_you": 0,
        "other": 0,
    }  # fmt: skip
    assert 2 <= report["longest_retry_after_s"] <= 4
    assert report["votes"] == 0 and report["errors"] == 0
    # wrk was interrupted when ``until`` said so, and still reported: not after the 30 s asked for.
    assert report["seconds"] < 10
