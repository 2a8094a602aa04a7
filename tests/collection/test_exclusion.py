"""Excluding an annotator: logged, their lease released, their open-ballot votes set aside with every
field, their comparisons back in the pool, the counter equal to the votes; idempotent; closed ballots
untouched; their future leases and votes refused (service, page, API)."""

from __future__ import annotations

import re

import pytest
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.test import Client

from collection.crowd import Outcome, participant_code
from collection.exclusion import annotator_exclude, annotator_readmit
from collection.lifecycle import ballot_close
from collection.models import (
    Annotator,
    AnnotatorVotes,
    Assignment,
    Ballot,
    Comparison,
    ExcludedVote,
    Exclusion,
    Study,
    Vote,
)
from collection.voting import NextReason, comparison_next_for, vote_record
from common.errors import ServiceError
from tests.collection.test_views import join, page, vote_url
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("ada", password="x", is_staff=True)


def assert_collection_consistent(study: Study) -> None:
    """The invariants of tests/reliability/invariants.py that an exclusion touches, through the ORM."""
    for ballot in Ballot.objects.filter(study=study):
        assert ballot.votes_recorded == Vote.objects.filter(ballot=ballot).count(), ballot
    voted = Comparison.objects.filter(ballot__study=study, status=Comparison.Status.VOTED)
    assert set(voted.values_list("pk", flat=True)) == set(
        Vote.objects.filter(ballot__study=study).values_list("comparison_id", flat=True)
    )
    voted_assignments = Assignment.objects.filter(ballot__study=study, status=Assignment.Status.VOTED)
    assert set(voted_assignments.values_list("pk", flat=True)) == set(
        Vote.objects.filter(ballot__study=study).values_list("assignment_id", flat=True)
    )
    for annotator_id, total in (
        Annotator.objects.filter(study=study).annotate(cast=Count("votes")).values_list("pk", "cast")
    ):
        counted = AnnotatorVotes.objects.filter(annotator_id=annotator_id).values_list("total", flat=True)
        assert (counted.first() or 0) == total, annotator_id
    leased = Comparison.objects.filter(ballot__study=study, status=Comparison.Status.LEASED)
    assert set(leased.values_list("pk", flat=True)) == set(
        Assignment.objects.filter(ballot__study=study, status=Assignment.Status.ACTIVE).values_list(
            "comparison_id", flat=True
        )
    )


def open_ballot(study: Study) -> Ballot:
    return Ballot.objects.get(study=study, status=Ballot.Status.OPEN)


def test_an_exclusion_sets_the_open_ballots_votes_aside_and_returns_their_comparisons_to_the_pool(researcher):
    study = make_study(tokens=6, ballot_count=1, appearances=4)  # 15 items, 30 comparisons
    crowd = annotators(study, 4)
    vote_until(study, voters=crowd, choose=disagreeing_crowd(study, seed=3), max_votes=17)
    excluded = crowd[1]
    held = comparison_next_for(annotator=excluded).assignment  # a live lease as well
    theirs = list(Vote.objects.filter(annotator=excluded).order_by("pk").values())
    assert len(theirs) == 4  # round robin: votes 2, 6, 10, 14 of the 17
    ballot = open_ballot(study)
    assert ballot.votes_recorded == 17

    result = annotator_exclude(annotator=excluded, reason="answers without reading", by=researcher)

    exclusion = result.exclusion
    assert result.created
    assert (exclusion.reason, exclusion.rule, exclusion.username, exclusion.user) == (
        "answers without reading",
        "",
        "ada",
        researcher,
    )
    assert (exclusion.votes_set_aside, exclusion.leases_released) == (4, 1)
    ballot.refresh_from_db()
    assert ballot.votes_recorded == 13 == Vote.objects.filter(ballot=ballot).count()
    assert not Vote.objects.filter(annotator=excluded).exists()
    # Every field of every vote is kept, with its id and the exclusion.
    kept = list(ExcludedVote.objects.filter(exclusion=exclusion).order_by("vote_id").values())
    as_votes = [
        {k: v for k, v in row.items() if k not in ("id", "vote_id")} | {"id": row["vote_id"]} for row in kept
    ]
    assert as_votes == [{**vote, "exclusion_id": exclusion.pk} for vote in theirs]
    reopened = Comparison.objects.filter(pk__in=[vote["comparison_id"] for vote in theirs])
    assert set(reopened.values_list("status", flat=True)) == {Comparison.Status.OPEN}
    assert Comparison.objects.get(pk=held.comparison_id).status == Comparison.Status.OPEN
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.CANCELLED
    assert Annotator.objects.get(pk=excluded.pk).excluded_at == exclusion.excluded_at
    assert_collection_consistent(study)


