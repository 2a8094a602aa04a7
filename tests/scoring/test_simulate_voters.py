"""The simulated annotators (python manage.py simulate_voters)."""

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count

from collection.models import Assignment, Ballot, Comparison, Study, Vote
from metrics.correlation import weighted_spearman
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)  # ballots close in on-commit tasks


def test_simulated_annotators_run_a_study_to_its_final_ranking(capsys):
    study = make_study(tokens=8, ballot_count=3, appearances=6)  # 28 items
    call_command(
        "simulate_voters",
        "--study",
        study.slug,
        "--voters",
        "10",
        "--distribution",
        "exponential",
        "--nonconformity-min",
        "0.01",
        "--nonconformity-max",
        "0.02",
        "--oversight-min",
        "0",
        "--oversight-max",
        "0",
    )
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    total = sum(study.ballots.values_list("comparison_count", flat=True))
    votes = Vote.objects.filter(ballot__study=study)
    # Every comparison voted exactly once, every ballot closed once, its counter equal to its votes.
    assert votes.count() == votes.values("comparison").distinct().count() == total
    comparisons = Comparison.objects.filter(ballot__study=study)
    assert set(comparisons.values_list("status", flat=True)) == {Comparison.Status.VOTED}
    ballots = study.ballots.annotate(votes_counted=Count("votes")).order_by("number")
    assert [(b.status, b.votes_recorded, b.votes_counted) for b in ballots] == [
        (Ballot.Status.CLOSED, b.comparison_count, b.comparison_count) for b in ballots
    ]
    assert not Assignment.objects.filter(annotator__study=study, status=Assignment.Status.ACTIVE).exists()
    output = capsys.readouterr()
    assert f"{total} votes by 10 simulated annotators" in output.out
    assert "vote refused" not in output.err
    assert sorted(study.items.values_list("final_rank", flat=True)) == list(range(1, 29))


def test_a_nearly_noiseless_crowd_recovers_the_top_of_the_ranking():
    # The simulated truth is a seeded permutation of exponential similarities; its top items must
    # come out on top: ρ_w of the final ranking against |z| is high.
    import numpy as np

    from scoring.simulation import theoretical_ranks, underlying_similarity

    study = make_study(tokens=10, ballot_count=3, appearances=8)  # 45 items
    call_command(
        "simulate_voters",
        "--study",
        study.slug,
        "--voters",
        "20",
        "--distribution",
        "exponential",
        "--nonconformity-min",
        "0.01",
        "--nonconformity-max",
        "0.02",
        "--oversight-min",
        "0",
        "--oversight-max",
        "0",
        "--seed",
        "3",
    )
    truth = theoretical_ranks(np.random.default_rng(3).permutation(underlying_similarity("exponential", 45)))
    final = np.array(
        [rank for _, rank in sorted(study.items.values_list("index", "final_rank"))], dtype=float
    )
    assert weighted_spearman(final, truth) > 0.8


def test_it_stops_after_max_votes_and_refuses_studies_that_do_not_run(capsys):
    study = make_study()
    call_command("simulate_voters", "--study", study.slug, "--max-votes", "7", "--voters", "3")
    assert Vote.objects.count() == 7
    draft = make_study(start=False)
    with pytest.raises(CommandError, match="is draft; start it first"):
        call_command("simulate_voters", "--study", draft.slug)
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("simulate_voters", "--study", "nope")


def _simulate(study, *extra):
    call_command(
        "simulate_voters", "--study", study.slug, "--distribution", "exponential", "--wait", "0.5", *extra
    )


def test_a_participants_lease_that_holds_the_ballot_is_named_not_a_missing_worker():
    from collection.identity import annotator_consent, annotator_for
    from collection.voting import comparison_next_for

    study = make_study(tokens=6, ballot_count=2, appearances=4, lease_seconds=600)
    person = annotator_consent(annotator=annotator_for(study=study, participant_id="prolific-abc"))
    held = comparison_next_for(annotator=person).assignment  # a real participant reads, and walks away
    with pytest.raises(CommandError) as refused:
        _simulate(study, "--voters", "8")
    message = str(refused.value)
    assert "1 comparison of ballot 1 is leased by participants who are not simulated" in message
    assert "Celery" not in message
    ballot = study.ballots.get(number=1)
    assert ballot.votes_recorded == ballot.comparison_count - 1  # everything else was voted
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.ACTIVE


