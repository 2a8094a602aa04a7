"""The simulation of a study's plan per semantic area (Lombardo et al. §2.1-2.2, §4.1): a study ranked per
area gets one simulation per area on the area's own plan, a joint study the simulation of its one plan."""

import re

import numpy as np
import pytest
from django.urls import reverse

from scoring.admin import prediction_tables
from scoring.models import SimulationRun
from scoring.services import simulation_request, simulation_run, simulation_run_by_area
from scoring.simulation import SimulationConfig, simulate_repetition, summarize, underlying_similarity
from tests.collection.test_strata import two_area_study

# animals: 15 items, 15 → 8 → 4, 30 + 16 + 8 = 54 comparisons; tools: 10 items, 10 → 5 → 3,
# 20 + 10 + 6 = 36 comparisons (n_b = 3, α = 0.5, M = 4; round(2.5) = 3, halves up).
AREA_CONFIGS = {
    "animals": SimulationConfig(item_count=15, ballot_count=3, keep_fraction=0.5, appearances=4),
    "tools": SimulationConfig(item_count=10, ballot_count=3, keep_fraction=0.5, appearances=4),
}


def by_hand(config: SimulationConfig, seeds) -> dict:
    """The pure simulator on one plan, one repetition per seed, summarised as Table 2."""
    similarity = underlying_similarity(config.distribution, config.item_count)
    return summarize([simulate_repetition(config, similarity, seed) for seed in seeds])


def panel_tables(html: str) -> dict:
    """{area or None: {metric: (uniform cell, adaptive cell)}} of the prediction tables shown."""
    tables = {}
    for area, body in re.findall(
        r'<table class="yardstick-numbers yardstick-predictions"(?: data-area="([^"]*)")?>(.*?)</table>',
        html,
        re.S,
    ):
        tables[area or None] = {
            metric: (uniform, adaptive)
            for metric, uniform, adaptive in re.findall(
                r'<tr data-metric="(\w+)"><th scope="row">[^<]+</th><td>([^<]+)</td><td>([^<]+)</td></tr>',
                body,
            )
        }
    return tables


def cells(summary: dict) -> dict:
    return {
        metric: tuple(
            f"{summary[protocol][metric]['mean']:.3f} ± {summary[protocol][metric]['sd']:.3f}"
            for protocol in ("uniform", "adaptive")
        )
        for metric in ("rho_w", "tau_w", "rho", "tau")
    }


@pytest.mark.django_db(transaction=True)
def test_a_per_area_study_is_simulated_area_by_area_with_the_seeds_of_each_area(admin_client):
    study = two_area_study(scope="per_area", start=False)

    response = admin_client.post(
        reverse("admin:collection_study_simulate", args=[study.pk]),
        {"distribution": "exponential", "repetitions": "3"},
    )

    assert response.status_code == 302
    run = SimulationRun.objects.get(study=study)
    assert (run.status, run.done, run.repetitions, run.seed) == ("done", 3, 3, 0)
    result = run.result
    assert [area["area"] for area in result["areas"]] == ["animals", "tools"]  # by name
    for position, area in enumerate(result["areas"]):
        # Area i, repetition r: SeedSequence(seed).spawn(area count)[i].spawn(repetitions)[r].
        seeds = np.random.SeedSequence(0).spawn(2)[position].spawn(3)
        expected = by_hand(AREA_CONFIGS[area["area"]], seeds)
        assert (area["uniform"], area["adaptive"]) == (expected["uniform"], expected["adaptive"])
    plans = {
        area["area"]: (area["parameters"]["ballot_sizes"], area["parameters"]["total_comparisons"])
        for area in result["areas"]
    }
    assert plans == {"animals": ([15, 8, 4], 54), "tools": ([10, 5, 3], 36)}
    assert (result["parameters"]["item_count"], result["parameters"]["total_comparisons"]) == (25, 90)
    assert "uniform" not in result  # no joint ranking to predict

    panel = admin_client.get(reverse("admin:collection_study_simulations", args=[study.pk])).content.decode()
    assert "25 items in 2 areas, each simulated on its own plan" in panel
    assert panel_tables(panel) == {area["area"]: cells(area) for area in result["areas"]}
    assert "Area “tools” (10 items, 36 comparisons): predicted agreement with its true ranking" in panel
    run_page = admin_client.get(reverse("admin:scoring_simulationrun_change", args=[run.pk])).content.decode()
    assert panel_tables(run_page) == panel_tables(panel)