def test_the_comparisons_set_free_are_voted_by_the_others_and_the_ballot_closes_without_them():
    study = make_study(tokens=6, ballot_count=1, appearances=4)
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=20)
    annotator_exclude(annotator=crowd[0], reason="by hand")

    vote_until(study, voters=crowd[1:])

    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    ballot = Ballot.objects.get(study=study)
    assert ballot.votes_recorded == 30 == Vote.objects.filter(ballot=ballot).count()
    assert not Vote.objects.filter(annotator=crowd[0]).exists()
    assert ExcludedVote.objects.filter(annotator=crowd[0]).count() == 4
    assert_collection_consistent(study)


def test_votes_in_closed_ballots_stay_where_they_are():
    study = make_study()  # ballots of 30, 16, 8 comparisons
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=30 + 5)  # ballot 1 closed, 5 votes into ballot 2
    assert open_ballot(study).number == 2
    in_ballot_1 = Vote.objects.filter(annotator=crowd[0], ballot__number=1).count()
    assert in_ballot_1 == 6

    result = annotator_exclude(annotator=crowd[0], reason="x")

    assert result.exclusion.votes_set_aside == 1  # their one vote in ballot 2
    assert Vote.objects.filter(annotator=crowd[0], ballot__number=1).count() == 6
    assert open_ballot(study).votes_recorded == 4
    assert_collection_consistent(study)


def test_excluding_twice_changes_nothing(researcher):
    study = make_study()
    crowd = annotators(study, 3)
    vote_until(study, voters=crowd, max_votes=9)
    first = annotator_exclude(annotator=crowd[2], reason="first", by=researcher)
    before = (Exclusion.objects.count(), ExcludedVote.objects.count(), open_ballot(study).votes_recorded)

    again = annotator_exclude(annotator=crowd[2], reason="second", rule="quality_fast")

    assert (again.created, again.exclusion.pk, again.exclusion.reason) == (False, first.exclusion.pk, "first")
    assert (
        Exclusion.objects.count(),
        ExcludedVote.objects.count(),
        open_ballot(study).votes_recorded,
    ) == before


def test_the_database_allows_one_active_exclusion_per_annotator():
    study = make_study()
    (annotator,) = annotators(study, 1)
    annotator_exclude(annotator=annotator, reason="x")
    with pytest.raises(IntegrityError), transaction.atomic():
        Exclusion.objects.create(
            study=study, annotator=annotator, reason="again", excluded_at=study.created_at
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        Exclusion.objects.create(study=study, annotator=annotator, reason="", excluded_at=study.created_at)


@pytest.mark.parametrize("reason", ["", "   "])
def test_an_exclusion_without_a_reason_is_refused(reason):
    study = make_study()
    (annotator,) = annotators(study, 1)
    with pytest.raises(ServiceError, match="give a reason") as refused:
        annotator_exclude(annotator=annotator, reason=reason)
    assert refused.value.status == 400
    assert not Exclusion.objects.exists()


def test_an_excluded_annotator_gets_no_comparison_and_their_vote_is_refused():
    study = make_study()
    (annotator,) = annotators(study, 1)
    held = comparison_next_for(annotator=annotator).assignment
    stale = Annotator.objects.get(pk=annotator.pk)  # a request that read the row before the exclusion
    annotator_exclude(annotator=annotator, reason="x")

    assert comparison_next_for(annotator=annotator).reason == NextReason.EXCLUDED
    assert comparison_next_for(annotator=stale).reason == NextReason.EXCLUDED  # read again in the lease
    with pytest.raises(ServiceError, match="excluded") as refused:
        vote_record(annotator=annotator, assignment_id=held.pk, choice="left")
    assert refused.value.status == 403
    with pytest.raises(ServiceError):  # the stale row: the lease was released, so nothing is taken
        vote_record(annotator=stale, assignment_id=held.pk, choice="left")
    assert not Vote.objects.exists()
    assert not Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE).exists()


