"""On PostgreSQL a judgement, the vote and the lease that follows it, is one transaction
(``voting._judgement``): what it writes when the vote stands, when it is refused, when the study's
settings changed under this process's copy, when a check is drawn, and when a lease of the same
annotator undoes it.

Committed for real (``transaction=True``), as in a request: no caller's transaction around it.
"""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from collection import checks, study_cache, voting
from collection.models import Annotator, Assignment, Comparison, Study, Vote
from common.errors import ServiceError
from tests.factories import annotators, disagreeing_crowd, make_study

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres(postgres_required):
    assert connection.vendor == "postgresql"


def spy_on_takes(monkeypatch) -> list[bool]:
    """For each comparison taken right after a vote (``voting.take`` from the judgement), whether it ran
    inside the vote's transaction."""
    taken = []
    real = voting.take

    def spy(annotator, standing, now):
        taken.append(connection.in_atomic_block)
        return real(annotator, standing, now)

    monkeypatch.setattr(voting, "take", spy)
    return taken


def test_a_crowd_that_disagrees_votes_a_study_through_in_one_transaction_per_judgement(
    monkeypatch, eager_tasks
):
    study = make_study(tokens=6, ballot_count=2, appearances=4)  # ballots of 30 and 16 comparisons
    crowd = annotators(study, 4)
    choose = disagreeing_crowd(study, seed=3)
    sent = spy_on_takes(monkeypatch)
    held = {who.pk: voting.comparison_next_for(annotator=who) for who in crowd}
    choices, into_the_next_ballot = [], []
    for turn in range(400):
        if Study.objects.get(pk=study.pk).status == Study.Status.FINISHED:
            break
        who = crowd[turn % len(crowd)]
        result = held[who.pk]
        if result.assignment is None:  # told to wait: asks again, as the page does
            held[who.pk] = voting.comparison_next_for(annotator=who)
            continue
        choice = choose(Comparison.objects.get(pk=result.assignment.comparison_id))
        vote, created, following = voting.vote_record_and_next(
            annotator=who, assignment_id=result.assignment.pk, choice=choice
        )
        held[who.pk] = following
        assert created and Vote.objects.get(pk=vote.pk).choice == choice
        choices.append(choice)
        if following.assignment is not None:
            active = Assignment.objects.get(annotator=who, status=Assignment.Status.ACTIVE)
            assert following.assignment.pk == active.pk
            assert following.progress.votes_total == Vote.objects.filter(annotator=who).count()
            if following.assignment.ballot_id != vote.ballot_id:
                into_the_next_ballot.append(vote.ballot_id)
    first, second = study.ballots.order_by("number")
    assert Study.objects.get(pk=study.pk).status == Study.Status.FINISHED
    assert (
        (first.votes_recorded, second.votes_recorded)
        == (30, 16)
        == (first.votes.count(), second.votes.count())
    )
    assert {"left", "right"} <= set(choices) and len(choices) == 46
    assert all(sent) and len(sent) >= len(choices)  # each judgement took its next in the vote's transaction
    # The vote that completed ballot 1 leased again after its commit, where the eager close had
    # opened ballot 2, and was answered with a comparison of ballot 2.
    assert into_the_next_ballot == [first.pk]


def test_the_times_a_judgement_answers_are_the_ones_it_stored_to_the_microsecond():
    # The times a lease answers are the ones it stored: the same values, with the same time zone, for a
    # new lease, a held one and the vote.
    study = make_study(tokens=6, ballot_count=1)
    alice, bob = annotators(study, 2)
    held = voting.comparison_next_for(annotator=alice).assignment
    voting.comparison_next_for(annotator=bob)
    now = timezone.now().replace(microsecond=987_654)
    if now <= held.issued_at:
        now += timedelta(seconds=1)
    vote, created, following = voting.vote_record_and_next(
        annotator=alice, assignment_id=held.pk, choice="right", now=now
    )
    stored_vote = Vote.objects.get(pk=vote.pk)
    assert created and vote.created_at == stored_vote.created_at == now
    assert vote.created_at.utcoffset() == timedelta(0)
    stored = Assignment.objects.get(pk=following.assignment.pk)
    times = (stored.issued_at, stored.expires_at)
    assert (
        (following.assignment.issued_at, following.assignment.expires_at)
        == times
        == (now, now + timedelta(seconds=study.lease_seconds))
    )
    assert {t.tzinfo for t in (following.assignment.issued_at, following.assignment.expires_at)} == {
        stored.expires_at.tzinfo
    }
    again = voting.comparison_next_for(annotator=alice)  # the lease they hold, as stored
    assert again.assignment.pk == stored.pk
    assert (again.assignment.issued_at, again.assignment.expires_at) == times