@pytest.mark.django_db(transaction=True)
def test_a_joint_study_is_still_simulated_as_one_plan_over_all_its_items(admin_client):
    study = two_area_study(scope="joint", start=False)  # 25 items: 25 → 13 → 7, 50 + 26 + 14 = 90

    run = simulation_request(study=study, repetitions=3)

    run.refresh_from_db()
    joint = SimulationConfig(item_count=25, ballot_count=3, keep_fraction=0.5, appearances=4)
    assert run.parameters == joint.as_dict()
    expected = by_hand(joint, np.random.SeedSequence(0).spawn(3))
    assert set(run.result) == {"parameters", "uniform", "adaptive", "seconds"}
    assert (run.result["uniform"], run.result["adaptive"]) == (expected["uniform"], expected["adaptive"])
    reference = simulation_run(config=joint, repetitions=3, seed=0)
    assert run.result["parameters"] == reference["parameters"]
    assert (run.result["parameters"]["ballot_sizes"], run.result["parameters"]["total_comparisons"]) == (
        [25, 13, 7],
        90,
    )
    panel = admin_client.get(reverse("admin:collection_study_simulations", args=[study.pk])).content.decode()
    assert panel_tables(panel) == {None: cells(run.result)}
    assert "exponential, 3 repetitions,\n      25 items, requested" in panel


def test_the_progress_counts_repetitions_over_every_area():
    calls = []

    simulation_run_by_area(
        configs=list(AREA_CONFIGS.items()),
        repetitions=3,
        seed=5,
        progress=lambda done, total: calls.append((done, total)),
    )

    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_an_areas_figures_do_not_depend_on_the_areas_after_it():
    both = simulation_run_by_area(configs=list(AREA_CONFIGS.items()), repetitions=4, seed=7)
    alone = simulation_run_by_area(configs=[("animals", AREA_CONFIGS["animals"])], repetitions=4, seed=7)

    assert both["areas"][0]["adaptive"] == alone["areas"][0]["adaptive"]
    assert both["areas"][0]["uniform"] == alone["areas"][0]["uniform"]
    assert both["areas"][1]["adaptive"] != both["areas"][0]["adaptive"]


def test_the_paper_similarities_are_refused_for_areas_of_another_size(admin_client):
    study = two_area_study(scope="per_area", start=False)

    response = admin_client.post(
        reverse("admin:collection_study_simulate", args=[study.pk]),
        {"distribution": "file", "repetitions": "2"},
    )

    assert response.status_code == 400
    assert (
        "The shipped embedding similarities describe 990 items; ranked per area, each area is simulated on its "
        "own and these have other sizes: &#x27;animals&#x27; (15), &#x27;tools&#x27; (10)"
    ) in response.content.decode()
    assert not SimulationRun.objects.exists()


def test_a_per_area_study_too_small_for_its_plan_cannot_be_simulated(admin_client):
    study = two_area_study(scope="per_area", start=False)
    study.ballot_count = 4  # tools: 10 → 5 → 3 → 2; animals 15 → 8 → 4 → 2; five ballots would not fit
    study.save()
    study.ballot_count = 5
    study.save()

    response = admin_client.post(
        reverse("admin:collection_study_simulate", args=[study.pk]),
        {"distribution": "exponential", "repetitions": "2"},
    )

    assert response.status_code == 400
    assert "area &#x27;tools&#x27; (10 items): ballot 5 would hold 1 item" in response.content.decode()
    assert not SimulationRun.objects.exists()


def test_a_result_without_areas_is_one_table():
    assert prediction_tables(None) == []
    summary = {"mean": 0.5, "sd": None}
    tables = prediction_tables(
        {
            protocol: dict.fromkeys(("rho_w", "tau_w", "rho", "tau"), summary)
            for protocol in ("uniform", "adaptive")
        }
    )
    assert [(table["area"], [row["uniform"] for row in table["rows"]]) for table in tables] == [
        (None, ["0.500"] * 4)
    ]
