"""The results page and the dataset exports show every score model side by side: a column per model whose
values are scoring.score_models' scores of the study's counted votes, computed again here."""

from __future__ import annotations

import csv
import io
import itertools
import json

import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse

from collection import arrays
from collection.models import Study
from metrics.card_render import card_markdown
from metrics.correlation import ranks_from_scores, weighted_spearman
from metrics.instrument import instrument_card
from metrics.models import StudyFigure
from scoring import side_by_side
from scoring.score_models import BORDA, BRADLEY_TERRY, SCORE_MODEL_LABELS, SCORE_MODELS, scores_from_votes
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

MODELS_IN_ORDER = (BORDA, *(model for model in SCORE_MODELS if model != BORDA))


def voted_study(**fields) -> Study:
    study = make_study(seed=3, **fields)
    vote_until(study, voters=annotators(study, 6), choose=disagreeing_crowd(study, seed=3))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def finished_study(db):
    return voted_study()


@pytest.fixture
def staff_client(client, django_user_model):
    client.force_login(
        django_user_model.objects.create_user(username="researcher", password="x", is_staff=True)
    )
    return client


def scores_here(study: Study) -> dict[str, np.ndarray]:
    """Every score model's scores of the votes of the study's closed ballots, computed here."""
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


def test_the_dataset_csv_has_a_score_and_a_rank_column_per_model_from_the_counted_votes(
    staff_client, finished_study
):
    response = staff_client.get(reverse("scoring:export-dataset-csv", args=[finished_study.slug]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    scores = scores_here(finished_study)
    index = np.array([int(row["index"]) for row in rows])
    for model in MODELS_IN_ORDER:
        published = np.array([float(row[f"score_{model}"]) for row in rows])
        assert np.array_equal(published, scores[model][index])  # full precision: repr round-trips
        ranks = np.array([int(row[f"rank_{model}"]) for row in rows])
        assert sorted(ranks.tolist()) == list(range(1, len(rows) + 1))
        assert np.all(np.diff(published[np.argsort(ranks)]) <= 0)  # rank 1 has the highest score
    # The study's own model gives back its final ranking.
    assert [row["rank_borda"] for row in rows] == [row["final_rank"] for row in rows]


def test_the_dataset_json_has_the_same_fields_per_item(staff_client, finished_study):
    response = staff_client.get(reverse("scoring:export-dataset-json", args=[finished_study.slug]))
    items = json.loads(b"".join(response.streaming_content))["items"]
    scores = scores_here(finished_study)
    for model in MODELS_IN_ORDER:
        assert [item[f"score_{model}"] for item in items] == scores[model][
            [item["index"] for item in items]
        ].tolist()
        assert all(isinstance(item[f"rank_{model}"], int) for item in items)


def test_the_results_page_sets_the_models_top_items_and_their_agreement_side_by_side(
    staff_client, finished_study
):
    response = staff_client.get(reverse("scoring:results", args=[finished_study.slug]))
    html = response.content.decode()
    shown = response.context["side_by_side"]
    scores = scores_here(finished_study)
    assert [model["name"] for model in shown["models"]] == list(MODELS_IN_ORDER)
    assert shown["reference"] == BORDA
    (group,) = shown["groups"]
    final = dict(finished_study.items.values_list("index", "final_rank"))
    top = sorted(final, key=final.get)[: len(group["rows"])]
    assert len(group["rows"]) == finished_study.items.count()  # 15 items: every one is shown
    for index, row in zip(top, group["rows"], strict=True):
        assert [cell["score"] for cell in row["cells"]] == [scores[model][index] for model in MODELS_IN_ORDER]
    assert [row["cells"][0]["rank"] for row in group["rows"]] == list(range(1, 16))
    matrix = group["agreement"]["matrix"]["rho_w"]
    for (i, first), (j, second) in itertools.combinations(enumerate(MODELS_IN_ORDER), 2):
        expected = weighted_spearman(ranks_from_scores(scores[first]), ranks_from_scores(scores[second]), 2.0)
        assert matrix[i][j] == pytest.approx(expected)
    assert 'role="region" aria-labelledby="score-models-caption-1"' in html
    assert '<caption id="score-models-caption-1">The first 15 of 15 items of the final ranking' in html
    for model in MODELS_IN_ORDER:
        assert f'<th scope="col" class="num">Rank, {SCORE_MODEL_LABELS[model]}</th>' in html
        assert f'<th scope="col" class="num">ρ_w with {SCORE_MODEL_LABELS[model]}</th>' in html


def test_a_study_ranked_per_area_shows_each_area_with_its_own_ranks(staff_client, db):
    study = voted_study(tokens=5, areas=2, ranking_scope=Study.RankingScope.PER_AREA)
    shown = staff_client.get(reverse("scoring:results", args=[study.slug])).context["side_by_side"]
    scores = scores_here(study)
    assert [group["area"] for group in shown["groups"]] == sorted(study.areas.values_list("name", flat=True))
    for group in shown["groups"]:
        assert group["items"] == 10
        for position in range(len(MODELS_IN_ORDER)):
            ranks = sorted(row["cells"][position]["rank"] for row in group["rows"])
            assert ranks == list(range(1, len(group["rows"]) + 1))  # each model's rank within the area
        area_items = np.array(
            study.items.filter(area__name=group["area"]).order_by("index").values_list("index", flat=True)
        )
        entry = group["agreement"]["models"][1]
        expected = weighted_spearman(
            ranks_from_scores(scores[entry["model"]][area_items]),
            ranks_from_scores(scores[BORDA][area_items]),
            2.0,
        )
        assert entry["reference"]["rho_w"] == pytest.approx(expected)


def test_a_large_study_is_fitted_in_the_background_and_shown_once_ready(
    staff_client, finished_study, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_SYNC_ITEMS", 10)  # 15 items: above the bound
    cache.clear()  # the card's task at the finish fitted the models already: start without them
    with django_capture_on_commit_callbacks(execute=True):
        first = staff_client.get(reverse("scoring:results", args=[finished_study.slug]))
    assert first.context["side_by_side"] == {"pending": True, "recheck": 5}
    html = first.content.decode()
    assert "being fitted to this study's votes in the background" in html
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in html
    assert 'data-recheck-after="5"' in html
    later = staff_client.get(reverse("scoring:results", args=[finished_study.slug]))
    assert later.context["side_by_side"]["pending"] is False
    assert [model["name"] for model in later.context["side_by_side"]["models"]] == list(MODELS_IN_ORDER)


def test_a_running_study_has_no_side_by_side_yet(staff_client, db):
    study = make_study(seed=4)
    response = staff_client.get(reverse("scoring:results", args=[study.slug]))
    assert response.context["side_by_side"] is None
    assert "Once the study has finished, every score model ranks" in response.content.decode()


def test_a_study_without_votes_exports_every_models_columns_empty(staff_client, db):
    study = make_study(seed=5, start=False)
    response = staff_client.get(reverse("scoring:export-dataset-csv", args=[study.slug]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 15
    assert {
        row[f"{kind}_{model}"] for row in rows for model in MODELS_IN_ORDER for kind in ("score", "rank")
    } == {""}


def test_above_the_bound_only_the_studys_own_model_is_fitted_and_the_card_says_so(
    staff_client, finished_study, monkeypatch
):
    monkeypatch.setattr(side_by_side, "SIDE_BY_SIDE_MAX_ITEMS", 10)  # 15 items: above the bound
    cache.clear()
    StudyFigure.objects.filter(study=finished_study).delete()
    fitted = side_by_side.study_model_scores(study=finished_study)
    assert fitted.fitted == (BORDA,)
    response = staff_client.get(reverse("scoring:export-dataset-csv", args=[finished_study.slug]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["rank_borda"] for row in rows] == [row["final_rank"] for row in rows]
    others = [model for model in MODELS_IN_ORDER if model != BORDA]
    assert {row[f"score_{model}"] for row in rows for model in others} == {""}
    text = card_markdown(instrument_card(study=finished_study))
    assert f"Not fitted: {', '.join(others)}." in text


def test_a_study_ranked_by_bradley_terry_names_it_everywhere_and_puts_it_first(staff_client, db):
    study = voted_study(score_model=BRADLEY_TERRY)
    label = SCORE_MODEL_LABELS[BRADLEY_TERRY]
    order = (BRADLEY_TERRY, *(model for model in SCORE_MODELS if model != BRADLEY_TERRY))
    text = card_markdown(instrument_card(study=study))
    assert f"ranking made by the score model {label} (bradley_terry)." in text.splitlines()[2]
    assert f"- **Score model (made the ranking)**: {label} (bradley_terry)" in text
    figure = instrument_card(study=study)["score_models"]
    assert (figure["reference"], figure["models"]) == (BRADLEY_TERRY, list(order))
    own = figure["table"]["models"][0]
    assert own["reference"]["rho_w"] == pytest.approx(1.0) and own["top"]["shared"] == 10
    response = staff_client.get(reverse("scoring:export-dataset-csv", args=[study.slug]))
    reader = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    rows = list(reader)
    assert reader.fieldnames[-2 * len(order) :] == [
        f"{kind}_{model}" for model in order for kind in ("score", "rank")
    ]
    assert [row["rank_bradley_terry"] for row in rows] == [row["final_rank"] for row in rows]
    assert np.array_equal(
        [float(row["score_bradley_terry"]) for row in rows],
        scores_here(study)[BRADLEY_TERRY][[int(row["index"]) for row in rows]],
    )
