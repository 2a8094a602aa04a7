"""A study voted to the end by a crowd that disagrees (noisy, careless and left-biased annotators): the
results page, the exports, the instrument card and the leaderboard all work, and their figures match an
independent recount of the votes."""

import csv
import io
from collections import defaultdict

import numpy as np
import pytest
from django.test import Client

from collection.models import Study
from metrics import services as metrics_services
from metrics.instrument import instrument_card
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd_study():
    study = make_study(
        tokens=7, ballot_count=3, appearances=6, seed=11
    )  # 21 items; the last ballot repeats pairs
    vote_until(study, voters=annotators(study, 10), choose=disagreeing_crowd(study, seed=11))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def staff(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("researcher", password="x", is_staff=True))
    return client


def read_csv(response) -> list[dict]:
    text = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_crowd_really_disagrees(crowd_study):
    votes = list(
        crowd_study.ballots.order_by().values_list(
            "votes__pair_low", "votes__pair_high", "votes__left_item__index", "votes__choice"
        )
    )
    outcomes = defaultdict(set)
    for low, high, left_index, choice in votes:
        winner_low = (choice == "left") == (left_index == low)
        outcomes[(low, high)].add(winner_low)
    assert sum(len(seen) == 2 for seen in outcomes.values()) >= 3  # pairs judged both ways
    assert {choice for *_, choice in votes} == {"left", "right"}


def test_the_dataset_export_recounts_the_votes_export(crowd_study, staff):
    votes = read_csv(staff.get(f"/studies/{crowd_study.slug}/export/votes.csv"))
    dataset = read_csv(staff.get(f"/studies/{crowd_study.slug}/export/dataset.csv"))
    index_of = dict(crowd_study.items.values_list("pk", "index"))

    wins = defaultdict(float)
    appearances = defaultdict(int)
    for vote in votes:
        left, right = index_of[int(vote["left_item_id"])], index_of[int(vote["right_item_id"])]
        key = int(vote["ballot"])
        appearances[(key, left)] += 1
        appearances[(key, right)] += 1
        wins[(key, left if vote["choice"] == "left" else right)] += 1.0

    for row in dataset:
        index = int(row["index"])
        for ballot in (1, 2, 3):
            cell = row[f"x_{ballot}"]
            if (ballot, index) in appearances:
                expected = wins[(ballot, index)] / appearances[(ballot, index)]  # Eq. 1, no ties here
                assert float(cell) == pytest.approx(expected, abs=1e-12), (index, ballot)
            else:
                assert cell == ""


def test_the_results_page_tells_the_careless_and_the_biased_annotators_apart(crowd_study, staff):
    from scoring.selectors import annotator_stats

    response = staff.get(f"/studies/{crowd_study.slug}/results/")
    stats = {row.label: row for row in annotator_stats(study=crowd_study)}
    # disagreeing_crowd: the 4th and 8th annotator to vote click at random, the 5th and 10th favour the left.
    careless = [stats["participant p3"], stats["participant p7"]]
    biased = [stats["participant p4"], stats["participant p9"]]
    honest = [row for label, row in stats.items() if row not in careless + biased]

    assert response.status_code == 200
    assert "participant p3" in response.content.decode()
    assert max(row.ranking_agreement for row in careless) < np.mean([row.ranking_agreement for row in honest])
    assert min(row.left_choice_rate for row in biased) > max(row.left_choice_rate for row in honest)


def test_the_card_computes_krippendorff_alpha_on_pairs_judged_both_ways(crowd_study):
    card = instrument_card(study=crowd_study)
    alpha = card["repeatability"]["krippendorff_alpha"]

    assert alpha is not None
    assert alpha["pairs"] >= 2
    assert -1.0 <= alpha["alpha"] < 1.0  # a crowd that disagrees is not perfectly reliable


@pytest.mark.parametrize("suffix", ["", ".md", ".json"])
def test_the_card_page_and_downloads_answer_for_anyone(crowd_study, suffix):
    path = f"/models/studies/{crowd_study.slug}/card{'/' if not suffix else suffix}"

    assert Client().get(path).status_code == 200


def test_the_leaderboard_ranks_models_of_a_disagreeing_crowd(crowd_study, django_user_model):
    owner = django_user_model.objects.create_user("owner", password="pw")
    truth = dict(crowd_study.items.values_list("pk", "final_score"))
    rng = np.random.default_rng(3)
    for name, noise in [("close", 0.01), ("noisy", 0.3)]:
        rows = [{"item": pk, "score": float(score + rng.normal(0, noise))} for pk, score in truth.items()]
        metrics_services.submission_create(
            study=crowd_study, owner=owner, model_name=name, data=rows, source_format="json"
        )

    board = Client().get(f"/api/studies/{crowd_study.slug}/leaderboard/")
    rows = read_csv(Client().get(f"/api/studies/{crowd_study.slug}/leaderboard/", {"format": "csv"}))

    assert board.status_code == 200
    assert [row["model_name"] for row in board.json()["rows"]] == ["close", "noisy"]
    assert [row["model_name"] for row in rows] == ["close", "noisy"]
