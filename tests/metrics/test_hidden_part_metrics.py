"""Known answers for a study that keeps a hidden test part: the leaderboard's figures are those of the
hidden items alone (scipy and the definitions of Eq. 7-9 by brute force on the subset), the owner's own
evaluation those of the development items, and the per-annotator view reads the votes between two
development items only.

The study: two areas of 6 tokens (30 items), 40% hidden (12 items), two ballots, voted by a crowd that
disagrees (careless and biased annotators among them, ties allowed); a model that scores every item with
noise around the human scores.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from scipy import stats

from collection import arrays
from collection.models import Vote
from common.errors import ServiceError
from metrics import services
from metrics.leaderboard import annotator_view, leaderboard_for
from metrics.models import Standing, Submission
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def split_study():
    study = make_study(
        tokens=6,
        areas=2,
        ballot_count=2,
        appearances=6,
        seed=21,
        allow_ties=True,
        hidden_share=0.4,
        relevant_top_k=3,
    )
    vote_until(study, voters=annotators(study, 7), choose=disagreeing_crowd(study, seed=8))
    study.refresh_from_db()
    assert study.status == "finished"
    return study


@pytest.fixture
def owner():
    return get_user_model().objects.create_user("model-owner", password="x")


def submit(study, owner, name: str, seed: int) -> tuple[Submission, np.ndarray]:
    human = arrays.final_scores(study_id=study.pk, item_count=30)[0]
    model = human + np.random.default_rng(seed).normal(0, 0.15, size=30)
    ids = arrays.item_ids(study_id=study.pk)
    rows = [{"item": int(ids[index]), "score": float(model[index])} for index in range(30)]
    submission = services.submission_create(
        study=study, owner=owner, model_name=name, data=rows, source_format="json"
    )
    assert submission.status == Submission.Status.DONE, submission.error
    return submission, model


def brute_weighted(a: np.ndarray, b: np.ndarray, n0: float) -> tuple[float, float]:
    """ρ_w and τ_w of two rankings from their definitions (Lombardo et al., Eq. 7-9), pair by pair."""
    w = 1 / (a + n0) ** 2 + 1 / (b + n0) ** 2
    w = w / w.sum()
    covariance = np.cov(a, b, aweights=w, bias=True)
    rho_w = covariance[0, 1] / np.sqrt(covariance[0, 0] * covariance[1, 1])
    numerator = sum_a = sum_b = 0.0
    for i, j in itertools.permutations(range(a.size), 2):
        sa, sb = np.sign(a[j] - a[i]), np.sign(b[j] - b[i])
        numerator += w[i] * w[j] * sa * sb
        sum_a += w[i] * w[j] * sa * sa
        sum_b += w[i] * w[j] * sb * sb
    return float(rho_w), float(numerator / np.sqrt(sum_a * sum_b))


def test_the_leaderboard_ranks_on_the_hidden_items_alone(split_study, owner):
    submission, model = submit(split_study, owner, "noisy", seed=1)
    human = arrays.final_scores(study_id=split_study.pk, item_count=30)[0]
    hidden = arrays.item_hidden(study_id=split_study.pk)
    part = np.flatnonzero(hidden & np.isfinite(human))
    assert hidden.sum() == 12

    board = leaderboard_for(study=split_study, metric="tau_w", weight_offset=2.0)

    (row,) = board["rows"]
    figures = {name: row["metrics"][name]["value"] for name in ("rho_w", "tau_w", "rho", "tau")}
    a = stats.rankdata(-model[part])
    b = stats.rankdata(-human[part])
    rho_w, tau_w = brute_weighted(a, b, 2.0)
    assert figures == pytest.approx(
        {
            "rho_w": rho_w,
            "tau_w": tau_w,
            "rho": stats.spearmanr(model[part], human[part]).statistic,
            "tau": stats.kendalltau(model[part], human[part]).statistic,
        },
        abs=1e-12,
    )
    assert (board["part"], board["part_items"], board["top_k"]) == ("test", 12, 3)
    assert row["value"] == pytest.approx(tau_w, abs=1e-12)
    # The coefficient over all 30 items is another number: the board did not use them.
    assert abs(stats.spearmanr(model, human).statistic - figures["rho"]) > 1e-6
    standing = Standing.objects.get(submission=submission, weight_offset=2.0)
    assert (standing.part, standing.coefficients["rho"]["value"]) == ("test", figures["rho"])


def test_the_leaderboard_at_another_n0_is_on_the_hidden_items_too(split_study, owner):
    _, model = submit(split_study, owner, "noisy", seed=2)
    human = arrays.final_scores(study_id=split_study.pk, item_count=30)[0]
    part = np.flatnonzero(arrays.item_hidden(study_id=split_study.pk) & np.isfinite(human))

    board = leaderboard_for(study=split_study, metric="rho_w", weight_offset=10.0)

    rho_w, tau_w = brute_weighted(stats.rankdata(-model[part]), stats.rankdata(-human[part]), 10.0)
    metrics = board["rows"][0]["metrics"]
    assert (metrics["rho_w"]["value"], metrics["tau_w"]["value"]) == pytest.approx((rho_w, tau_w), abs=1e-12)


def test_the_owner_reads_the_development_part_and_the_test_part_only_as_aggregates(split_study, owner):
    submission, model = submit(split_study, owner, "noisy", seed=3)
    human = arrays.final_scores(study_id=split_study.pk, item_count=30)[0]
    hidden = arrays.item_hidden(study_id=split_study.pk)
    development = np.flatnonzero(~hidden & np.isfinite(human))
    test = np.flatnonzero(hidden & np.isfinite(human))

    own = services.public_result(services.owner_evaluation(submission=submission).result)
    summary = services.test_part_summary(submission=submission)

    assert (own["part"], own["items"], own["covered"]) == ("development", 18, development.size)
    assert own["rho"]["value"] == pytest.approx(
        stats.spearmanr(model[development], human[development]).statistic, abs=1e-12
    )
    assert (summary["part"], summary["items"], summary["top_k"]) == ("test", 12, 3)
    assert summary["tau"]["value"] == pytest.approx(
        stats.kendalltau(model[test], human[test]).statistic, abs=1e-12
    )
    # P@3 and R@3 on the test part: the human top 3 of the hidden items (ties to the lower index) against
    # the model's top 3 of them.
    human_top = set(test[np.lexsort((test, -human[test]))[:3]].tolist())
    model_top = set(test[np.argsort(-model[test])[:3]].tolist())
    overlap = len(human_top & model_top) / 3
    retrieval = summary["retrieval"]
    assert (retrieval["precision_at_k"], retrieval["recall_at_k"]) == pytest.approx((overlap, overlap))
    assert "replicates" not in summary and not any(
        isinstance(value, list) and len(value) >= 12 for value in summary.values()
    )


def test_a_submission_must_score_every_item_and_the_refusal_names_none_of_the_hidden(split_study, owner):
    ids = arrays.item_ids(study_id=split_study.pk)
    rows = [{"item": int(ids[index]), "score": float(index)} for index in range(29)]  # all but the last

    with pytest.raises(ServiceError) as refused:
        services.submission_create(
            study=split_study, owner=owner, model_name="m", data=rows, source_format="json"
        )

    assert refused.value.status == 400
    assert refused.value.message == (
        f"the submission scores 29 of 30 items; study {split_study.slug!r} keeps a hidden test part on which the "
        "leaderboard ranks models, so score every one of its 30 items"
    )
    assert not Submission.objects.exists()


def test_the_per_annotator_view_reads_only_the_votes_between_two_development_items(split_study, owner):
    _, model = submit(split_study, owner, "noisy", seed=4)
    hidden = arrays.item_hidden(study_id=split_study.pk)
    index_of = dict(split_study.items.values_list("pk", "index"))
    votes = list(
        Vote.objects.filter(ballot__study=split_study).values_list(
            "annotator", "left_item", "right_item", "choice"
        )
    )
    annotator_ids = sorted({annotator for annotator, _, _, _ in votes})
    agreed = {annotator: [] for annotator in annotator_ids}
    for annotator, left, right, choice in votes:
        left, right = index_of[left], index_of[right]
        if choice == "tie" or hidden[left] or hidden[right]:
            continue
        chosen, rejected = (left, right) if choice == "left" else (right, left)
        agreed[annotator].append(
            1.0 if model[chosen] > model[rejected] else 0.5 if model[chosen] == model[rejected] else 0.0
        )
    expected = [float(np.mean(agreed[a])) if agreed[a] else None for a in annotator_ids]

    view = annotator_view(study=split_study)

    assert view["part"] == "development"
    assert view["models"]["noisy (model-owner)"]["per_annotator"] == pytest.approx(expected)
    assert any(value is not None for value in expected)
