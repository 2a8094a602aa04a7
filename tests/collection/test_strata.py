"""Semantic areas as strata (Lombardo et al. §2.1-2.2), end to end on a two-area study: the choice in the
admin, the plan panel, per-area ballots run by a disagreeing crowd through the real services, the close,
the results, the exports, the instrument card and the leaderboard per area."""

import csv
import io
import json

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from scipy import stats

from collection.lifecycle import study_start
from collection.models import Comparison, ItemScore, Study
from collection.pools import items_generate, tokens_import
from collection.studies import study_create, study_update
from common.errors import ServiceError
from metrics import services as metric_services
from metrics.instrument import instrument_card
from metrics.leaderboard import leaderboard_for
from tests.collection.test_admin import study_form_data
from tests.factories import annotators, disagreeing_crowd, tokens_csv, vote_until

pytestmark = pytest.mark.django_db

# animals: 6 tokens, 15 items; tools: 5 tokens, 10 items. n_b = 3, α = 0.5, M = 4:
# animals 15 → 8 → 4 items, tools 10 → 5 → 3 (round(2.5) = 3, halves up).
AREAS = {"animals": 6, "tools": 5}
SIZES = {"animals": (15, 8, 4), "tools": (10, 5, 3)}


def two_area_study(*, scope: str, start: bool = True, seed: int = 11, areas=None) -> Study:
    study = study_create(
        values={
            "name": f"Two areas, {scope}",
            "slug": f"two-areas-{scope}",
            "ranking_scope": scope,
            "ballot_count": 3,
            "keep_fraction": 0.5,
            "appearances": 4,
            "votes_per_annotator_per_ballot": None,
            "seed": seed,
        }
    )
    tokens_import(study=study, data=tokens_csv(areas or AREAS))
    items_generate(study=study)
    if start:
        study_start(study=study)
        study.refresh_from_db()
    return study


def area_of_items(study) -> dict[int, str]:
    return dict(study.items.values_list("id", "area__name"))


def test_the_admin_creates_a_per_area_study_and_its_plan_panel_says_so(admin_client):
    response = admin_client.post(
        reverse("admin:collection_study_add"),
        study_form_data(ranking_scope="per_area", ballot_count="3", appearances="4"),
    )
    assert response.status_code == 302
    study = Study.objects.get(slug="relatedness")
    assert study.ranking_scope == "per_area"
    tokens_import(study=study, data=tokens_csv(AREAS))
    items_generate(study=study)
    page = admin_client.get(reverse("admin:collection_study_change", args=[study.pk])).content.decode()
    assert "One ranking per semantic area (2 areas): each ballot compares items of the same area only" in page
    assert (
        '<th scope="row">animals</th><td>15</td><td>15 → 8 → 4</td><td>54</td>' in page
    )  # 4·15/2 + 4·8/2 + 4·4/2
    assert '<th scope="row">tools</th><td>10</td><td>10 → 5 → 3</td><td>36</td>' in page  # 20 + 10 + ⌈4·3/2⌉


def test_a_joint_study_says_how_many_comparisons_cross_areas(admin_client):
    study = two_area_study(scope="joint", start=False)
    study.appearances = 20
    study.save()
    page = admin_client.get(reverse("admin:collection_study_change", args=[study.pk])).content.decode()
    # 25 items: 300 pairs, 105 + 45 within an area: 50% cross. Ballot 1: 20·25/2 = 250 comparisons.
    assert (
        "One joint ranking of the 2 semantic areas: annotators will compare pairs from different areas "
        "(a pair of animals and tools, say). About 50% of ballot 1&#x27;s 250 comparisons (≈ 125) are expected"
    ) in page


def test_per_area_is_refused_while_an_area_is_too_small_for_the_plan():
    study = two_area_study(scope="joint", start=False, areas={"animals": 6, "tools": 3})  # tools: 3 items
    with pytest.raises(ServiceError) as error:
        study_update(study=study, changes={"ranking_scope": "per_area"}, channel="api")
    assert "area 'tools' (3 items): ballot 3 would hold 1 item" in error.value.message
    study_update(study=study, changes={"ranking_scope": "per_area", "ballot_count": 2}, channel="api")


def test_the_scope_cannot_change_once_the_study_runs():
    study = two_area_study(scope="joint")
    with pytest.raises(ServiceError, match="ranking_scope cannot change any more"):
        study_update(study=study, changes={"ranking_scope": "per_area"}, channel="api")


@pytest.fixture
def per_area_run():
    study = two_area_study(scope="per_area")
    vote_until(study, voters=annotators(study, 8), choose=disagreeing_crowd(study, seed=3))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


def test_per_area_ballots_compare_within_areas_and_keep_each_areas_top(per_area_run):
    study = per_area_run
    area = area_of_items(study)
    comparisons = Comparison.objects.filter(ballot__study=study).values_list("left_item", "right_item")
    assert comparisons.count() == (30 + 20) + (16 + 10) + (8 + 6)
    assert all(area[left] == area[right] for left, right in comparisons)
    for ballot in study.ballots.order_by("number"):
        in_ballot = [area[pk] for pk in ballot.items.values_list("pk", flat=True)]
        k = ballot.number
        assert (in_ballot.count("animals"), in_ballot.count("tools")) == (
            SIZES["animals"][k - 1],
            SIZES["tools"][k - 1],
        )
        scores = ItemScore.objects.filter(ballot=ballot).values_list("item", "score", "survived", "win_ratio")
        for name in AREAS:
            rows = sorted(((-s, pk, kept) for pk, s, kept, _ in scores if area[pk] == name))
            kept = [row[2] for row in rows]
            if k < 3:  # the area's own top round(α·N_a(k)) by ȳ(k), ties to the lower index (ids follow it)
                assert kept == [True] * SIZES[name][k] + [False] * (SIZES[name][k - 1] - SIZES[name][k])
        if k > 1:
            # b(k) of each area from its own items (Eq. 6), as stored.
            previous = dict(
                ItemScore.objects.filter(ballot__study=study, ballot__number=k - 1).values_list(
                    "item", "score"
                )
            )
            for name in AREAS:
                x = np.array([w for pk, _, _, w in scores if area[pk] == name and w is not None])
                y = np.array([previous[pk] for pk, _, _, w in scores if area[pk] == name and w is not None])
                b = ((1 - x) @ (1 - y)) / ((1 - x) @ (1 - x))
                assert ballot.area_rescale_slopes[name] == pytest.approx(b, abs=1e-12)
            assert ballot.rescale_slope is None


