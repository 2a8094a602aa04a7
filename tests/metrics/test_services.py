"""Submissions, evaluations and the leaderboard on a study voted by simulated annotators."""

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from common.errors import ServiceError, StudyStateError
from metrics.leaderboard import leaderboard_for
from metrics.models import Evaluation, Submission
from metrics.services import submission_create, submission_parse
from scoring.simulation import underlying_similarity
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)  # ballots close in on-commit tasks


@pytest.fixture
def voted_study():
    """120 items voted to the end by 20 simulated annotators; returns (study, true relatedness)."""
    study = make_study(tokens=16, ballot_count=3, appearances=8)
    call_command(
        "simulate_voters",
        "--study",
        study.slug,
        "--voters",
        "20",
        "--distribution",
        "exponential",
        "--seed",
        "7",
    )
    study.refresh_from_db()
    assert study.status == "finished"
    truth = np.abs(np.random.default_rng(7).permutation(underlying_similarity("exponential", 120)))
    return study, truth


def rows(study, scores):
    return [{"item": item.pk, "score": float(scores[item.index])} for item in study.items.all()]


def test_the_true_ranking_beats_a_noisy_model_with_separated_intervals(voted_study):
    study, truth = voted_study
    owner = User.objects.create(username="owner")
    noisy = truth + np.random.default_rng(0).normal(0, 1.0, truth.size)
    submission_create(
        study=study, owner=owner, model_name="truth", data=rows(study, truth), source_format="json"
    )
    submission_create(
        study=study, owner=owner, model_name="noisy", data=rows(study, noisy), source_format="json"
    )
    board = leaderboard_for(study=study, metric="rho_w")
    first, second = board["rows"]
    assert (first["model_name"], first["rank"], second["model_name"], second["rank"]) == (
        "truth",
        1,
        "noisy",
        2,
    )
    assert first["interval"][0] > second["interval"][1]
    assert first["indistinguishable_from"] == []


def test_two_nearly_identical_models_are_indistinguishable(voted_study):
    study, truth = voted_study
    owner = User.objects.create(username="owner")
    twin = truth + np.random.default_rng(1).normal(0, 1e-4, truth.size)
    submission_create(
        study=study, owner=owner, model_name="one", data=rows(study, truth), source_format="json"
    )
    submission_create(
        study=study, owner=owner, model_name="two", data=rows(study, twin), source_format="json"
    )
    board = {row["model_name"]: row for row in leaderboard_for(study=study, metric="tau_w")["rows"]}
    assert board["one"]["indistinguishable_from"] == ["two (owner)"]
    assert board["one"]["rank"] == board["two"]["rank"] == 1


def test_a_submission_is_stored_once_evaluated_and_never_replaced(voted_study):
    study, truth = voted_study
    owner = User.objects.create(username="owner")
    submission = submission_create(
        study=study, owner=owner, model_name="m", data=rows(study, truth), source_format="json"
    )
    assert (submission.status, submission.progress, submission.covered, submission.coverage) == (
        "done",
        100,
        120,
        1.0,
    )
    evaluation = Evaluation.objects.get(submission=submission)
    assert (evaluation.weight_offset, evaluation.top_k) == (2.0, 12)  # K: a tenth of 120 items
    with pytest.raises(StudyStateError, match="already submitted a model named 'm'"):
        submission_create(
            study=study, owner=owner, model_name="m", data=rows(study, truth), source_format="json"
        )
    assert Submission.objects.count() == 1


def test_a_csv_by_token_pairs_in_either_order_is_accepted(voted_study):
    study, truth = voted_study
    lines = ["token_a,token_b,score"]
    for item in study.items.select_related("token_a", "token_b"):
        a, b = (
            (item.token_b.text, item.token_a.text)
            if item.index % 2
            else (item.token_a.text, item.token_b.text)
        )
        lines.append(f"{a.upper()},{b},{truth[item.index]}")
    scores = submission_parse(study=study, data="\n".join(lines).encode(), source_format="csv")
    np.testing.assert_allclose(scores, truth)


def test_bad_rows_are_listed_and_nothing_is_stored(voted_study):
    study, _ = voted_study
    first, second = study.items.order_by("index")[:2]
    data = [
        {"item": first.pk, "score": 0.5},
        {"item": first.pk, "score": 0.7},
        {"item": 999999, "score": 0.1},
        {"item": second.pk, "score": "high"},
        {"item": second.pk, "score": float("nan")},
        {"token_a": "no", "token_b": "such", "score": 1},
        {"score": 1},
    ]
    with pytest.raises(ServiceError) as raised:
        submission_create(
            study=study,
            owner=User.objects.create(username="o"),
            model_name="x",
            data=data,
            source_format="json",
        )
    assert raised.value.errors == [
        "scores[1]: this item was already scored at scores[0]",
        f"scores[2]: item 999999 is not an item of study '{study.slug}'",
        f"scores[3], item {second.pk}: the score 'high' is not a number",
        f"scores[4], item {second.pk}: the score nan is not a finite number",
        f"scores[5]: the pair 'no' – 'such' is not an item of study '{study.slug}'",
        "scores[6]: give the item id, or token_a and token_b",
    ]
    assert Submission.objects.count() == 0


def test_coverage_below_the_studys_minimum_is_refused(voted_study):
    study, truth = voted_study
    half = [row for row in rows(study, truth)][:50]  # 50 of 120 items: 41.7% < 50%
    with pytest.raises(
        ServiceError, match=r"scores 50 of 120 items \(41.7%\); this study needs at least 50%"
    ):
        submission_create(
            study=study,
            owner=User.objects.create(username="o"),
            model_name="x",
            data=half,
            source_format="json",
        )


def test_partial_coverage_is_evaluated_on_the_covered_items(voted_study):
    study, truth = voted_study
    covered = [row for row in rows(study, truth)][:90]
    submission = submission_create(
        study=study,
        owner=User.objects.create(username="o"),
        model_name="p",
        data=covered,
        source_format="json",
    )
    result = submission.evaluations.get().result
    assert (result["covered"], result["coverage"]) == (90, 0.75)


def test_models_are_evaluated_only_on_finished_studies():
    study = make_study()
    with pytest.raises(StudyStateError, match="once it has finished"):
        submission_create(
            study=study,
            owner=User.objects.create(username="o"),
            model_name="x",
            data=[],
            source_format="json",
        )
