"""Checks on a simulated crowd with bad annotators: honest §4.1 voters, speeders, annotators who always
pick one side and random clickers vote through the services while the lease mixes gold comparisons and
instructed-response checks into their streams. The checks' figures tell the bad from the honest, the
flag at two failed checks marks exactly the bad ones, and no answer to a check counts as a vote."""

from __future__ import annotations

import csv
import io
import random
from datetime import timedelta

import numpy as np
import pytest
from django.db.models import Max, Sum
from django.test import Client

from collection.checks import annotator_failed_checks, check_create
from collection.lifecycle import ballot_close
from collection.models import Annotator, Ballot, Check, CheckAnswer, ItemScore, Study, Vote
from collection.voting import comparison_next_for, vote_record
from scoring.exports import CHECK_ANSWER_COLUMNS
from scoring.selectors import annotator_figures, annotator_stats
from scoring.simulation import SimulationConfig, draw_voters, underlying_similarity, voter_outcomes
from tests.factories import annotators, committed_callbacks, make_study

pytestmark = pytest.mark.django_db

# 16 annotators, as in test_quality_crowd: 10 honest, then the bad ones.
KINDS = ["honest"] * 10 + ["speeder", "speeder", "left", "right", "random", "random"]
BAD = {f"participant p{number}" for number, kind in enumerate(KINDS) if kind != "honest"}
HONEST = {f"participant p{number}" for number, kind in enumerate(KINDS) if kind == "honest"}
# 15 items, one ballot with M = 100: 750 comparisons, about 47 votes per annotator. At a check rate of
# 0.15 an annotator answers about 47 · 0.15 / 0.85 ≈ 8 checks. A random clicker (or a one-sided one,
# with checks balanced between the sides) fails each with probability 1/2: it escapes the flag at two
# failed checks with probability (1 + 8) / 2⁸ ≈ 3.5%. An honest §4.1 voter fails a check only through an
# oversight, ε ~ U[0.005, 0.05]: at ε = 0.0275 it reaches two failures with probability about 2%.
CHECK_RATE = 0.15


class CheckingCrowd:
    """The crowd's decisions on comparisons and on checks.

    * ``honest``: a §4.1 voter (``scoring.simulation``: opinions around the exponential similarities
      of the items, nonconformity σ* ~ U[0.02, 0.2], oversight ε ~ U[0.005, 0.05]), 2.5 to 9 s per
      answer; they follow an instruction except by an oversight;
    * ``speeder``: at random in 0.2 to 0.9 s; ``left`` / ``right``: always that side; ``random``: at
      random at a normal speed. None of these reads an instruction.
    """

    def __init__(self, study: Study, voters: list[Annotator], *, seed: int):
        self.rng = np.random.default_rng(seed)
        self.kind = {voter.pk: kind for voter, kind in zip(voters, KINDS, strict=True)}
        self.number = {voter.pk: number for number, voter in enumerate(voters)}
        self.index_of = dict(study.items.values_list("id", "index"))
        similarity = underlying_similarity("exponential", len(self.index_of))
        config = SimulationConfig(item_count=similarity.size, ballot_count=1, voter_count=len(voters))
        self.voters = draw_voters(similarity, config, self.rng)
        self.expected = dict(Check.objects.filter(study=study).values_list("id", "expected"))

    def respond_ms(self, annotator: Annotator) -> int:
        low, high = (200, 900) if self.kind[annotator.pk] == "speeder" else (2500, 9000)
        return int(self.rng.integers(low, high))

    def choose(self, annotator: Annotator, result) -> str:
        kind = self.kind[annotator.pk]
        if kind in ("left", "right"):
            return kind
        if kind in ("speeder", "random"):
            return "left" if self.rng.random() < 0.5 else "right"
        number = self.number[annotator.pk]
        if result.instruction:  # instructed: follow it, but for an oversight
            expected = self.expected[result.assignment.quality_check_id]
            slipped = self.rng.random() < self.voters.oversight[number]
            return {"left": "right", "right": "left"}[expected] if slipped else expected
        left = self.index_of[result.sides["left"]["item"]]
        right = self.index_of[result.sides["right"]["item"]]
        (outcome,) = voter_outcomes(self.voters, [number], [left], [right], self.rng, allow_ties=False)
        return "left" if outcome == 1.0 else "right"


def add_checks(study: Study) -> None:
    """16 checks, balanced between the sides: 8 gold comparisons of a most related item (index 0 or 1,
    z ≈ 1) against a least related one (index 12 to 14, z ≈ −0.2), 8 instructed-response checks."""
    item = {row.index: row for row in study.items.all()}
    for number in range(8):
        top, bottom = item[number % 2], item[12 + number % 3]
        left, right, expected = (top, bottom, "left") if number < 4 else (bottom, top, "right")
        check_create(study=study, kind="gold", left_item=left, right_item=right, expected=expected)
        side = "left" if number % 2 == 0 else "right"
        check_create(
            study=study,
            kind="instructed",
            left_item=item[2 + number],
            right_item=item[3 + number],
            expected=side,
            instruction=f"For this one, choose the pair on the {side}.",
        )


def run_crowd(study: Study, *, seed: int = 11) -> None:
    voters = annotators(study, len(KINDS))
    crowd = CheckingCrowd(study, voters, seed=seed)
    draws = random.Random(seed)
    while True:
        progressed = False
        for annotator in voters:
            result = comparison_next_for(annotator=annotator, rng=draws)
            if result.assignment is None:
                continue
            moment = result.assignment.issued_at + timedelta(milliseconds=crowd.respond_ms(annotator))
            with committed_callbacks():
                vote_record(
                    annotator=annotator,
                    assignment_id=result.assignment.pk,
                    choice=crowd.choose(annotator, result),
                    now=moment,
                )
            progressed = True
        if not progressed:
            break


