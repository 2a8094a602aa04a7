"""A figure that is undefined is reported as undefined, with its reason, and stored as null: a model that
gives every item the same score (as numbers or as strings), one that is constant on the hidden test part
only or within one semantic area only. Never a 500, never NaN in the database; ties are figures like any
other (scipy's Spearman ρ and Kendall τ_b, and Eq. 7-9 by brute force)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from scipy import stats

from collection import arrays
from collection.models import Study
from collection.parts import hidden_mask
from common.numbers import FiniteJSONEncoder
from metrics.correlation import ranks_from_scores
from metrics.leaderboard import leaderboard_for
from metrics.models import Standing, Submission
from tests.metrics.conftest import study_voted_to_the_end
from tests.metrics.test_api import final_scores, json_rows, owner_client, random_scores, submit_json
from tests.metrics.test_hidden_part_metrics import brute_weighted
from tests.metrics.test_pages import logged_in, page

pytestmark = pytest.mark.django_db

COEFFICIENTS = ("rho_w", "tau_w", "rho", "tau")
EVERY_SCORE_THE_SAME = {
    "rho_w": "ρ_w is undefined: every score is the same, so the scores rank nothing",
    "tau_w": "τ_w is undefined: every score is the same, so the scores rank nothing",
    "rho": "ρ is undefined: every score is the same, so the scores rank nothing",
    "tau": "τ is undefined: every score is the same, so the scores rank nothing",
}
ALL_FOUR_SENTENCE = "ρ_w, τ_w, ρ and τ are undefined: every score is the same, so the scores rank nothing"


def refuse_constant(constant):
    raise AssertionError(f"{constant} in stored JSON")


def stored_json(table: str, column: str) -> list:
    """Every value of a JSON column as the database holds it (text), parsed strictly: NaN fails."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT CAST({column} AS TEXT) FROM {table}")  # noqa: S608 (fixed names)
        return [json.loads(text, parse_constant=refuse_constant) for (text,) in cursor.fetchall()]


def constant_rows(study: Study, score) -> list[dict]:
    return [{"item": pk, "score": score} for pk in study.items.values_list("pk", flat=True)]


def test_the_encoder_of_stored_figures_writes_nan_and_infinity_as_null_at_any_depth():
    figures = {"value": np.float64("nan"), "interval": (1.0, float("inf")), "rows": [{"sd": -float("inf")}]}

    text = json.dumps(figures, cls=FiniteJSONEncoder)

    assert json.loads(text, parse_constant=refuse_constant) == {
        "value": None,
        "interval": [1.0, None],
        "rows": [{"sd": None}],
    }


# --- a constant model --------------------------------------------------------------------------------


@pytest.mark.parametrize("score", [0.5, "0.5", -3, "1e-300"], ids=["number", "string", "integer", "tiny"])
def test_a_constant_model_is_evaluated_with_every_coefficient_undefined_and_why(study, django_user_model, score):
    owner = owner_client(django_user_model)

    response = submit_json(owner, study, "constant", constant_rows(study, score))

    assert response.status_code == 201, response.content
    detail = owner.get(response.json()["url"]).json()
    assert detail["status"] == "done"
    evaluation = detail["evaluation"]
    for name in COEFFICIENTS:
        entry = evaluation[name]
        assert (entry["value"], entry["interval"], entry["standard_error"], entry["p_value"]) == (
            None,
            None,
            None,
            None,
        )
        assert entry["undefined"] == EVERY_SCORE_THE_SAME[name]
        assert -1.0 <= entry["chance_mean"] <= 1.0  # the chance level is the study's, defined all the same
    assert evaluation["covered"] == 28
    # The retrieval measures are defined: every ordering of the tied items counts (metrics.ir).
    assert 0.0 <= evaluation["retrieval"]["ndcg_at_k"] <= 1.0


def test_a_defined_coefficient_carries_no_reason(study, django_user_model):
    owner = owner_client(django_user_model)

    url = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()["url"]

    evaluation = owner.get(url).json()["evaluation"]
    assert all("undefined" not in evaluation[name] for name in COEFFICIENTS)
    assert evaluation["tau"]["value"] == pytest.approx(1.0)


