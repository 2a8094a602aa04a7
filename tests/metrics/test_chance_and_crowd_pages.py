"""Figures at or below chance said in words on the leaderboard and the evaluation (issue 34 §4.9), and a
study's simulated votes counted apart on the leaderboard and the models page (§4.8)."""

from __future__ import annotations

import pytest
from django.test import Client

from collection.models import Annotator, Study
from metrics.evaluation import chance_sentence, chance_verdict
from metrics.leaderboard import leaderboard_for
from metrics.models import Submission
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until
from tests.metrics.test_pages import logged_in, page, random_csv, truth_csv, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model) -> Client:
    return logged_in(django_user_model)


def reversed_csv(study: Study) -> str:
    """The study's final ranking upside down: a model that orders the items against the people."""
    return "item,score\n" + "".join(
        f"{pk},{-score}\n" for pk, score in study.items.values_list("pk", "final_score")
    )


def test_the_leaderboard_says_which_models_are_at_or_below_chance(study, django_user_model):
    alice, bob = logged_in(django_user_model, "alice"), logged_in(django_user_model, "bob")
    assert upload(alice, study, "truth", truth_csv(study)).status_code == 302
    assert upload(bob, study, "upside-down", reversed_csv(study)).status_code == 302
    assert upload(bob, study, "noise", random_csv(study, seed=3)).status_code == 302
    board = {row["model_name"]: row for row in leaderboard_for(study=study, metric="tau_w")["rows"]}
    tau_w = {name: row["metrics"]["tau_w"] for name, row in board.items()}
    assert chance_verdict(tau_w["truth"]) == "above"
    assert chance_verdict(tau_w["upside-down"]) == "below"

    found = page(Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "tau_w"}))
    cells = {row[1].split(" ")[0]: row[1] for row in found.tables["leaderboard"][1:]}
    assert cells["truth"] == "truth"
    assert cells["upside-down"].endswith(f"below chance (p = {tau_w['upside-down']['p_value']:.3f})")
    verdict = chance_verdict(tau_w["noise"])
    if verdict == "above":
        assert cells["noise"] == "noise"
    else:
        assert cells["noise"].endswith(f"{verdict} chance (p = {tau_w['noise']['p_value']:.3f})")
    said = found.text["chance-notice"]
    assert f"upside-down (bob): {chance_sentence('tau_w', tau_w['upside-down'])}." in said
    assert "truth (alice)" not in said
    assert "above chance when p ≤ 0.05, below chance when p ≥ 0.95" in found.text["board-explain"]


def test_a_board_whose_best_model_is_not_above_chance_says_so_first(study, django_user_model):
    bob = logged_in(django_user_model, "bob")
    assert upload(bob, study, "upside-down", reversed_csv(study)).status_code == 302
    found = page(Client().get(f"/models/studies/{study.slug}/leaderboard/", {"metric": "rho_w"}))
    row = leaderboard_for(study=study, metric="rho_w")["rows"][0]
    assert found.text["chance-notice"].startswith(
        "No model on this board is above chance on ρ_w (weighted Spearman): none agrees with the people's "
        "ranking more than a random order of the items would."
    )
    assert chance_sentence("rho_w", row["metrics"]["rho_w"]) in found.text["chance-notice"]


def test_the_leaderboard_api_gives_each_coefficient_its_verdict(study, django_user_model):
    bob = logged_in(django_user_model, "bob")
    assert upload(bob, study, "upside-down", reversed_csv(study)).status_code == 302
    body = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "tau_w"}).json()
    (row,) = body["rows"]
    assert {name: entry["chance"] for name, entry in row["metrics"].items()} == {
        name: chance_verdict(entry) for name, entry in row["metrics"].items()
    }
    assert row["metrics"]["tau_w"]["chance"] == "below"


def test_the_evaluation_page_says_each_figure_at_or_below_chance(study, owner):
    upload(owner, study, "upside-down", reversed_csv(study))
    upload(owner, study, "truth", truth_csv(study))
    flipped, truth = Submission.objects.order_by("pk")
    found = page(owner.get(f"/models/submissions/{flipped.pk}/"))
    result = flipped.evaluations.get(weight_offset=2.0).result
    assert [chance_verdict(result[name]) for name in ("rho_w", "tau_w", "rho", "tau")] == ["below"] * 4
    assert found.text["chance-figures"] == " ".join(
        f"{chance_sentence(name, result[name])}." for name in ("rho_w", "tau_w", "rho", "tau")
    )
    assert "chance-figures" not in page(owner.get(f"/models/submissions/{truth.pk}/")).text


def test_the_leaderboard_and_the_models_page_count_simulated_votes_apart(django_user_model):
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=4)
    people = annotators(study, 1, prefix="prolific-")
    vote_until(study, voters=people, choose=disagreeing_crowd(study), max_votes=9)
    machines = [
        Annotator.objects.create(
            study=study, participant_id=f"sim-{i}", simulated=True, consented_at=study.started_at
        )
        for i in range(5)
    ]
    vote_until(study, voters=machines, choose=disagreeing_crowd(study, seed=7))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    said = "168 votes: 9 by 1 person, 159 by 5 simulated annotators"
    assert upload(logged_in(django_user_model), study, "truth", truth_csv(study)).status_code == 302
    board = page(Client().get(f"/models/studies/{study.slug}/leaderboard/"))
    assert board.text["crowd"] == (
        f"Simulated votes: the ranking that the models are measured against comes from {said}. Simulated "
        "annotators are not people: this board measures the models against a simulation, not against people's "
        "judgement."
    )
    assert board.text["annotators-explain"].startswith(
        "Like Tables 2 and 3 of Welty et al.: for each of the 6 annotators (5 of them simulated)"
    )
    models = page(Client().get("/models/"))
    row = next(row for row in models.tables["studies"][1:] if row[0] == study.name)
    assert row[2] == said
    body = Client().get(f"/api/studies/{study.slug}/leaderboard/").json()
    assert body["crowd"] == {
        "people": {"annotators": 1, "votes": 9},
        "simulated": {"annotators": 5, "votes": 159},
    }


def test_a_board_of_peoples_votes_counts_them_without_a_notice(study):
    board = page(Client().get(f"/models/studies/{study.slug}/leaderboard/"))
    assert (
        board.text["crowd"]
        == "The people's ranking that the models are measured against comes from 168 votes by 6 annotators."
    )


def test_the_evaluation_page_says_it_of_the_hidden_test_part_too(owner):
    from metrics import services

    study = make_study(tokens=6, areas=2, ballot_count=2, appearances=6, seed=21, hidden_share=0.4)
    vote_until(study, voters=annotators(study, 7), choose=disagreeing_crowd(study, seed=8))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    assert upload(owner, study, "upside-down", reversed_csv(study)).status_code == 302
    submission = Submission.objects.get()
    test_part = services.test_part_summary(submission=submission)
    assert chance_verdict(test_part["rho"]) == "below"
    found = page(owner.get(f"/models/submissions/{submission.pk}/"))
    assert found.text["test-part-chance"] == " ".join(
        f"{chance_sentence(name, test_part[name])}."
        for name in ("rho_w", "tau_w", "rho", "tau")
        if chance_verdict(test_part[name]) in ("at", "below")
    )
