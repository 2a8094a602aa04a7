"""The score models side by side in the instrument card and the Hub dataset: the figure's numbers computed
again here from the votes (scoring.score_models) with metrics.correlation and scipy, the card naming the
model that made the ranking, a study ranked per area, and a hidden test part that stays hidden."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.urls import reverse
from scipy import stats

from collection import arrays
from collection.models import Study
from metrics import hub
from metrics.card_render import card_markdown
from metrics.correlation import kendall, ranks_from_scores, weighted_kendall, weighted_spearman
from metrics.figures import score_model_comparison
from metrics.instrument import instrument_card
from metrics.selectors import final_scores
from scoring.score_models import BORDA, SCORE_MODEL_LABELS, SCORE_MODELS, scores_from_votes
from tests.metrics.conftest import study_voted_to_the_end

MODELS_IN_ORDER = (BORDA, *(model for model in SCORE_MODELS if model != BORDA))


@pytest.fixture(scope="module")
def per_area_study(django_db_setup, django_db_blocker):
    """Two areas of 6 tokens (15 items each) ranked each on its own, voted to the end by 6 annotators."""
    yield from study_voted_to_the_end(
        django_db_blocker,
        voters=6,
        crowd_seed=5,
        tokens=6,
        areas=2,
        ranking_scope=Study.RankingScope.PER_AREA,
        ballot_count=2,
        appearances=6,
        seed=5,
    )


@pytest.fixture(scope="module")
def hidden_study(django_db_setup, django_db_blocker):
    """Two areas of 7 tokens (42 items), 40% of them in a hidden test part, voted to the end."""
    yield from study_voted_to_the_end(
        django_db_blocker,
        voters=6,
        crowd_seed=11,
        tokens=7,
        areas=2,
        ballot_count=2,
        appearances=8,
        seed=11,
        hidden_share=0.4,
    )


def scores_here(study: Study) -> dict[str, np.ndarray]:
    """Every score model's scores of the study's closed-ballot votes, computed here from the rows."""
    votes = arrays.study_votes(study_id=study.pk, closed_only=True)
    _, annotator = np.unique(votes.annotator, return_inverse=True)
    per_area = study.ranking_scope == Study.RankingScope.PER_AREA
    return {
        model: scores_from_votes(
            model,
            ballot=votes.ballot,
            left=votes.left,
            right=votes.right,
            outcome=votes.outcome,
            annotator=annotator,
            item_count=study.items.count(),
            ballot_count=study.ballot_count,
            strata=arrays.item_areas(study_id=study.pk) if per_area else None,
        )
        for model in SCORE_MODELS
    }


def check_table(table: dict, scores: dict, reference: np.ndarray, mask: np.ndarray) -> None:
    """The figure's table equals the coefficients computed here over the items of ``mask``."""
    assert [entry["model"] for entry in table["models"]] == list(MODELS_IN_ORDER)
    assert table["items"] == int(mask.sum())
    for entry in table["models"]:
        model = scores[entry["model"]][mask]
        ranks_model, ranks_reference = ranks_from_scores(model), ranks_from_scores(reference[mask])
        assert entry["reference"]["rho_w"] == pytest.approx(
            weighted_spearman(ranks_model, ranks_reference, 2.0)
        )
        assert entry["reference"]["tau_w"] == pytest.approx(
            weighted_kendall(ranks_model, ranks_reference, 2.0)
        )
        assert entry["reference"]["rho"] == pytest.approx(stats.spearmanr(model, reference[mask]).statistic)
        top_model = set(np.argsort(-model, kind="stable")[:10].tolist())
        top_reference = set(np.argsort(-reference[mask], kind="stable")[:10].tolist())
        assert entry["top"]["shared"] == len(top_model & top_reference)
    pairs = {(pair["a"], pair["b"]): pair for pair in table["pairs"]}
    assert set(pairs) == set(itertools.combinations(MODELS_IN_ORDER, 2))
    for (first, second), pair in pairs.items():
        a, b = scores[first][mask], scores[second][mask]
        ranks_a, ranks_b = ranks_from_scores(a), ranks_from_scores(b)
        assert pair["rho_w"] == pytest.approx(weighted_spearman(ranks_a, ranks_b, 2.0))
        assert pair["rho"] == pytest.approx(stats.spearmanr(a, b).statistic)
        assert pair["tau"] == pytest.approx(kendall(ranks_a, ranks_b))
        i, j = MODELS_IN_ORDER.index(first), MODELS_IN_ORDER.index(second)
        assert table["matrix"]["rho_w"][i][j] == table["matrix"]["rho_w"][j][i] == pair["rho_w"]