@pytest.fixture
def crowd_study() -> Study:
    study = make_study(tokens=6, ballot_count=1, appearances=100, seed=5, check_rate=CHECK_RATE)
    add_checks(study)
    run_crowd(study)
    study.refresh_from_db()
    return study


def stats_by_label(study: Study) -> dict:
    return {row.label: row for row in annotator_stats(study=study)}


def test_the_failed_checks_flag_marks_exactly_the_bad_annotators(crowd_study):
    stats = stats_by_label(crowd_study)

    assert {label for label, row in stats.items() if "checks" in row.flag_codes} == BAD
    for label in BAD:
        assert stats[label].checks_failed >= 2


def test_check_accuracy_separates_the_bad_annotators_from_the_honest(crowd_study):
    stats = stats_by_label(crowd_study)
    honest = [stats[label].check_accuracy for label in HONEST]
    bad = [stats[label].check_accuracy for label in BAD]

    # Every annotator met checks, at about the rate: 8 expected each, Binomial-like spread.
    assert all(4 <= stats[label].checks_answered <= 14 for label in stats)
    assert min(honest) >= 0.8 > max(bad)
    assert np.mean(bad) == pytest.approx(0.5, abs=0.15)


def test_one_sided_annotators_fail_exactly_the_checks_that_expect_the_other_side(crowd_study):
    for label, side in (("participant p12", "left"), ("participant p13", "right")):
        annotator = Annotator.objects.get(study=crowd_study, participant_id=label.split()[-1])
        answers = CheckAnswer.objects.filter(annotator=annotator).select_related("quality_check")
        assert {answer.choice for answer in answers} == {side}
        assert annotator_failed_checks(annotator=annotator) == sum(
            answer.quality_check.expected != side for answer in answers
        )


def test_the_failed_checks_service_agrees_with_the_figures(crowd_study):
    figures = annotator_figures(study=crowd_study)
    by_id = {annotator.pk: annotator for annotator in Annotator.objects.filter(study=crowd_study)}

    failed = [annotator_failed_checks(annotator=by_id[pk]) for pk in figures.annotator_id.tolist()]

    assert failed == figures.checks_failed.tolist()
    assert figures.checks_answered.sum() == CheckAnswer.objects.count()


def test_no_answer_to_a_check_is_a_vote(crowd_study):
    ballot = Ballot.objects.get(study=crowd_study)
    answers = CheckAnswer.objects.count()

    assert crowd_study.status == Study.Status.FINISHED
    assert answers >= 100  # about 8 for each of 16 annotators
    assert (
        Vote.objects.filter(ballot=ballot).count() == ballot.votes_recorded == ballot.comparison_count == 750
    )
    appearances = ItemScore.objects.filter(ballot=ballot).aggregate(total=Sum("appearances"))["total"]
    assert appearances == 2 * 750  # the scores count the 750 votes, none of the answers
    assert not Vote.objects.filter(assignment__quality_check__isnull=False).exists()


def test_the_results_page_and_the_exports_show_the_checks(crowd_study, django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("researcher", password="x", is_staff=True))

    page = client.get(f"/studies/{crowd_study.slug}/results/?flag=checks").content.decode()
    annotators_csv = list(
        csv.DictReader(
            io.StringIO(client.get(f"/studies/{crowd_study.slug}/export/annotators.csv").getvalue().decode())
        )
    )
    checks_csv = list(
        csv.reader(
            io.StringIO(client.get(f"/studies/{crowd_study.slug}/export/checks.csv").getvalue().decode())
        )
    )

    assert "Checks right" in page and "failed checks</strong>: failed " in page
    assert page.count('<tr class="flagged">') == len(BAD)
    flagged = {row["annotator"] for row in annotators_csv if "checks" in row["flags"].split(";")}
    assert flagged == BAD
    one = next(row for row in annotators_csv if row["annotator"] == "participant p12")
    assert int(one["checks_failed"]) == annotator_failed_checks(
        annotator=Annotator.objects.get(study=crowd_study, participant_id="p12")
    )
    assert tuple(checks_csv[0]) == CHECK_ANSWER_COLUMNS
    assert len(checks_csv) - 1 == CheckAnswer.objects.count()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_invariants_hold_on_postgresql_with_checks_in_the_stream():
    from tests.integration.conftest import _database_url_of_the_test_database
    from tests.reliability import invariants

    study = make_study(tokens=6, ballot_count=1, appearances=100, seed=5, check_rate=CHECK_RATE)
    add_checks(study)
    run_crowd(study)
    ballot = Ballot.objects.get(study=study)
    # The close the last vote asked a worker for, here at once; the simulated answers are stamped up to
    # 9 s after their lease, so the close comes after the last of them.
    last = Vote.objects.filter(ballot=ballot).aggregate(last=Max("created_at"))["last"]
    ballot_close(ballot_id=ballot.pk, now=last + timedelta(seconds=1))

    results = invariants.check(_database_url_of_the_test_database(), study=study.slug)

    assert {r.name: r.offending for r in results if not r.held} == {}
    assert CheckAnswer.objects.filter(annotator__study=study).count() >= 100
    assert Vote.objects.filter(ballot=ballot).count() == 750