def test_the_stored_figures_of_a_constant_model_hold_null_never_nan(study, django_user_model):
    owner = owner_client(django_user_model)

    submit_json(owner, study, "constant", constant_rows(study, "0.5"))

    (result,) = stored_json("metrics_evaluation", "result")
    assert result["rho_w"]["value"] is None
    assert result["replicates"]["tau_w"] == [None] * result["replicate_count"]
    (replicates,) = stored_json("metrics_standing", "replicates")
    assert set(map(tuple, replicates.values())) == {(None,) * result["replicate_count"]}
    (coefficients,) = stored_json("metrics_standing", "coefficients")
    assert coefficients["tau"]["undefined"] == EVERY_SCORE_THE_SAME["tau"]


def test_the_evaluation_page_says_which_figures_are_undefined_and_why(study, django_user_model):
    client = logged_in(django_user_model)
    scores = "item,score\n" + "".join(f"{pk},0.5\n" for pk in study.items.values_list("pk", flat=True))
    upload = SimpleUploadedFile("scores.csv", scores.encode(), content_type="text/csv")

    response = client.post(
        f"/models/studies/{study.slug}/submit/", {"model_name": "constant", "file": upload}, follow=True
    )

    assert response.status_code == 200
    shown = page(response)
    assert shown.text["submission-status"] == "done"
    values = {row[0]: row[1] for row in shown.tables["coefficients"][1:]}
    assert set(values.values()) == {"undefined"}
    assert shown.text["undefined-figures"] == f"{ALL_FOUR_SENTENCE}."  # a symbol starts it: no capital


# --- ties ----------------------------------------------------------------------------------------------


def test_tied_scores_give_scipys_spearman_and_kendall_tau_b_and_eq_8_9_by_brute_force(study, django_user_model):
    owner = owner_client(django_user_model)
    human = final_scores(study)
    # Many ties: the human scores rounded to one decimal (a handful of distinct values), two of them equal.
    tied = {item: round(score, 1) for item, score in human.items()}
    assert len(set(tied.values())) < len(tied) / 2

    evaluation = owner.get(submit_json(owner, study, "tied", json_rows(tied)).json()["url"]).json()["evaluation"]

    items = list(human)
    model = np.array([tied[item] for item in items])
    people = np.array([human[item] for item in items])
    assert evaluation["rho"]["value"] == pytest.approx(stats.spearmanr(model, people).statistic, abs=1e-12)
    assert evaluation["tau"]["value"] == pytest.approx(
        stats.kendalltau(model, people, variant="b").statistic, abs=1e-12
    )
    rho_w, tau_w = brute_weighted(ranks_from_scores(model), ranks_from_scores(people), 2.0)
    assert (evaluation["rho_w"]["value"], evaluation["tau_w"]["value"]) == pytest.approx((rho_w, tau_w), abs=1e-12)


def test_two_owners_with_the_same_scores_share_the_first_rank_and_cannot_be_told_apart(study, django_user_model):
    alice, bob = owner_client(django_user_model, "alice"), owner_client(django_user_model, "bob")
    scores = json_rows(final_scores(study))
    for client in (alice, bob):
        assert submit_json(client, study, "copy", scores).status_code == 201
    assert submit_json(bob, study, "random", json_rows(random_scores(study))).status_code == 201

    board = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "tau_w"}).json()

    ranks = {row["name"]: (row["rank"], row["indistinguishable_from"]) for row in board["rows"]}
    assert ranks["copy (alice)"] == (1, ["copy (bob)"])
    assert ranks["copy (bob)"] == (1, ["copy (alice)"])
    assert ranks["random (bob)"][0] == 3


# --- the leaderboard -----------------------------------------------------------------------------------