@pytest.mark.django_db
def test_the_figure_is_every_models_agreement_computed_from_the_counted_votes(finished_study):
    figure = score_model_comparison(study=finished_study)
    scores = scores_here(finished_study)
    reference = final_scores(study=finished_study)
    assert (figure["reference"], figure["models"], figure["fitted"]) == (
        BORDA,
        list(MODELS_IN_ORDER),
        list(MODELS_IN_ORDER),
    )
    assert figure["areas"] == [] and figure["part"] == "all"
    check_table(figure["table"], scores, reference, np.ones(reference.size, dtype=bool))
    # The study's own model scored again from the same votes is its final ranking.
    borda = figure["table"]["models"][0]
    assert np.allclose(scores[BORDA], reference, equal_nan=True)
    assert borda["reference"]["rho_w"] == pytest.approx(1.0) and borda["top"] == {
        "k": 10,
        "shared": 10,
        "share": 1.0,
    }


@pytest.mark.django_db
def test_the_card_states_the_model_that_made_the_ranking_in_its_header_procedure_and_json(
    client, finished_study
):
    card = instrument_card(study=finished_study)
    label = SCORE_MODEL_LABELS[BORDA]
    assert card["procedure"]["score_model"]["name"] == BORDA
    text = card_markdown(card)
    assert f"ranking made by the score model {label} (borda)." in text.splitlines()[2]
    assert f"- **Score model (made the ranking)**: {label} (borda)" in text
    section = text.split("## 10. Score models")[1]
    assert "docs/protocols.md" in section
    for model in MODELS_IN_ORDER:
        assert f"| {SCORE_MODEL_LABELS[model]} |" in section
    page = client.get(reverse("metrics:card", args=[finished_study.slug])).content.decode()
    assert f"ranking made by the score model {label} (borda)" in page
    downloaded = json.loads(client.get(reverse("metrics:card-json", args=[finished_study.slug])).content)
    assert downloaded["procedure"]["score_model"] == card["procedure"]["score_model"]
    assert downloaded["score_models"]["table"]["matrix"]["models"] == list(MODELS_IN_ORDER)
    markdown = client.get(reverse("metrics:card-markdown", args=[finished_study.slug])).content.decode()
    assert f"ranking made by the score model {label} (borda)" in markdown


@pytest.mark.django_db
def test_a_study_ranked_per_area_compares_the_models_within_each_area(per_area_study):
    figure = score_model_comparison(study=per_area_study)
    scores = scores_here(per_area_study)
    reference = final_scores(study=per_area_study)
    item_area = arrays.item_areas(study_id=per_area_study.pk)
    names = dict(per_area_study.areas.values_list("pk", "name"))
    assert figure["table"] is None and figure["scope"] == Study.RankingScope.PER_AREA
    assert [entry["area"] for entry in figure["areas"]] == sorted(names.values())
    by_name = {name: pk for pk, name in names.items()}
    for entry in figure["areas"]:
        check_table(entry, scores, reference, item_area == by_name[entry["area"]])
    text = card_markdown(instrument_card(study=per_area_study))
    for name in names.values():
        assert f"ρ_w between the score models' rankings in the area {name}" in text


@pytest.mark.django_db
def test_a_hidden_test_part_is_left_out_of_the_card_and_the_hub_ranks_of_every_model(hidden_study, tmp_path):
    figure = score_model_comparison(study=hidden_study)
    hidden = np.array(
        [hidden for _, hidden in hidden_study.items.order_by("index").values_list("index", "hidden")]
    )
    assert figure["part"] == "development"
    check_table(figure["table"], scores_here(hidden_study), final_scores(study=hidden_study), ~hidden)

    hub.hub_dataset_write(study=hidden_study, folder=tmp_path / "dataset")
    items = pq.read_table(tmp_path / "dataset" / "data" / "items.parquet").to_pydict()
    assert sorted(items["index"]) == np.flatnonzero(~hidden).tolist()  # no hidden item
    scores = scores_here(hidden_study)
    for model in MODELS_IN_ORDER:
        ranks = items[f"rank_{model}"]
        assert sorted(ranks) == list(range(1, len(ranks) + 1))  # renumbered within the public part, no gap
        published = np.array(items[f"score_{model}"])
        assert np.array_equal(published, scores[model][items["index"]])
        by_rank = published[np.argsort(ranks)]
        assert np.all(np.diff(by_rank) <= 0)  # rank 1 has the highest score
