"""A study's score model: rescaled Borda by default; another model makes the final ranking from every
closed ballot's votes, its replicates and the scores without excluded annotators, while the closes
still select the survivors by ȳ; the setting freezes when the study finishes."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from collection import arrays
from collection.models import Study
from collection.studies import study_settings_frozen
from metrics.figures import MODEL_REPLICATES, REPLICATES_STREAM, study_replicates
from metrics.score_model_replicates import model_bootstrap_scores
from metrics.selectors import study_votes
from scoring.borda import final_order
from scoring.exclusion import scores_without_excluded
from scoring.score_models import BORDA, BRADLEY_TERRY, NOISY_BRADLEY_TERRY, scores_from_votes
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db


def finished(**fields) -> Study:
    study = make_study(tokens=6, seed=3, **fields)
    vote_until(study, voters=annotators(study, 6), choose=disagreeing_crowd(study, seed=2))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


def model_scores_of(study: Study, model: str) -> np.ndarray:
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    _, annotator = np.unique(votes.annotator, return_inverse=True)
    return scores_from_votes(
        model,
        ballot=votes.ballot,
        left=votes.left,
        right=votes.right,
        outcome=votes.outcome,
        annotator=annotator,
        item_count=study.items.count(),
        ballot_count=study.ballot_count,
    )


def test_a_new_study_is_scored_by_rescaled_borda():
    study = make_study(start=False)
    assert study.score_model == BORDA
    with pytest.raises(ValidationError):
        Study(score_model="elo").clean_fields(
            exclude=[f.name for f in Study._meta.fields if f.name != "score_model"]
        )


@pytest.mark.parametrize("model", [BRADLEY_TERRY, NOISY_BRADLEY_TERRY])
def test_the_final_ranking_is_the_study_models_and_the_survivors_are_still_bordas(model):
    borda_study = finished()
    study = finished(score_model=model)
    # The same seed and crowd: the closes chose the same survivors, so the votes are the same.
    np.testing.assert_array_equal(
        arrays.study_votes(study_id=study.pk).outcome, arrays.study_votes(study_id=borda_study.pk).outcome
    )
    score, rank, last_ballot = arrays.final_scores(study_id=study.pk, item_count=15)
    expected = model_scores_of(study, model)
    np.testing.assert_allclose(score, expected, rtol=1e-6)
    order = final_order(expected, last_ballot)
    np.testing.assert_array_equal(rank[order], np.arange(1, 16))
    borda_score = arrays.final_scores(study_id=borda_study.pk, item_count=15)[0]
    np.testing.assert_array_equal(
        borda_score, arrays.latest_scores(study_id=borda_study.pk, item_count=15)[0]
    )


def test_a_model_studys_replicates_are_its_model_refitted_on_bordas_draws():
    study = finished(score_model=BRADLEY_TERRY)
    replicates = study_replicates(study=study, store=False)
    votes = study_votes(study=study)
    expected = model_bootstrap_scores(
        BRADLEY_TERRY,
        votes.ballots,
        votes.item_count,
        np.random.default_rng([study.seed, REPLICATES_STREAM]),
        replicates.shape[0],
    )
    assert replicates.shape[0] <= MODEL_REPLICATES
    np.testing.assert_allclose(replicates, expected.astype(np.float32).astype(np.float64))


def test_the_scores_with_and_without_excluded_annotators_are_the_study_models():
    study = finished(score_model=NOISY_BRADLEY_TERRY)
    scores = scores_without_excluded(study=study, always=True)
    np.testing.assert_allclose(scores.score_with, model_scores_of(study, NOISY_BRADLEY_TERRY))
    np.testing.assert_allclose(scores.score_without, scores.score_with)


def test_the_score_model_may_change_until_the_study_finishes():
    assert "score_model" not in study_settings_frozen(status=Study.Status.RUNNING)
    assert "score_model" in study_settings_frozen(status=Study.Status.FINISHED)