def test_a_readmitted_annotator_votes_again_but_the_set_aside_votes_stay_aside(researcher):
    study = make_study(tokens=6, ballot_count=1, appearances=4)
    crowd = annotators(study, 3)
    vote_until(study, voters=crowd, max_votes=6)
    exclusion = annotator_exclude(annotator=crowd[0], reason="x").exclusion

    lifted = annotator_readmit(annotator=crowd[0], by=researcher, reason="a mistake")

    assert lifted.pk == exclusion.pk
    assert (lifted.lifted_by_username, lifted.lift_reason, lifted.active) == ("ada", "a mistake", False)
    assert Annotator.objects.get(pk=crowd[0].pk).excluded_at is None
    assert ExcludedVote.objects.filter(exclusion=exclusion).count() == 2
    assert not Vote.objects.filter(annotator=crowd[0]).exists()
    assert comparison_next_for(annotator=crowd[0]).assignment is not None
    with pytest.raises(ServiceError, match="not excluded") as refused:
        annotator_readmit(annotator=crowd[1])
    assert refused.value.status == 409
    # Excluded again later: a second row in the log, the first one kept.
    annotator_exclude(annotator=crowd[0], reason="again")
    assert Exclusion.objects.filter(annotator=crowd[0]).count() == 2


def test_an_exclusion_after_the_close_leaves_the_closed_ballot_as_it_was():
    study = make_study(tokens=6, ballot_count=1, appearances=4)
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=29)
    last = crowd[29 % 5]
    result = comparison_next_for(annotator=last)
    vote_record(annotator=last, assignment_id=result.assignment.pk, choice="left")
    ballot = Ballot.objects.get(study=study)
    ballot_close(ballot_id=ballot.pk)  # what the task does once the vote commits

    exclusion = annotator_exclude(annotator=crowd[0], reason="x").exclusion

    ballot.refresh_from_db()
    assert (ballot.status, ballot.votes_recorded, exclusion.votes_set_aside) == ("closed", 30, 0)
    assert Vote.objects.filter(annotator=crowd[0]).count() == 6


# --- the pages and the API ------------------------------------------------------------------------


def test_the_voting_page_shows_an_excluded_annotator_the_screened_out_exit(client):
    study = make_study(participant_codes=True)
    annotator = join(client, study, participant="speedy")
    assignment = re.search(r'name="assignment" value="(\d+)"', client.get(vote_url(study)).content.decode())
    annotator_exclude(annotator=annotator, reason="x")

    shown = page(client.get(vote_url(study)))
    assert shown.attributes["nothing"]["data-reason"] == NextReason.EXCLUDED
    assert shown.attributes["completion"]["data-outcome"] == Outcome.SCREENED_OUT
    assert shown.text["completion-code"] == study.screened_out_code
    own = participant_code(study=study, annotator_id=annotator.pk, outcome=Outcome.SCREENED_OUT)
    assert shown.text["personal-code"] == own

    refused = client.post(vote_url(study), {"assignment": assignment.group(1), "choice": "left"})
    assert refused.status_code == 403
    assert page(refused).text["completion-code"] == study.screened_out_code
    assert not Vote.objects.exists()
    entry = page(client.get(f"/s/{study.slug}/"))
    assert entry.text["completion-code"] == study.screened_out_code