def test_the_leaderboard_lists_an_undefined_model_unranked_with_why_and_ranks_the_others_as_before(
    study, django_user_model
):
    alice, bob = owner_client(django_user_model, "alice"), owner_client(django_user_model, "bob")
    submit_json(alice, study, "truth", json_rows(final_scores(study)))
    submit_json(bob, study, "random", json_rows(random_scores(study)))
    before = {row["name"]: row for row in leaderboard_for(study=study, metric="rho_w")["rows"]}

    assert submit_json(bob, study, "constant", constant_rows(study, "0.5")).status_code == 201
    response = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "rho_w"})

    assert response.status_code == 200
    rows = response.json()["rows"]
    assert [row["name"] for row in rows] == ["truth (alice)", "random (bob)", "constant (bob)"]
    constant = rows[-1]
    assert (constant["rank"], constant["rank_range"], constant["value"], constant["interval"]) == (
        None,
        None,
        None,
        None,
    )
    assert constant["interval_adjusted"] is None and constant["indistinguishable_from"] == []
    assert constant["metrics"]["rho_w"]["undefined"] == EVERY_SCORE_THE_SAME["rho_w"]
    for row in rows[:2]:
        assert (row["rank"], row["rank_range"], row["indistinguishable_from"]) == (
            before[row["name"]]["rank"],
            before[row["name"]]["rank_range"],
            before[row["name"]]["indistinguishable_from"],
        )
    csv_rows = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "rho_w", "format": "csv"})
    *_, last = csv.DictReader(io.StringIO(csv_rows.content.decode()))
    assert (last["rank"], last["rank_low"], last["model_name"], last["value"], last["undefined"]) == (
        "",
        "",
        "constant",
        "",
        EVERY_SCORE_THE_SAME["rho_w"],
    )

    board_page = page(Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "rho_w"}))
    cells = {row[1].split()[0]: row for row in board_page.tables["leaderboard"][1:]}
    assert (cells["constant"][0], cells["constant"][2]) == ("—", "undefined")
    assert EVERY_SCORE_THE_SAME["rho_w"] in cells["constant"][1]


# --- constant on a part of the items ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def split_study(django_db_setup, django_db_blocker):
    """Two areas of 6 tokens (30 items), 40% hidden, voted to the end by a crowd that disagrees."""
    yield from study_voted_to_the_end(
        django_db_blocker,
        voters=7,
        crowd_seed=8,
        tokens=6,
        areas=2,
        ballot_count=2,
        appearances=6,
        seed=21,
        allow_ties=True,
        hidden_share=0.4,
    )


def split_rows(study: Study, scores: np.ndarray) -> list[dict]:
    ids = arrays.item_ids(study_id=study.pk)
    return [{"item": int(ids[index]), "score": float(scores[index])} for index in range(ids.size)]


def test_a_model_constant_on_the_hidden_test_part_only_is_undefined_there_and_defined_for_its_owner(
    split_study, django_user_model
):
    owner = owner_client(django_user_model)
    human = arrays.final_scores(study_id=split_study.pk, item_count=30)[0]
    scores = np.where(hidden_mask(split_study), 0.25, human)

    response = submit_json(owner, split_study, "fits the public part", split_rows(split_study, scores))

    assert response.status_code == 201, response.content
    detail = owner.get(response.json()["url"]).json()
    assert detail["evaluation"]["part"] == "development"
    assert detail["evaluation"]["tau"]["value"] == pytest.approx(1.0)
    assert {name: detail["test_part"][name]["undefined"] for name in COEFFICIENTS} == EVERY_SCORE_THE_SAME
    row = Client().get(f"/api/studies/{split_study.slug}/leaderboard/").json()["rows"][0]
    assert (row["rank"], row["value"], row["metrics"]["tau_w"]["undefined"]) == (
        None,
        None,
        EVERY_SCORE_THE_SAME["tau_w"],
    )
    assert Standing.objects.get(submission_id=detail["id"], weight_offset=2.0).part == "test"


def test_a_model_constant_within_one_area_is_undefined_in_that_area_only(split_study, django_user_model):
    owner = owner_client(django_user_model)
    human = arrays.final_scores(study_id=split_study.pk, item_count=30)[0]
    area = arrays.item_areas(study_id=split_study.pk)
    first_area = area == area.min()
    scores = np.where(first_area, 0.5, human)

    response = submit_json(owner, split_study, "flat in one area", split_rows(split_study, scores))

    assert response.status_code == 201, response.content
    assert Submission.objects.get().status == "done"
    board = Client().get(f"/api/studies/{split_study.slug}/leaderboard/").json()
    (row,) = board["rows"]
    flat, varied = sorted(row["areas"], key=lambda entry: entry["area"])
    assert flat["area"] == "Area0"
    assert {name: flat[name]["undefined"] for name in COEFFICIENTS} == EVERY_SCORE_THE_SAME
    assert all(flat[name]["value"] is None for name in COEFFICIENTS)
    assert varied["tau"]["value"] == pytest.approx(1.0) and "undefined" not in varied["tau"]
    board_page = page(Client().get(f"/models/studies/{split_study.slug}/leaderboard/"))
    area_cells = {row[1].split()[0]: row for row in board_page.tables["leaderboard-areas"][1:]}
    assert area_cells["Area0"][3:] == ["undefined"] * 4
    assert ALL_FOUR_SENTENCE in area_cells["Area0"][1]
