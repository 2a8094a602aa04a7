"""One set of bootstrap replicates and one chance level per study: the card's precision, the evaluations'
intervals and the leaderboard's comparisons all come from them.

The study: 28 items, 2 ballots, voted to the end by 6 annotators (``conftest.finished_study``).
"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import User

from metrics import services
from metrics.correlation import ranks_from_scores
from metrics.evaluation import coefficient_replicates
from metrics.figures import chance_for, replicate_count, study_replicates
from metrics.instrument import instrument_card
from metrics.leaderboard import leaderboard_for
from metrics.metrology import precision_summary
from metrics.models import StudyFigure
from metrics.selectors import final_scores

pytestmark = pytest.mark.django_db


def test_the_card_precision_is_the_spread_of_the_studys_replicates(study):
    card = instrument_card(study=study)
    replicates = study_replicates(study=study)

    summary = precision_summary(replicates)
    assert replicates.shape == (replicate_count(28), 28) == (1000, 28)
    assert [row["sd"] for row in card["precision"]["items"]] == pytest.approx(summary["sd"].tolist())
    assert card["precision"]["mean_sd"] == pytest.approx(summary["mean_sd"])
    assert StudyFigure.objects.filter(study=study, kind="bootstrap").count() == 1


def test_an_evaluation_and_the_leaderboard_use_the_same_replicates_as_the_card(study):
    human = final_scores(study=study)
    scores = [{"item": pk, "score": s} for pk, s in study.items.values_list("pk", "final_score")]
    submission = services.submission_create(
        study=study,
        owner=User.objects.create(username="o"),
        model_name="truth",
        data=scores,
        source_format="json",
    )
    card = instrument_card(study=study)
    replicates = study_replicates(study=study)

    # An item that drew no vote in a replicate keeps its observed score there (metrics.evaluation).
    filled = np.where(np.isfinite(replicates), replicates, human[None, :])
    expected = coefficient_replicates(ranks_from_scores(human), filled, 2.0)
    result = submission.evaluations.get().result
    assert result["replicate_count"] == card["precision"]["replicates"] == 1000
    assert result["replicates"]["tau_w"] == pytest.approx(expected["tau_w"].tolist())
    row = leaderboard_for(study=study, metric="tau_w")["rows"][0]
    sd = float(np.std(expected["tau_w"], ddof=1))
    assert row["interval"] == pytest.approx([max(-1.0, row["value"] - 1.959963984540054 * sd), 1.0])
    assert StudyFigure.objects.filter(study=study, kind="bootstrap").count() == 1


def test_the_card_chance_level_is_the_one_of_a_model_covering_every_item(study):
    card = instrument_card(study=study)
    chance = chance_for(study=study, item_count=28, weight_offset=2.0)

    for name in ("rho_w", "tau_w"):
        assert card["chance"][name] == {"mean": chance[name]["mean"], "sd": chance[name]["sd"]}
    assert card["chance"]["draws"] == chance["draw_count"] == 1000


def test_a_figure_read_without_storing_equals_the_stored_one(study):
    StudyFigure.objects.filter(study=study).delete()

    computed = study_replicates(study=study, store=False)
    assert not StudyFigure.objects.filter(study=study).exists()
    stored = study_replicates(study=study)
    read_back = study_replicates(study=study, store=False)

    assert StudyFigure.objects.filter(study=study, kind="bootstrap").count() == 1
    np.testing.assert_array_equal(computed, stored)
    np.testing.assert_array_equal(computed, read_back)