def test_the_api_answers_204_excluded_for_next_and_403_for_a_vote():
    study = make_study()
    client = Client()
    annotator = join(client, study, participant="api")
    assignment = client.get(f"/api/studies/{study.slug}/next/").json()["assignment"]
    annotator_exclude(annotator=annotator, reason="x")

    asked = client.get(f"/api/studies/{study.slug}/next/")
    assert (asked.status_code, asked["X-Yardstick-Reason"]) == (204, "excluded")
    voted = client.post(
        "/api/votes/", {"assignment": assignment, "choice": "left"}, content_type="application/json"
    )
    assert voted.status_code == 403
    assert "excluded from this study" in voted.json()["detail"]
    assert not Vote.objects.exists()


def test_staff_exclude_list_and_readmit_through_the_api(researcher):
    study = make_study()
    crowd = annotators(study, 3)
    vote_until(study, voters=crowd, max_votes=6)
    staff = Client()
    staff.force_login(researcher)
    url = f"/api/studies/{study.slug}/annotators/{crowd[1].pk}/exclusion/"

    missing = staff.post(url, {}, content_type="application/json")
    assert (missing.status_code, missing.json()["detail"]) == (
        400,
        "give a reason for the exclusion: it is logged with who excluded the annotator and when",
    )
    created = staff.post(url, {"reason": "clicks without reading"}, content_type="application/json")
    assert created.status_code == 201
    body = created.json()
    assert (body["annotator"], body["reason"], body["username"], body["rule"], body["active"]) == (
        crowd[1].pk,
        "clicks without reading",
        "ada",
        "",
        True,
    )
    assert body["votes_set_aside"] == 2
    again = staff.post(url, {"reason": "twice"}, content_type="application/json")
    assert (again.status_code, again.json()["id"], again.json()["reason"]) == (
        200,
        body["id"],
        "clicks without reading",
    )

    listed = staff.get(f"/api/studies/{study.slug}/exclusions/").json()
    assert [row["id"] for row in listed["results"]] == [body["id"]]

    lifted = staff.delete(url, {"reason": "a mistake"}, content_type="application/json")
    assert (lifted.status_code, lifted.json()["active"], lifted.json()["lift_reason"]) == (
        200,
        False,
        "a mistake",
    )
    assert staff.delete(url).status_code == 409
    other = make_study()
    (stranger,) = annotators(other, 1)
    wrong = staff.post(
        f"/api/studies/{study.slug}/annotators/{stranger.pk}/exclusion/",
        {"reason": "x"},
        content_type="application/json",
    )
    assert wrong.status_code == 404
    assert Exclusion.objects.filter(annotator=stranger).count() == 0


# --- the admin's actions -------------------------------------------------------------------------


def test_the_admin_excludes_the_selected_annotators_with_the_reason_it_asks_for_then_readmits(admin_client):
    from django.urls import reverse

    from collection.models import Exclusion

    study = make_study()
    careless, careful = annotators(study, 2)
    url = reverse("admin:collection_annotator_changelist")
    chosen = {"action": "exclude_selected", "_selected_action": [careless.pk]}

    asked = admin_client.post(url, chosen)  # first the page that asks why
    assert asked.status_code == 200 and 'id="exclusion-reason-form"' in asked.content.decode()
    assert not Exclusion.objects.exists()
    blank = admin_client.post(url, {**chosen, "apply": "1", "reason": "  "})
    assert blank.status_code == 200 and "This field is required." in blank.content.decode()
    assert not Exclusion.objects.exists()

    done = admin_client.post(url, {**chosen, "apply": "1", "reason": "answered in 300 ms throughout"})
    assert done.status_code == 302
    (exclusion,) = Exclusion.objects.all()
    assert (exclusion.annotator_id, exclusion.reason, exclusion.username, exclusion.rule) == (
        careless.pk,
        "answered in 300 ms throughout",
        "admin",
        "",
    )
    assert comparison_next_for(annotator=Annotator.objects.get(pk=careless.pk)).reason == NextReason.EXCLUDED
    assert comparison_next_for(annotator=careful).assignment is not None  # not selected: untouched

    admin_client.post(
        url,
        {
            "action": "readmit_selected",
            "_selected_action": [careless.pk],
            "apply": "1",
            "reason": "a mistake",
        },
    )
    exclusion.refresh_from_db()
    assert exclusion.lifted_at is not None and exclusion.lift_reason == "a mistake"
