"""Assignment and votes: leases, caps, never the same pair twice, a vote recorded once."""

from collections import Counter
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from collection.lifecycle import leases_expire, study_start
from collection.models import Assignment, Ballot, Comparison, Study, Vote
from collection.studies import study_plan
from collection.voting import NextReason, comparison_next_for, vote_record
from common.errors import ServiceError
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db


def test_starting_opens_ballot_one_with_every_item_m_times():
    study = make_study(tokens=6, appearances=4)
    ballot = study.ballots.get()
    assert (ballot.number, ballot.status, ballot.comparison_count) == (1, "open", 30)
    comparisons = list(ballot.comparisons.values_list("pair_low", "pair_high"))
    assert len(comparisons) == 30 and len(set(comparisons)) == 30  # 15 items, M = 4 < 14: no repeat
    assert np.bincount(np.array(comparisons).ravel()).tolist() == [4] * 15


def test_a_comparison_budget_becomes_the_largest_even_m_at_start():
    study = make_study(start=False, appearances=None, comparison_budget=200)
    assert study_plan(study=study).appearances == 2 * (200 // (15 + 8 + 4))  # M = 14
    study_start(study=study)
    study.refresh_from_db()
    assert study.appearances == 14 and study.ballots.get().comparison_count == 15 * 14 // 2


def test_starting_twice_is_refused():
    study = make_study()
    with pytest.raises(ServiceError, match="already running"):
        study_start(study=study)


def test_the_same_seed_draws_the_same_schedule():
    first = make_study(start=False)
    second = make_study(start=False)
    second.seed = first.seed
    second.save()
    study_start(study=first)
    study_start(study=second)
    schedule = lambda s: list(  # noqa: E731
        Comparison.objects.filter(ballot__study=s).order_by("position").values_list("pair_low", "pair_high")
    )
    assert schedule(first) == schedule(second)


def test_an_annotator_keeps_the_comparison_they_hold_and_others_get_another():
    study = make_study()
    alice, bob = annotators(study, 2)
    first = comparison_next_for(annotator=alice).assignment
    assert comparison_next_for(annotator=alice).assignment.pk == first.pk
    assert comparison_next_for(annotator=bob).assignment.comparison_id != first.comparison_id


def test_an_expired_lease_returns_the_comparison_to_the_pool_and_its_vote_is_refused():
    study = make_study(lease_seconds=60)
    alice, bob = annotators(study, 2)
    now = timezone.now()
    held = comparison_next_for(annotator=alice, now=now).assignment
    later = now + timedelta(seconds=61)
    taken = comparison_next_for(annotator=bob, now=later).assignment
    assert taken.comparison_id == held.comparison_id
    assert Assignment.objects.get(pk=held.pk).status == "expired"
    with pytest.raises(ServiceError) as raised:
        vote_record(annotator=alice, assignment_id=held.pk, choice="left", now=later)
    assert raised.value.status == 409 and "ran out" in raised.value.message
    vote, created = vote_record(annotator=bob, assignment_id=taken.pk, choice="right", now=later)
    assert created and vote.annotator == bob


def test_the_sweep_frees_leases_that_ran_out():
    study = make_study(lease_seconds=60)
    (alice,) = annotators(study, 1)
    now = timezone.now()
    held = comparison_next_for(annotator=alice, now=now).assignment
    assert leases_expire(now=now + timedelta(seconds=61)) == 1
    assert Comparison.objects.get(pk=held.comparison_id).status == "open"


def test_a_vote_is_recorded_once_and_a_retry_returns_it():
    study = make_study()
    (alice,) = annotators(study, 1)
    assignment = comparison_next_for(annotator=alice).assignment
    vote, created = vote_record(
        annotator=alice, assignment_id=assignment.pk, choice="left", client_response_ms=1234
    )
    again, created_again = vote_record(annotator=alice, assignment_id=assignment.pk, choice="right")
    assert (created, created_again) == (True, False)
    assert again.pk == vote.pk and again.choice == "left" and Vote.objects.count() == 1
    assert vote.client_response_ms == 1234 and vote.response_ms >= 0
    comparison = Comparison.objects.get(pk=assignment.comparison_id)
    assert (comparison.status, vote.left_item_id, vote.right_item_id) == (
        "voted",
        comparison.left_item_id,
        comparison.right_item_id,
    )
    assert Ballot.objects.get(pk=comparison.ballot_id).votes_recorded == 1


def test_the_response_time_is_measured_on_the_server():
    study = make_study()
    (alice,) = annotators(study, 1)
    now = timezone.now()
    assignment = comparison_next_for(annotator=alice, now=now).assignment
    vote, _ = vote_record(
        annotator=alice, assignment_id=assignment.pk, choice="left", now=now + timedelta(seconds=2.5)
    )
    assert vote.response_ms == 2500


def test_votes_on_someone_elses_assignment_are_not_found():
    study = make_study()
    alice, bob = annotators(study, 2)
    assignment = comparison_next_for(annotator=alice).assignment
    with pytest.raises(ServiceError) as raised:
        vote_record(annotator=bob, assignment_id=assignment.pk, choice="left")
    assert raised.value.status == 404 and Vote.objects.count() == 0


def test_ties_and_unknown_choices_are_refused_unless_offered():
    study = make_study()
    (alice,) = annotators(study, 1)
    assignment = comparison_next_for(annotator=alice).assignment
    with pytest.raises(ServiceError, match="does not allow ties"):
        vote_record(annotator=alice, assignment_id=assignment.pk, choice="tie")
    with pytest.raises(ServiceError, match="choice must be one of left, right, tie, got 'up'"):
        vote_record(annotator=alice, assignment_id=assignment.pk, choice="up")
    tie_study = make_study(allow_ties=True)
    (carol,) = annotators(tie_study, 1, prefix="c")
    tied = comparison_next_for(annotator=carol).assignment
    assert vote_record(annotator=carol, assignment_id=tied.pk, choice="tie")[0].choice == "tie"


def test_an_annotator_never_judges_the_same_pair_twice():
    # 3 tokens → 3 items; M = 6 > 2, so every pair appears 3 times in the ballot.
    study = make_study(tokens=3, ballot_count=1, appearances=6, keep_fraction=0.5)
    (alice,) = annotators(study, 1)
    judged = []
    while (result := comparison_next_for(annotator=alice)).assignment is not None:
        comparison = result.assignment.comparison
        judged.append((comparison.pair_low, comparison.pair_high))
        vote_record(annotator=alice, assignment_id=result.assignment.pk, choice="left")
    assert sorted(judged) == [(0, 1), (0, 2), (1, 2)]
    assert result.reason == NextReason.NONE_FOR_YOU


def test_the_cap_per_ballot_ends_an_annotators_turn():
    study = make_study(votes_per_annotator_per_ballot=3)
    (alice,) = annotators(study, 1)
    assert vote_until(study, voters=[alice]) == 3
    assert comparison_next_for(annotator=alice).reason == NextReason.QUOTA


def test_when_every_free_comparison_is_held_others_are_told_to_wait():
    study = make_study(tokens=3, ballot_count=1, appearances=2)  # 3 comparisons
    holders = annotators(study, 3)
    for annotator in holders:
        assert comparison_next_for(annotator=annotator).assignment is not None
    (late,) = annotators(study, 1, prefix="late")
    result = comparison_next_for(annotator=late)
    # About one judgement's time (those leases are being voted on), not a lease's 60 s.
    assert result.reason == NextReason.ALL_LEASED and result.retry_after_seconds in (2, 3, 4)


def test_the_wait_for_leased_comparisons_is_spread_so_that_a_crowd_does_not_return_at_once():
    study = make_study(tokens=3, ballot_count=1, appearances=2)  # 3 comparisons
    for annotator in annotators(study, 3):
        assert comparison_next_for(annotator=annotator).assignment is not None
    late = annotators(study, 60, prefix="late")
    waits = Counter(comparison_next_for(annotator=annotator).retry_after_seconds for annotator in late)
    # 2, 3 and 4 s, each drawn with a chance of a third: all three among 60 (missing one: 3 × (2/3)^60,
    # about 10^-10), none drawn more than 40 times (a binomial tail under 10^-9).
    assert set(waits) == {2, 3, 4}
    assert max(waits.values()) <= 40


def test_a_draft_and_a_finished_study_give_no_comparison():
    draft = make_study(start=False)
    (alice,) = annotators(draft, 1)
    assert comparison_next_for(annotator=alice).reason == NextReason.NOT_STARTED
    finished = make_study()
    voters = annotators(finished, 5, prefix="f")
    vote_until(finished, voters=voters)
    finished.refresh_from_db()
    assert finished.status == Study.Status.FINISHED
    assert comparison_next_for(annotator=voters[0]).reason == NextReason.FINISHED