def test_a_vote_by_owner_counts_only_the_pairs_of_a_study_and_its_own_annotator():
    # The browser's cookie pairs each study with its annotator there; the vote's statement takes the
    # assignment only when its annotator is one of them, paired with the annotator's own study.
    first, second = make_study(tokens=6, ballot_count=1), make_study(tokens=6, ballot_count=1)
    (one,) = annotators(first, 1)
    (other,) = annotators(second, 1, prefix="q")
    mine = voting.comparison_next_for(annotator=one).assignment
    theirs = voting.comparison_next_for(annotator=other).assignment
    for owners, assignment in [
        ({second.pk: other.pk}, mine),  # another annotator's pair
        ({first.pk: other.pk, second.pk: one.pk}, mine),  # both annotators, each paired with the wrong study
        ({first.pk: other.pk, second.pk: one.pk}, theirs),
        ({}, mine),
    ]:
        assert (
            voting.vote_record_and_next_by_owner(owners=owners, assignment_id=assignment.pk, choice="left")
            is None
        ), owners
    assert not Vote.objects.exists()
    assert set(Assignment.objects.values_list("status", flat=True)) == {"active"}
    owners = {first.pk: one.pk, second.pk: other.pk}  # the cookie of a browser in both studies
    for assignment, annotator in [(theirs, other), (mine, one)]:
        who, vote, created, _next = voting.vote_record_and_next_by_owner(
            owners=owners, assignment_id=assignment.pk, choice="right"
        )
        assert (who.pk, who.study_id, vote.assignment_id, created) == (
            annotator.pk,
            annotator.study_id,
            assignment.pk,
            True,
        )
    assert sorted(Vote.objects.values_list("annotator_id", flat=True)) == sorted([one.pk, other.pk])


def test_a_refused_vote_leases_nothing():
    study = make_study(tokens=6, ballot_count=1)
    (alice,) = annotators(study, 1)
    held = voting.comparison_next_for(annotator=alice).assignment
    later = timezone.now() + timedelta(seconds=study.lease_seconds + 1)
    leased_before = Comparison.objects.filter(status="leased").count()
    with pytest.raises(ServiceError) as refused:
        voting.vote_record_and_next(annotator=alice, assignment_id=held.pk, choice="left", now=later)
    assert refused.value.status == 409
    assert not Vote.objects.exists()
    assert list(Assignment.objects.values_list("pk", "status")) == [(held.pk, "active")]
    assert Comparison.objects.filter(status="leased").count() == leased_before == 1


def test_after_a_change_of_settings_the_lease_follows_the_new_ones():
    # This process's copy of the study is older than the study: the vote reads the study's version, and
    # the lease that follows it takes the new settings (its length and cap), not the copy's.
    study = make_study(tokens=6, ballot_count=1, lease_seconds=300)
    client = Client()
    entry = reverse("collection:entry", args=[study.slug])
    client.get(entry, {"participant": "p1"})
    client.post(entry, {"consent": "yes", "participant": "p1"})
    token = client.cookies["csrftoken"].value
    first = client.get(f"/api/studies/{study.slug}/next/").json()
    voted = client.post(
        "/api/votes/", {"assignment": first["assignment"], "choice": "left"},
        content_type="application/json", HTTP_X_CSRFTOKEN=token,
    ).json()  # fmt: skip
    assert study_cache.latest_study(study.pk).lease_seconds == 300  # this process's copy
    changed = Study.objects.get(pk=study.pk)
    changed.lease_seconds = 60
    changed.save()
    before = timezone.now()
    answer = client.post(
        "/api/votes/", {"assignment": voted["next"]["assignment"], "choice": "right"},
        content_type="application/json", HTTP_X_CSRFTOKEN=token,
    )  # fmt: skip
    assert answer.status_code == 201
    following = Assignment.objects.get(pk=answer.json()["next"]["assignment"])
    assert (following.expires_at - before).total_seconds() <= 61
    assert Vote.objects.count() == 2


def test_a_judgement_draws_its_check_once_and_serves_the_check_when_drawn(monkeypatch):
    study = make_study(tokens=6, ballot_count=1, check_rate=0.5)
    left, right = study.items.order_by("pk")[:2]
    checks.check_create(study=study, kind="gold", left_item=left, right_item=right, expected="left")
    (alice,) = annotators(study, 1)
    draws = []
    due = iter([False, False, True])  # the first lease, then two judgements

    def drawn(*, rate, rng=None):
        draws.append(rate)
        return next(due)

    monkeypatch.setattr(checks, "check_due", drawn)
    sent = spy_on_takes(monkeypatch)
    held = voting.comparison_next_for(annotator=alice).assignment
    sent.clear()
    _vote, _created, following = voting.vote_record_and_next(
        annotator=alice, assignment_id=held.pk, choice="left"
    )
    assert len(draws) == 2 and len(sent) == 1 and following.assignment.comparison_id is not None
    _vote, _created, check = voting.vote_record_and_next(
        annotator=alice, assignment_id=following.assignment.pk, choice="right"
    )
    assert len(draws) == 3 and len(sent) == 1  # drawn: the check is served in place of a comparison
    assert check.assignment.quality_check_id is not None and check.assignment.comparison_id is None


def test_a_judgement_undone_by_a_lease_of_the_same_annotator_is_made_again_and_recorded_once(monkeypatch):
    # The whole transaction is undone (the vote with the lease) and made again: the vote is recorded
    # once, and the lease that follows reads where the annotator stands.
    study = make_study(tokens=6, ballot_count=1)
    (alice,) = annotators(study, 1)
    held = voting.comparison_next_for(annotator=alice).assignment
    raised = []
    real = voting.take

    def lost_race_once(annotator, standing, now):
        if not raised:
            raised.append(annotator.pk)
            raise IntegrityError("one_active_assignment_per_annotator")
        return real(annotator, standing, now)

    monkeypatch.setattr(voting, "take", lost_race_once)
    vote, created, following = voting.vote_record_and_next(
        annotator=alice, assignment_id=held.pk, choice="left"
    )
    assert raised == [alice.pk] and created
    assert list(Vote.objects.values_list("assignment_id", "choice")) == [(held.pk, "left")]
    assert following.assignment is not None and following.assignment.pk != held.pk
    assert Annotator.objects.get(pk=alice.pk).assignments.filter(status="active").count() == 1
