"""The area of every vote's two items in the votes export, and each item's rank within its area in the
API (items and results), on two-area studies run by a disagreeing crowd (Lombardo et al. §2.1-2.2)."""

import csv
import io

import pytest
from django.urls import reverse

from collection.models import Study, Vote
from metrics.instrument import instrument_card
from tests.collection.test_schema import generated_schema
from tests.collection.test_strata import two_area_study
from tests.factories import annotators, disagreeing_crowd, vote_until

pytestmark = pytest.mark.django_db


def finished(scope: str) -> Study:
    study = two_area_study(scope=scope)
    vote_until(study, voters=annotators(study, 8), choose=disagreeing_crowd(study, seed=3))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


def csv_rows(client, name: str, study: Study) -> list[dict]:
    response = client.get(reverse(name, args=[study.slug]))
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_votes_export_names_the_area_of_both_items_and_flags_votes_across_areas(admin_client):
    study = finished("joint")  # a joint ranking: some comparisons set animals against tools

    rows = csv_rows(admin_client, "scoring:export-votes-csv", study)

    areas = {
        pk: (left, right)
        for pk, left, right in Vote.objects.filter(ballot__study=study).values_list(
            "pk", "left_item__area__name", "right_item__area__name"
        )
    }
    assert [(row["left_area"], row["right_area"]) for row in rows] == [
        areas[int(row["vote_id"])] for row in rows
    ]
    assert {row["same_area"] for row in rows} == {"0", "1"}
    assert all((row["same_area"] == "1") == (row["left_area"] == row["right_area"]) for row in rows)
    crossing = [row for row in rows if row["same_area"] == "0"]
    assert len(crossing) == instrument_card(study=study)["areas"]["cross_area_votes"] > 0
    assert {frozenset((row["left_area"], row["right_area"])) for row in crossing} == {
        frozenset(("animals", "tools"))
    }


def test_a_per_area_study_has_no_vote_across_areas_in_its_export(admin_client):
    study = finished("per_area")

    rows = csv_rows(admin_client, "scoring:export-votes-csv", study)

    assert len(rows) == 90  # 54 comparisons of animals, 36 of tools
    assert {row["same_area"] for row in rows} == {"1"}
    assert sorted(row["left_area"] for row in rows) == ["animals"] * 54 + ["tools"] * 36


@pytest.mark.parametrize("scope", ["joint", "per_area"])
def test_the_api_gives_each_item_its_rank_within_its_area_as_the_dataset_does(admin_client, scope):
    study = finished(scope)

    listed = admin_client.get(f"/api/studies/{study.slug}/items/?page_size=100").json()["results"]
    results = admin_client.get(f"/api/studies/{study.slug}/results/").json()
    dataset = csv_rows(admin_client, "scoring:export-dataset-csv", study)

    # By hand: within each area, the items in order of final rank are 1, 2, … N_a.
    expected = {}
    for area in ("animals", "tools"):
        in_area = sorted(
            (item for item in listed if item["area"] == area), key=lambda item: item["final_rank"]
        )
        expected.update({item["id"]: position for position, item in enumerate(in_area, start=1)})
    assert len(listed) == 25
    assert {item["id"]: item["area_rank"] for item in listed} == expected
    assert {row["item"]: row["area_rank"] for row in results} == expected
    assert {int(row["item_id"]): int(row["area_rank"]) for row in dataset} == expected
    assert sorted(expected.values()) == sorted([*range(1, 16), *range(1, 11)])


def test_items_of_a_running_study_have_no_area_rank_yet(admin_client):
    study = two_area_study(scope="per_area")

    listed = admin_client.get(f"/api/studies/{study.slug}/items/?page_size=100").json()["results"]

    assert {item["area_rank"] for item in listed} == {None}


def test_the_schema_documents_the_rank_within_the_area(tmp_path):
    schema = generated_schema(tmp_path)["components"]["schemas"]

    item, result = schema["Item"]["properties"]["area_rank"], schema["Result"]["properties"]["area_rank"]
    assert (item["type"], item["nullable"], item["readOnly"]) == ("integer", True, True)
    assert item["description"].startswith("The final rank within the item's semantic area")
    assert result["type"] == "integer" and "rank within the item's semantic area" in result["description"]
