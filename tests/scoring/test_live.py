"""The live view of a running study (scoring/live.py, its page and GET /api/studies/<slug>/live/): its
figures on a crowd that votes, against values counted by hand or from the votes themselves; who may
read it; and its cost, which does not grow with the votes."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from scipy.stats import binomtest

from collection.checks import check_create
from collection.exclusion import annotator_exclude
from collection.leaving import annotator_finish
from collection.models import Assignment, Ballot, CheckAnswer, ItemScore, Study, Vote
from collection.voting import comparison_next_for, vote_record
from scoring import live
from scoring.live import (
    LIVE_SAMPLES_KEPT_MINUTES,
    live_sample_take,
    live_samples_take,
    study_live,
    wilson_interval,
)
from scoring.models import LiveSample
from scoring.selectors import annotator_figures
from tests.factories import annotators, committed_callbacks, make_study

pytestmark = pytest.mark.django_db

# make_study's defaults: 15 items; n_b = 3, α = 0.5, M = 4 → 30 + 16 + 8 comparisons; M = 8 → 60 + 32 + 16.
PLANNED = (30, 16, 8)
PLANNED_M8 = (60, 32, 16)
HONEST, SPEEDERS = 4, 2


def vote_round_robin(study: Study, voters: list, *, until) -> None:
    """The honest voters pick the item with the lower index in 3 s and answer checks as expected; the
    speeders pick the left side in 0.3 s, checks too. Stops once ``until()`` is true."""
    index_of = dict(study.items.values_list("id", "index"))
    expected = dict(study.checks.values_list("id", "expected"))
    draws = random.Random(3)
    speeders = {voter.pk for voter in voters[HONEST:]}
    while not until():
        progressed = False
        for annotator in voters:
            result = comparison_next_for(annotator=annotator, rng=draws)
            if result.assignment is None:
                continue
            if annotator.pk in speeders:
                choice, ms = "left", 300
            elif result.assignment.quality_check_id:
                choice, ms = expected[result.assignment.quality_check_id], 3000
            else:
                left, right = result.sides["left"]["item"], result.sides["right"]["item"]
                choice, ms = ("left" if index_of[left] < index_of[right] else "right"), 3000
            with committed_callbacks():
                vote_record(
                    annotator=annotator,
                    assignment_id=result.assignment.pk,
                    choice=choice,
                    now=result.assignment.issued_at + timedelta(milliseconds=ms),
                )
            progressed = True
            if until():
                return
        assert progressed


def ballot_votes(study: Study, number: int) -> int:
    return Vote.objects.filter(ballot__study=study, ballot__number=number).count()


@pytest.fixture
def running_study():
    """Ballot 1 closed, ballot 2 open and part voted; one speeder excluded, one honest annotator
    finished, another holding a comparison; gold checks answered."""
    study = make_study(
        seed=1,
        appearances=8,
        check_rate=0.2,
        quality_fast_ms=1000,
        quality_max_fast_share=0.5,
        min_judgements=0,
    )
    item = {row.index: row for row in study.items.all()}
    for number in range(4):
        check_create(
            study=study, kind="gold", left_item=item[number], right_item=item[14 - number], expected="left"
        )
    voters = annotators(study, HONEST + SPEEDERS)
    vote_round_robin(study, voters, until=lambda: ballot_votes(study, 2) >= 12)
    annotator_exclude(annotator=voters[-1], reason="clicks left in 0.3 s", by=None, rule="")
    annotator_finish(annotator=voters[0])
    assert comparison_next_for(annotator=voters[1]).assignment is not None
    study.refresh_from_db()
    assert study.status == Study.Status.RUNNING
    return study


def test_the_live_figures_equal_those_counted_from_the_votes(running_study):
    study = running_study
    now = timezone.now()
    votes = Vote.objects.filter(ballot__study=study).count()
    # Two samples by hand: one 20 minutes ago (outside the ten-minute window), one 5 minutes ago.
    LiveSample.objects.create(
        study=study, minute=now - timedelta(minutes=20), at=now - timedelta(minutes=20), votes=3
    )
    LiveSample.objects.create(
        study=study, minute=now - timedelta(minutes=5), at=now - timedelta(minutes=5), votes=12
    )

    figures = study_live(study=study, now=now, use_cache=False)

    assert figures["votes"] == votes
    per_second = (votes - 12) / 300
    assert figures["rate"]["votes_per_minute"] == pytest.approx(per_second * 60)
    b2 = ballot_votes(study, 2)
    assert [row["votes"] for row in figures["ballots"]] == [PLANNED_M8[0], b2, 0]
    assert [row["comparisons"] for row in figures["ballots"]] == list(PLANNED_M8)
    assert [row["status"] for row in figures["ballots"]] == ["closed", "open", "planned"]
    ends = [row["expected_end"] for row in figures["ballots"]]
    assert ends[0] is None
    assert ends[1] == now + timedelta(seconds=(32 - b2) / per_second)
    assert ends[2] == now + timedelta(seconds=(32 - b2 + 16) / per_second)
    assert figures["remaining_comparisons"] == 32 - b2 + 16
    assert figures["expected_end"] == ends[2]

    first = Ballot.objects.get(study=study, number=1)
    assert figures["ballots"][0]["duration_seconds"] == (first.closed_at - first.opened_at).total_seconds()
    assert figures["ballots"][0]["close_seconds"] == first.close_seconds

    people = figures["annotators"]
    assert (people["total"], people["finished"], people["excluded"], people["active"]) == (
        HONEST + SPEEDERS,
        1,
        1,
        1,
    )
    flagged = int(annotator_figures(study=study).flagged.sum())
    assert flagged >= SPEEDERS  # both speeders answer in 0.3 s, under quality_fast_ms
    assert people["flagged"] == flagged

    answers = CheckAnswer.objects.filter(annotator__study=study)
    correct = answers.filter(correct=True).count()
    assert answers.count() > 0
    assert figures["checks"]["answered"] == answers.count()
    assert figures["checks"]["accuracy"] == correct / answers.count()

    # The top of ballot 1: ȳ from its stored scores, x and its interval recounted from its votes.
    top = figures["top"]
    assert top["ballot"] == 1
    expected_order = list(
        ItemScore.objects.filter(ballot=first)
        .order_by("-score", "item__index")
        .values_list("item", flat=True)[:10]
    )
    assert [row["item"] for row in top["items"]] == expected_order
    for row in top["items"]:
        in_ballot = Vote.objects.filter(ballot=first)
        appearances = (
            in_ballot.filter(left_item=row["item"]).count() + in_ballot.filter(right_item=row["item"]).count()
        )
        wins = (
            in_ballot.filter(left_item=row["item"], choice="left").count()
            + in_ballot.filter(right_item=row["item"], choice="right").count()
        )
        assert row["appearances"] == appearances
        assert row["win_ratio"] == pytest.approx(wins / appearances)
        reference = binomtest(wins, appearances).proportion_ci(confidence_level=0.95, method="wilson")
        assert row["interval"] == pytest.approx([reference.low, reference.high])


def test_the_wilson_interval_counts_a_tie_as_half_a_win():
    # 7 wins and 2 ties in 12: x = 8/12; by hand, z = 1.959964, the Wilson bounds of 8/12 over n = 12.
    low, high = wilson_interval(8, 12)
    reference = binomtest(8, 12).proportion_ci(confidence_level=0.95, method="wilson")
    assert (low, high) == pytest.approx((reference.low, reference.high))
    assert wilson_interval(7 + 2 / 2, 12) == pytest.approx([low, high])
    assert wilson_interval(0, 0) is None


def test_before_a_close_and_without_samples_the_view_says_so():
    study = make_study(seed=2)
    now = timezone.now()
    figures = study_live(study=study, now=now, use_cache=False)
    assert figures["votes"] == 0
    assert figures["rate"]["votes_per_minute"] is None
    assert figures["expected_end"] is None
    assert figures["top"] is None
    assert figures["annotators"]["flagged"] is None
    assert [(s["at"], s["votes"]) for s in figures["series"]] == [(now, 0)]  # the read took one sample


def test_one_sample_a_minute_and_a_day_kept():
    study = make_study(seed=2)
    now = timezone.now().replace(second=10, microsecond=0)
    live_sample_take(study=study, now=now, votes=5)
    live_sample_take(study=study, now=now + timedelta(seconds=30), votes=9)  # the same minute: kept as it was
    assert list(LiveSample.objects.filter(study=study).values_list("votes", flat=True)) == [5]
    later = now + timedelta(minutes=LIVE_SAMPLES_KEPT_MINUTES + 1)
    live_sample_take(study=study, now=later, votes=40)
    assert list(LiveSample.objects.filter(study=study).values_list("votes", flat=True)) == [40]


def test_the_beat_task_samples_the_running_studies_only():
    running = make_study(seed=2)
    draft = make_study(seed=3, start=False)
    assert live_samples_take() == 1
    assert LiveSample.objects.filter(study=running).count() == 1
    assert LiveSample.objects.filter(study=draft).count() == 0


def test_the_series_is_thinned_to_a_bounded_answer():
    study = make_study(seed=2)
    start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=1000)
    LiveSample.objects.bulk_create(
        LiveSample(study=study, minute=start + timedelta(minutes=m), at=start + timedelta(minutes=m), votes=m)
        for m in range(1000)
    )
    figures = study_live(study=study, now=start + timedelta(minutes=999, seconds=30), use_cache=False)
    assert len(figures["series"]) <= live.LIVE_SERIES_POINTS
    assert figures["series"][-1]["votes"] == 999


def live_read_statements(study: Study) -> int:
    now = timezone.now()
    study_live(study=study, now=now, use_cache=False)  # the sample of this minute, the plan and flags cached
    with CaptureQueriesContext(connection) as queries:
        study_live(study=study, now=now, use_cache=False)
    return len(queries)


def test_a_live_read_costs_a_few_statements_however_many_votes():
    study = make_study(seed=4, appearances=8)
    voters = annotators(study, 6)
    vote_round_robin(study, voters, until=lambda: ballot_votes(study, 2) >= 1)  # ballot 1 closed
    few = live_read_statements(study)
    vote_round_robin(study, voters, until=lambda: ballot_votes(study, 2) >= 30)
    many = live_read_statements(study)
    assert Vote.objects.filter(ballot__study=study).count() >= 80
    assert few == many
    assert many <= 7


# --- who may read it -----------------------------------------------------------------------------


@pytest.fixture
def small_study():
    return make_study(seed=6)


def test_the_api_is_for_staff(client, small_study, django_user_model):
    url = f"/api/studies/{small_study.slug}/live/"
    assert client.get(url).status_code in (401, 403)  # anonymous

    client.get(small_study.get_absolute_url())  # an annotator, by the study link's session
    annotator_response = client.get(url)
    assert annotator_response.status_code in (401, 403)

    owner = django_user_model.objects.create_user(username="owner", password="x")
    token = Token.objects.create(user=owner)
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 403

    staff = django_user_model.objects.create_user(username="staff", password="x", is_staff=True)
    staff_token = Token.objects.create(user=staff)
    response = client.get(url, HTTP_AUTHORIZATION=f"Token {staff_token.key}")
    assert response.status_code == 200
    body = response.json()
    assert body["study"] == small_study.slug
    assert [row["comparisons"] for row in body["ballots"]] == list(PLANNED)

    assert (
        client.get("/api/studies/nope/live/", HTTP_AUTHORIZATION=f"Token {staff_token.key}").status_code
        == 404
    )


def test_the_page_is_for_staff(client, small_study, django_user_model):
    url = reverse("scoring:live", args=[small_study.slug])
    assert client.get(url).status_code == 302  # to the admin's login
    owner = django_user_model.objects.create_user(username="owner", password="x")
    client.force_login(owner)
    assert client.get(url).status_code == 302
    staff = django_user_model.objects.create_user(username="staff", password="x", is_staff=True)
    client.force_login(staff)
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-refresh-url="' + url + '"' in html
    assert "scoring/live.js" in html
    assert '<progress value="0" max="30">' in html


def test_the_page_shows_the_figures_of_the_api(client, running_study, django_user_model):
    staff = django_user_model.objects.create_user(username="staff", password="x", is_staff=True)
    client.force_login(staff)
    html = client.get(reverse("scoring:live", args=[running_study.slug])).content.decode()
    figures = study_live(study=running_study)  # the same cached read
    assert f'<dd id="live-votes">{figures["votes"]}</dd>' in html
    assert f'<dd id="live-excluded">{figures["annotators"]["excluded"]}</dd>' in html
    assert f'<progress value="{PLANNED_M8[0]}" max="{PLANNED_M8[0]}">' in html
    assert Assignment.objects.filter(status="active").count() == figures["annotators"]["active"]


def test_a_study_with_a_hidden_test_part_shows_its_live_view_to_its_researchers_only(
    client, django_user_model
):
    study = make_study(seed=7, hidden_share=0.2)  # its top items would show hidden items' scores
    url = f"/api/studies/{study.slug}/live/"
    other = django_user_model.objects.create_user(username="other", password="x", is_staff=True)
    creator = django_user_model.objects.create_user(username="creator", password="x", is_staff=True)
    Study.objects.filter(pk=study.pk).update(created_by=creator)

    client.force_login(other)
    refused_api, refused_page = client.get(url), client.get(reverse("scoring:live", args=[study.slug]))
    client.force_login(creator)
    allowed_api, allowed_page = client.get(url), client.get(reverse("scoring:live", args=[study.slug]))

    assert (refused_api.status_code, refused_page.status_code) == (403, 403)
    assert "hidden test part" in refused_api.json()["detail"]
    assert (allowed_api.status_code, allowed_page.status_code) == (200, 200)