def test_simulated_annotators_who_judged_every_pair_left_are_told_to_add_voters():
    # 3 items appear 4 times each in ballot 1: the 3 pairs come back, and one annotator judges a pair once.
    study = make_study(tokens=3, ballot_count=2, appearances=4)
    with pytest.raises(CommandError) as refused:
        _simulate(study, "--voters", "1")
    assert "have judged every pair of the" in str(refused.value)
    assert "run it with more --voters" in str(refused.value)


def test_the_annotators_it_creates_are_marked_simulated_and_a_person_is_not():
    from collection.identity import annotator_consent, annotator_for
    from collection.models import Annotator

    study = make_study()
    person = annotator_consent(annotator=annotator_for(study=study, participant_id="prolific-abc"))
    call_command("simulate_voters", "--study", study.slug, "--max-votes", "5", "--voters", "3")
    assert sorted(
        Annotator.objects.filter(study=study, simulated=True).values_list("participant_id", flat=True)
    ) == [
        "sim-0",
        "sim-1",
        "sim-2",
    ]
    person.refresh_from_db()
    assert person.simulated is False


def test_a_participant_who_is_a_person_is_never_taken_over_by_the_simulation():
    from collection.identity import annotator_consent, annotator_for

    study = make_study()
    # A real participant whose id happens to start with the prefix.
    person = annotator_consent(annotator=annotator_for(study=study, participant_id="sim-1"))
    with pytest.raises(CommandError, match="participant 'sim-1' of this study is a person.*--prefix"):
        call_command("simulate_voters", "--study", study.slug, "--max-votes", "5", "--voters", "3")
    assert Vote.objects.count() == 0
    person.refresh_from_db()
    assert person.simulated is False


def test_progress_and_summary_count_check_answers_apart_from_votes(capsys):
    from collection.checks import check_create
    from collection.models import CheckAnswer

    study = make_study(tokens=6, ballot_count=2, appearances=4, check_rate=0.5)  # 15 items, 30 + 16
    items = list(study.items.order_by("index"))
    for left, right in ((0, 14), (1, 13), (2, 12)):
        check_create(
            study=study, kind="gold", left_item=items[left], right_item=items[right], expected="left"
        )
    _simulate(study, "--voters", "6")
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    votes = Vote.objects.filter(ballot__study=study).count()
    answers = CheckAnswer.objects.filter(annotator__study=study).count()
    assert votes == 46 and answers > 0
    output = capsys.readouterr()
    assert f"{votes} votes and {answers} check answers by 6 simulated annotators" in output.out
    last_progress = output.err.split("\r")[-1]
    assert f"{votes} votes, {answers} check answers, ballot 2/2" in last_progress


def test_by_default_it_waits_as_long_as_the_lease_and_says_why(capsys):
    from datetime import timedelta

    from django.utils import timezone

    from collection.identity import annotator_consent, annotator_for
    from collection.voting import comparison_next_for

    study = make_study(tokens=6, ballot_count=2, appearances=4, lease_seconds=600)
    person = annotator_consent(annotator=annotator_for(study=study, participant_id="prolific-abc"))
    held = comparison_next_for(annotator=person).assignment  # an open voting page, then nobody there
    # The person's lease lapses 3 s from now (a lease of 600 s, taken almost 600 s ago).
    lapses = timezone.now() + timedelta(seconds=3)
    Assignment.objects.filter(pk=held.pk).update(expires_at=lapses)
    Comparison.objects.filter(pk=held.comparison_id).update(lease_expires_at=lapses)
    call_command("simulate_voters", "--study", study.slug, "--distribution", "exponential", "--voters", "8")
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED  # 120 s would have been enough here; 630 s is announced
    err = capsys.readouterr().err
    assert "1 comparison of ballot 1 is leased by participants who are not simulated" in err
    assert "waiting up to 630 s (the study's lease of 600 s and 30 s more)" in err