def test_results_exports_card_and_leaderboard_per_area(per_area_run, admin_client):
    study = per_area_run
    page = admin_client.get(reverse("scoring:results", args=[study.slug])).content.decode()
    assert "Final rankings, one per semantic area" in page
    assert "animals: top 15 of 15 items" in page and "tools: top 10 of 10 items" in page

    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    admin_client.get(
                        reverse("scoring:export-dataset-csv", args=[study.slug])
                    ).streaming_content
                ).decode()
            )
        )
    )
    for name, size in (("animals", 15), ("tools", 10)):
        area_rows = sorted((int(r["final_rank"]), int(r["area_rank"])) for r in rows if r["area"] == name)
        # The area's rank follows the study-wide order restricted to the area: 1 … N_a.
        assert [area_rank for _, area_rank in area_rows] == list(range(1, size + 1))
    data = json.loads(
        b"".join(
            admin_client.get(reverse("scoring:export-dataset-json", args=[study.slug])).streaming_content
        )
    )
    assert data["study"]["ranking_scope"] == "per_area"
    assert data["study"]["plan"]["areas"]["tools"]["ballot_sizes"] == [10, 5, 3]
    assert set(data["study"]["ballots"][1]["area_rescale_slopes"]) == {"animals", "tools"}

    card = instrument_card(study=study)
    assert card["procedure"]["ranking_scope"] == "per_area"
    areas = {row["name"]: row for row in card["areas"]["by_area"]}
    assert card["areas"]["cross_area_votes"] == 0
    assert (areas["animals"]["items"], areas["tools"]["items"]) == (15, 10)
    assert areas["animals"]["votes"] + areas["tools"]["votes"] == card["areas"]["votes"] == 90
    assert areas["tools"]["scored"] == 10 and areas["tools"]["mean_sd"] > 0
    # How fragile each area's top is, on its own chain of ballots: the area's votes only.
    fragility = card["fragility"]["entries"]
    assert [(entry["area"], entry["k"]) for entry in fragility] == [("animals", 1), ("tools", 1)]
    assert [entry["total"] for entry in fragility] == [areas["animals"]["votes"], areas["tools"]["votes"]]
    card_page = admin_client.get(reverse("metrics:card", args=[study.slug])).content.decode()
    assert "changes the top item of tools" in card_page
    assert "Votes within the area" in card_page and "one ranking per semantic area" in card_page

    # A model that knows animals and guesses tools.
    rng = np.random.default_rng(0)
    final = dict(study.items.values_list("pk", "final_score"))
    area = area_of_items(study)
    model = {pk: (score if area[pk] == "animals" else rng.random()) for pk, score in final.items()}
    owner = User.objects.create_user("owner")
    metric_services.submission_create(
        study=study,
        owner=owner,
        model_name="zoo",
        source_format="json",
        data=[{"item": pk, "score": score} for pk, score in model.items()],
    )
    board = leaderboard_for(study=study, metric="rho_w")
    by_area = {entry["area"]: entry for entry in board["rows"][0]["areas"]}
    pks = {name: [pk for pk in final if area[pk] == name] for name in AREAS}
    for name in AREAS:
        human = [final[pk] for pk in pks[name]]
        guess = [model[pk] for pk in pks[name]]
        assert by_area[name]["rho"]["value"] == pytest.approx(stats.spearmanr(guess, human)[0], abs=1e-12)
        assert by_area[name]["tau"]["value"] == pytest.approx(stats.kendalltau(guess, human)[0], abs=1e-12)
        low, high = by_area[name]["rho_w"]["interval"]
        assert low <= by_area[name]["rho_w"]["value"] <= high
    assert by_area["animals"]["rho"]["value"] == pytest.approx(1.0)
    api = admin_client.get(f"/api/studies/{study.slug}/leaderboard/?metric=rho_w").json()
    assert [a["area"] for a in api["rows"][0]["areas"]] == ["animals", "tools"]
    page = admin_client.get(reverse("metrics:leaderboard", args=[study.slug])).content.decode()
    assert 'id="leaderboard-areas"' in page and 'data-area="tools"' in page


def test_a_joint_two_area_study_mixes_areas_and_the_card_counts_it():
    study = two_area_study(scope="joint")
    area = area_of_items(study)
    pairs = Comparison.objects.filter(ballot__study=study).values_list("left_item", "right_item")
    crossing = sum(area[left] != area[right] for left, right in pairs)
    assert crossing > 0
    vote_until(study, voters=annotators(study, 8), choose=disagreeing_crowd(study, seed=3))
    card = instrument_card(study=study)
    assert card["areas"]["ranking_scope"] == "joint" and card["areas"]["cross_area_votes"] > 0
